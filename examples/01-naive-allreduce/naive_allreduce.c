/* Lesson 01: the naive AllReduce (docs/lessons/01-naive-allreduce.md).
 *
 * Every rank sends its whole buffer to rank 0, rank 0 adds them one peer at a time and sends the
 * result back to each peer in turn. Run: build/bin/examples/01-naive-allreduce/naive_allreduce [ranks] [MiB]
 * It selects the stage with BATON_ALLREDUCE_ALGO=naive (read when the communicators are created). */
#include <string.h>

#include "../common.h"

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 4;
  size_t mib = argc > 2 ? (size_t)atol(argv[2]) : 16;
  size_t count = mib * 1024 * 1024 / sizeof(float);
  setenv("BATON_ALLREDUCE_ALGO", "naive", 0);
  int wrong = 0;
  double t = measureAllReduce(n, count, &wrong);
  double bytes = (double)count * sizeof(float);
  /* busbw = algbw * 2(n-1)/n: what each link would carry in an ideal ring (lesson 02). */
  printf("%s allreduce: %d ranks, %zu MiB: %.2f ms, algbw %.2f GB/s, busbw %.2f GB/s, %s\n",
         getenv("BATON_ALLREDUCE_ALGO"), n, mib, t * 1e3, bytes / t / 1e9, bytes / t / 1e9 * 2 * (n - 1) / n,
         wrong ? "WRONG" : "result OK");
  /* Rank 0 moved 2(n-1) full buffers; every other rank moved 2. */
  printf("bytes through rank 0: %.0f MiB, through each other rank: %.0f MiB\n", 2.0 * (n - 1) * mib, 2.0 * mib);
  return wrong != 0;
}

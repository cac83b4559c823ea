/* Lesson 01: the naive AllReduce (docs/lessons/01-naive-allreduce.md).
 *
 * Every rank sends its whole buffer to rank 0, rank 0 adds them one peer at a time and sends the
 * result back to each peer in turn. Run: build/bin/examples/01-naive-allreduce/naive_allreduce [ranks] [MiB]
 * It selects the stage with BATON_ALLREDUCE_ALGO=naive (read when the communicators are created), and
 * counts the bytes through each rank from the BATON_TRACE timeline it writes for itself: every FIFO
 * step the library's primitives moved, in and out (traceBytesByRank, ../common.h). */
#include <string.h>
#include <unistd.h>

#include "../common.h"

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 4;
  size_t mib = argc > 2 ? (size_t)atol(argv[2]) : 16;
  size_t count = mib * 1024 * 1024 / sizeof(float);
  setenv("BATON_ALLREDUCE_ALGO", "naive", 0);
  char trace[] = "/tmp/baton-lesson01.XXXXXX";
  int fd = mkstemp(trace);
  if (fd < 0) return 1;
  close(fd);
  setenv("BATON_TRACE", trace, 1);
  int wrong = 0;
  double t = measureAllReduce(n, count, &wrong); /* 1 warm-up + 5 timed AllReduces, then destroy: traced */
  double* through = (double*)calloc(n, sizeof *through);
  int counted = traceBytesByRank(trace, n, through);
  unlink(trace);
  double bytes = (double)count * sizeof(float);
  /* busbw = algbw * 2(n-1)/n: what each link would carry in an ideal ring (lesson 02). */
  printf("%s allreduce: %d ranks, %zu MiB: %.2f ms, algbw %.2f GB/s, busbw %.2f GB/s, %s\n",
         getenv("BATON_ALLREDUCE_ALGO"), n, mib, t * 1e3, bytes / t / 1e9, bytes / t / 1e9 * 2 * (n - 1) / n,
         wrong ? "WRONG" : "result OK");
  /* Per AllReduce (the trace holds 6), in MiB: rank 0 should show 2(n-1) buffers, every other rank 2. */
  double lo = 1e300, hi = 0;
  for (int r = 0; r < n; ++r) through[r] /= 6.0 * 1024 * 1024;
  for (int r = 1; r < n; ++r) lo = through[r] < lo ? through[r] : lo, hi = through[r] > hi ? through[r] : hi;
  if (!counted) printf("bytes through each rank: not counted (the trace %s could not be read)\n", trace);
  else if (lo == hi || n < 2)
    printf("bytes through rank 0: %.0f MiB, through each other rank: %.0f MiB\n", through[0], n < 2 ? 0.0 : lo);
  else printf("bytes through rank 0: %.0f MiB, through the other ranks: %.0f-%.0f MiB\n", through[0], lo, hi);
  free(through);
  return wrong != 0 || !counted;
}

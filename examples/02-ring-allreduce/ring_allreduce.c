/* Lesson 02: the ring AllReduce = reduce-scatter + all-gather (docs/lessons/02-ring-allreduce.md).
 *
 * Runs the same AllReduce twice on fresh communicators: the naive stage, then the ring, and prints
 * both with their bus bandwidth. Run: build/bin/examples/02-ring-allreduce/ring_allreduce [ranks] [MiB] */
#include <string.h>

#include "../common.h"

static double run(const char* algo, int n, size_t count, int* wrong) {
  setenv("BATON_ALLREDUCE_ALGO", algo, 1); /* read when the communicators are created */
  return measureAllReduce(n, count, wrong);
}

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 4;
  size_t mib = argc > 2 ? (size_t)atol(argv[2]) : 16;
  size_t count = mib * 1024 * 1024 / sizeof(float);
  double bytes = (double)count * sizeof(float);
  int bad = 0;
  const char* algos[2] = {"naive", "ring"};
  double t[2];
  for (int a = 0; a < 2; ++a) {
    int wrong = 0;
    t[a] = run(algos[a], n, count, &wrong);
    bad |= wrong;
    printf("%-5s allreduce: %d ranks, %zu MiB: %8.2f ms  algbw %6.2f GB/s  busbw %6.2f GB/s  %s\n", algos[a], n, mib,
           t[a] * 1e3, bytes / t[a] / 1e9, bytes / t[a] / 1e9 * 2 * (n - 1) / n, wrong ? "WRONG" : "result OK");
  }
  /* In the ring every rank sends 2(n-1)/n of the buffer; in the naive stage rank 0 sends (n-1). */
  printf("per-rank bytes sent: ring %.2f MiB each; naive %.2f MiB at rank 0\n", 2.0 * (n - 1) / n * mib,
         (double)(n - 1) * mib);
  printf("ring speed-up over naive: %.2fx\n", t[0] / t[1]);
  return bad != 0;
}

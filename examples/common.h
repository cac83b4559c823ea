/* Helpers shared by the lesson programs: error checks, a clock, and "N ranks driven by one thread". */
#ifndef BATON_EXAMPLES_COMMON_H
#define BATON_EXAMPLES_COMMON_H

#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHECK(call)                                                                                        \
  do {                                                                                                     \
    ncclResult_t res_ = (call);                                                                            \
    if (res_ != ncclSuccess) {                                                                             \
      fprintf(stderr, "%s:%d: %s failed: %s\n  %s\n", __FILE__, __LINE__, #call, ncclGetErrorString(res_), \
              ncclGetLastError(NULL));                                                                     \
      exit(1);                                                                                             \
    }                                                                                                      \
  } while (0)

static inline double nowSec(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Integer-valued floats: sums are exact, so results can be compared with ==. */
static inline float inputValue(int rank, size_t i) { return (float)(rank + 1) + (float)(i % 4); }

/* Time `iters` AllReduces of `count` floats on `n` ranks (one thread drives them all in a group);
 * returns seconds per operation and checks every element of every rank. */
static inline double timeAllReduce(ncclComm_t* comms, int n, float** in, float** out, size_t count, int iters,
                                   int* wrong) {
  double t0 = 0;
  for (int it = -1; it < iters; ++it) { /* iteration -1 is the warm-up */
    if (it == 0) t0 = nowSec();
    CHECK(ncclGroupStart());
    for (int r = 0; r < n; ++r) CHECK(ncclAllReduce(in[r], out[r], count, ncclFloat, ncclSum, comms[r], NULL));
    CHECK(ncclGroupEnd());
  }
  double per = (nowSec() - t0) / iters;
  float base = (float)n * (n + 1) / 2;
  *wrong = 0;
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i)
      if (out[r][i] != base + (float)n * (float)(i % 4)) ++*wrong;
  return per;
}

/* Create n ranks as threads of this process (ncclCommInitAll reads BATON_* / NCCL_* settings
 * now), time an AllReduce of `count` floats on them, check it, and tear everything down. */
static inline double measureAllReduce(int n, size_t count, int* wrong) {
  ncclComm_t* comms = (ncclComm_t*)calloc(n, sizeof *comms); /* casts: C++ examples include this too */
  CHECK(ncclCommInitAll(comms, n, NULL));
  float** in = (float**)calloc(n, sizeof *in);
  float** out = (float**)calloc(n, sizeof *out);
  for (int r = 0; r < n; ++r) {
    in[r] = (float*)malloc(count * sizeof(float));
    out[r] = (float*)malloc(count * sizeof(float));
    for (size_t i = 0; i < count; ++i) in[r][i] = inputValue(r, i);
  }
  double t = timeAllReduce(comms, n, in, out, count, 5, wrong);
  for (int r = 0; r < n; ++r) {
    CHECK(ncclCommDestroy(comms[r]));
    free(in[r]);
    free(out[r]);
  }
  free(in);
  free(out);
  free(comms);
  return t;
}

#endif

/* Helpers shared by the lesson programs: error checks, a clock, and "N ranks driven by one thread". */
#ifndef BATON_EXAMPLES_COMMON_H
#define BATON_EXAMPLES_COMMON_H

#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* Bytes that crossed each rank's FIFOs, in plus out, as the library's primitives recorded them in
 * the BATON_TRACE timeline at `path` (written when the communicators are destroyed): one event per
 * FIFO step, {"name":"recvReduceCopy","cat":"step",...,"pid":R+1,...,"bytes":B}; a step whose
 * primitive receives ("recv...") brought B bytes in, one that sends ("...send") took B out. Fills
 * bytes[0..n) and returns 1, or 0 if the file cannot be read. */
static inline int traceBytesByRank(const char* path, int n, double* bytes) {
  FILE* f = fopen(path, "r");
  if (!f) return 0;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* text = (char*)malloc((size_t)size + 1);
  size_t got = fread(text, 1, (size_t)size, f);
  fclose(f);
  text[got] = 0;
  for (int r = 0; r < n; ++r) bytes[r] = 0;
  for (char* at = strstr(text, "{\"name\":\""); at; at = strstr(at + 1, "{\"name\":\"")) {
    char* end = strchr(at, '\n'); /* one event per line: search this one only */
    if (end) *end = 0;
    int step = strstr(at, "\"cat\":\"step\"") != NULL;
    if (end) *end = '\n';
    if (!step) continue;
    char name[64] = "";
    sscanf(at, "{\"name\":\"%63[^\"]", name);
    char* pid = strstr(at, "\"pid\":");
    char* b = strstr(at, "\"bytes\":");
    if (!pid || !b) continue;
    int rank = atoi(pid + 6) - 1;
    double stepBytes = strtod(b + 8, NULL);
    int in = strstr(name, "recv") != NULL, out = strstr(name, "send") != NULL || strstr(name, "Send") != NULL;
    if (rank >= 0 && rank < n) bytes[rank] += stepBytes * (in + out);
  }
  free(text);
  return 1;
}

#endif

/* Lesson 03: pipelining through an 8-slot FIFO (docs/lessons/03-pipelining.md).
 *
 * Broadcasts a buffer down the ring from rank 0 with the FIFO allowed 1 slot in flight
 * (stop-and-wait: the sender waits for the receiver to empty each slot) and with all 8 slots,
 * then with small and large steps (NCCL_BUFFSIZE). Each setting is read at communicator creation.
 * Run: build/bin/examples/03-pipelining/pipelining [ranks] [MiB] */
#include <string.h>

#include "../common.h"

static double run(const char* depth, const char* buffsize, int n, size_t count, int* wrong) {
  setenv("BATON_FIFO_DEPTH", depth, 1);
  setenv("NCCL_BUFFSIZE", buffsize, 1);
  setenv("NCCL_MAX_NCHANNELS", "1", 1); /* one channel, so the pipeline is the only parallelism */
  ncclComm_t* comms = calloc(n, sizeof *comms);
  CHECK(ncclCommInitAll(comms, n, NULL));
  char** buf = calloc(n, sizeof *buf);
  for (int r = 0; r < n; ++r) {
    buf[r] = malloc(count);
    memset(buf[r], r == 0 ? 7 : 0, count);
  }
  double t0 = 0;
  const int iters = 5;
  for (int it = -1; it < iters; ++it) {
    if (it == 0) t0 = nowSec();
    CHECK(ncclGroupStart());
    for (int r = 0; r < n; ++r) CHECK(ncclBroadcast(buf[r], buf[r], count, ncclUint8, 0, comms[r], NULL));
    CHECK(ncclGroupEnd());
  }
  double t = (nowSec() - t0) / iters;
  *wrong = 0;
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i) *wrong += buf[r][i] != 7;
  for (int r = 0; r < n; ++r) {
    CHECK(ncclCommDestroy(comms[r]));
    free(buf[r]);
  }
  free(buf);
  free(comms);
  unsetenv("BATON_FIFO_DEPTH");
  unsetenv("NCCL_BUFFSIZE");
  unsetenv("NCCL_MAX_NCHANNELS");
  return t;
}

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 4;
  size_t mib = argc > 2 ? (size_t)atol(argv[2]) : 32;
  size_t count = mib << 20;
  struct {
    const char *depth, *buffsize, *what;
  } cases[] = {
      {"1", "4194304", "stop-and-wait (1 slot in flight), 512 KiB steps"},
      {"8", "4194304", "pipelined (8 slots in flight),    512 KiB steps"},
      {"8", "262144", "pipelined (8 slots in flight),     32 KiB steps"},
  };
  int bad = 0;
  printf("broadcast of %zu MiB along a ring of %d ranks, 1 channel:\n", mib, n);
  for (int c = 0; c < 3; ++c) {
    int wrong = 0;
    double t = run(cases[c].depth, cases[c].buffsize, n, count, &wrong);
    bad |= wrong;
    printf("  %s: %8.2f ms  busbw %6.2f GB/s  %s\n", cases[c].what, t * 1e3, (double)count / t / 1e9,
           wrong ? "WRONG" : "result OK");
  }
  return bad != 0;
}

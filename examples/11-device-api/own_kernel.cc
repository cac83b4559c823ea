// Lesson 11: a kernel of your own on baton's device-side API (docs/lessons/11-async-tensor-parallelism.md).
//
// Computes y = x_0 + x_1 + ... + x_{n-1}, every rank's vector summed on every rank, the way a fused
// kernel moves data: no collective call. Each rank (a process forked from this one) stores its x
// into its own symmetric window, bumps a signal on every peer, waits for every peer's signal, and
// loads and sums the peers' vectors in place through their window pointers. A barrier ends each
// round, so no rank overwrites its window while a peer still reads it. Then the same sum with
// ncclAllReduce, timed beside it.
//
// Memory-ordering contract: the stores of x into this rank's window are released by the
// batonSignalAdd that follows them (a release fetch-add on the peer's signal) and acquired by the
// peer's batonWaitSignal before it loads them; batonLsaBarrier orders every load of round i before
// any store of round i+1.
//
// Run: build/bin/examples/11-device-api/own_kernel [ranks] [floats]
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

#include "../common.h"
#include "baton/device.h"

namespace {
int runRank(const ncclUniqueId* id, int rank, int n, size_t count) {
  ncclComm_t comm;
  CHECK(ncclCommInitRank(&comm, n, *id, rank));
  batonDevCommRequirements reqs = {1, 1, 0};  // one signal ("a peer's x is in its window"), one barrier
  batonDevComm dev;
  CHECK(batonDevCommCreate(comm, &reqs, &dev));
  void* mem = nullptr;
  ncclWindow_t win = nullptr;
  // A symmetric window's size is a multiple of NCCL_WIN_REQUIRED_ALIGNMENT.
  const size_t bytes = (count * sizeof(float) + NCCL_WIN_REQUIRED_ALIGNMENT - 1) / NCCL_WIN_REQUIRED_ALIGNMENT *
                       NCCL_WIN_REQUIRED_ALIGNMENT;
  CHECK(ncclMemAlloc(&mem, bytes));
  CHECK(ncclCommWindowRegister(comm, mem, bytes, &win, NCCL_WIN_COLL_SYMMETRIC));
  batonDevWindow w;
  CHECK(batonDevWindowGet(&dev, win, &w));  // every peer's window, mapped into this process

  std::vector<float> x(count), y(count), ref(count);
  for (size_t i = 0; i < count; ++i) x[i] = inputValue(rank, i);
  int wrong = 0;
  const int rounds = 20;
  double t0 = 0;
  for (int round = -1; round < rounds; ++round) {  // round -1 warms up
    if (round == 0) t0 = nowSec();
    // The "kernel": publish, signal, wait, load in place, sum; then the barrier.
    float* mine = (float*)batonLsaPointer(w, 0, dev.lsaRank);
    for (size_t i = 0; i < count; ++i) mine[i] = x[i];
    for (int p = 0; p < dev.lsaSize; ++p)
      if (p != dev.lsaRank) batonSignalAdd(dev, p, 0, 1);
    // Signals only grow: after round r, every peer has added 1 per round.
    if (!batonWaitSignal(dev, 0, (uint64_t)(round + 2) * (dev.lsaSize - 1))) {
      fprintf(stderr, "rank %d: a peer never signalled (aborted or BATON_WAIT_TIMEOUT)\n", rank);
      return 1;
    }
    for (size_t i = 0; i < count; ++i) y[i] = 0;
    for (int p = 0; p < dev.lsaSize; ++p) {
      const float* theirs = (const float*)batonLsaPointer(w, 0, p);
      for (size_t i = 0; i < count; ++i) y[i] += theirs[i];
    }
    if (!batonLsaBarrier(dev, 0)) return 1;
  }
  const double own = (nowSec() - t0) / rounds;
  float* send = (float*)malloc(count * sizeof(float));
  float* recv = (float*)malloc(count * sizeof(float));
  for (size_t i = 0; i < count; ++i) send[i] = x[i];
  for (int round = -1; round < rounds; ++round) {
    if (round == 0) t0 = nowSec();
    CHECK(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, NULL));
  }
  const double coll = (nowSec() - t0) / rounds;
  for (size_t i = 0; i < count; ++i) {
    float want = 0;
    for (int r = 0; r < n; ++r) want += inputValue(r, i);
    if (y[i] != want || recv[i] != want) wrong = 1;
  }
  if (rank == 0)
    printf("%d ranks (LSA team of %d), %zu floats: own kernel %8.1f us, ncclAllReduce %8.1f us   %s\n", n, dev.lsaSize,
           count, own * 1e6, coll * 1e6, wrong ? "WRONG" : "result OK");
  free(send);
  free(recv);
  CHECK(ncclCommWindowDeregister(comm, win));
  CHECK(batonDevCommDestroy(comm, &dev));  // collective: waits until no peer signals any more
  CHECK(ncclMemFree(mem));
  CHECK(ncclCommDestroy(comm));
  return wrong;
}
}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 2;
  const size_t count = argc > 2 ? (size_t)atol(argv[2]) : 65536;
  if (n < 1 || n > BATON_DEV_MAX_LSA || count < 1) {
    fprintf(stderr, "usage: %s [ranks 1..%d] [floats >= 1]\n", argv[0], BATON_DEV_MAX_LSA);
    return 2;
  }
  ncclUniqueId id;
  CHECK(ncclGetUniqueId(&id));
  fflush(stdout);
  std::vector<pid_t> kids;
  for (int r = 1; r < n; ++r) {
    const pid_t pid = fork();
    if (pid == 0) _exit(runRank(&id, r, n, count));
    kids.push_back(pid);
  }
  int bad = runRank(&id, 0, n, count);
  for (pid_t pid : kids) {
    int status = 0;
    waitpid(pid, &status, 0);
    bad |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  }
  return bad;
}

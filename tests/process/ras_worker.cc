// One rank of the RAS checks (tests/fault/ras_check.sh, lesson 14), a process per rank:
//
//   ras_worker --stop FILE [--seconds S] [--count C] [--pause-us P] [--idle-rank R --idle-at K]
//              [--shrink 1] [--tag T]
//
// Every rank runs AllReduce after AllReduce (sum of C int32, 4096 by default, every result checked
// exactly), P microseconds apart (2000; tools/scripts/bench-ras.sh runs them back to back), and prints "rank R:
// running" after the tenth. Element 0 of each carries a vote to stop: a rank that sees FILE (or has run S seconds, 120
// by default) votes, and every rank stops after the AllReduce that carried the vote, so none is left waiting for the
// others.
// --idle-rank R --idle-at K: rank R stops calling collectives before its K-th AllReduce and stays in
// "user code" until FILE appears (the others wait in AllReduce K for it: what RAS must show).
// A rank whose AllReduce fails (a peer was killed) prints "rank R: AllReduce #k failed: <error>",
// keeps its communicator, so the RAS service can still be asked about it, until FILE appears, then
// aborts it and exits 3; with --shrink 1 the survivors agree on the failed ranks, shrink
// (ncclCommShrink), print "rank R: shrank to N ranks" and go on, keeping the old communicator (RAS
// reports both). A rank that stops normally destroys its communicator and exits 0.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "baton/launch.h"
#include "baton/membership.h"
#include "nccl.h"

namespace {

std::string stop;
double seconds = 120;
size_t count = 4096;
int idleRank = -1;
long idleAt = -1;
long pauseUs = 2000;
bool shrink = false;

bool exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

void waitFor(const std::string& path, double seconds) {
  const auto t0 = std::chrono::steady_clock::now();
  while (!exists(path) && std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < seconds)
    usleep(20000);
}

enum { kStopped, kFailed, kIdle, kWrong };

// AllReduces on `comm` until a rank votes to stop (kStopped), one fails (kFailed), this rank is
// the idle one (kIdle, once FILE appears) or a result is wrong (kWrong).
int run(ncclComm_t comm, int rank, int n, std::chrono::steady_clock::time_point t0) {
  std::vector<int32_t> buf(count);
  for (long k = 0;; ++k) {
    if (rank == idleRank && k == idleAt) {
      printf("rank %d: stays in user code before AllReduce #%ld\n", rank, k);
      waitFor(stop, seconds);
      return kIdle;
    }
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    buf[0] = exists(stop) || elapsed > seconds;
    for (size_t i = 1; i < count; ++i) buf[i] = rank + (int32_t)(i % 1000);
    ncclResult_t res = ncclAllReduce(buf.data(), buf.data(), count, ncclInt32, ncclSum, comm, nullptr);
    if (res == ncclSuccess) res = ncclCommGetAsyncError(comm, &res) == ncclSuccess ? res : ncclInternalError;
    if (res != ncclSuccess) {
      printf("rank %d: AllReduce #%ld failed: %s\n", rank, k, ncclGetLastError(comm));
      return kFailed;
    }
    for (size_t i = 1; i < count; ++i) {
      const int32_t want = n * (int32_t)(i % 1000) + n * (n - 1) / 2;
      if (buf[i] != want) {
        printf("rank %d: AllReduce #%ld: element %zu is %d, expected %d\n", rank, k, i, buf[i], want);
        return kWrong;
      }
    }
    if (k == 10) printf("rank %d: running on %d ranks\n", rank, n);
    if (buf[0] > 0) {
      printf("rank %d: stopped after %ld AllReduces\n", rank, k + 1);
      return kStopped;
    }
    if (pauseUs > 0) usleep((useconds_t)pauseUs);
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--stop") stop = argv[i + 1];
    else if (k == "--seconds") seconds = atof(argv[i + 1]);
    else if (k == "--count") count = strtoull(argv[i + 1], nullptr, 10);
    else if (k == "--idle-rank") idleRank = atoi(argv[i + 1]);
    else if (k == "--idle-at") idleAt = atol(argv[i + 1]);
    else if (k == "--pause-us") pauseUs = atol(argv[i + 1]);
    else if (k == "--shrink") shrink = atoi(argv[i + 1]) != 0;
    else if (k == "--tag") continue;  // the script's mark, to find its processes
    else {
      fprintf(stderr, "ras_worker: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  if (stop.empty() || count < 2) {
    fprintf(stderr, "ras_worker: --stop FILE is required (and --count at least 2)\n");
    return 2;
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);
  ncclComm_t comm = nullptr;
  if (batonCommInitFromEnv(&comm, nullptr) != ncclSuccess) {
    fprintf(stderr, "init failed: %s\n", ncclGetLastError(nullptr));
    return 2;
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<ncclComm_t> old;  // shrunk parents, kept so that RAS still reports them
  for (;;) {
    int rank = 0, n = 1;
    ncclCommUserRank(comm, &rank);
    ncclCommCount(comm, &n);
    const int res = run(comm, rank, n, t0);
    if (res == kStopped) break;
    if (res == kIdle || res == kWrong) {
      ncclCommAbort(comm);
      return res == kIdle ? 0 : 4;
    }
    if (!shrink) {  // failed: keep the communicator for RAS until told to stop
      waitFor(stop, seconds);
      ncclCommAbort(comm);
      return 3;
    }
    // Failed: agree on the failed ranks with the other survivors and go on without them.
    ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT);
    int failed[64], nFailed = 0;
    ncclComm_t child = nullptr;
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    if (batonCommGetFailedRanks(comm, failed, 64, &nFailed) != ncclSuccess ||
        ncclCommShrink(comm, failed, nFailed, &child, &cfg, NCCL_SHRINK_ABORT) != ncclSuccess) {
      printf("rank %d: shrink failed: %s\n", rank, ncclGetLastError(comm));
      waitFor(stop, seconds);
      return 5;
    }
    old.push_back(comm);
    comm = child;
    ncclCommCount(comm, &n);
    printf("rank %d: shrank to %d ranks\n", rank, n);
  }
  ncclCommDestroy(comm);
  for (ncclComm_t c : old) ncclCommAbort(c);
  return 0;
}

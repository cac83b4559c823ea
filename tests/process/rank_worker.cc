// One rank of a multi-process correctness run, started by baton-run:
//
//   build/bin/baton-run -n N build/tests/rank_worker [--quick]
//
// Each process reads BATON_RANK / BATON_NRANKS, gets the communicator id from ncclGetUniqueId
// (NCCL_COMM_ID, set by baton-run, makes every rank's id name the same root), joins with
// ncclCommInitRank and runs the exact-data checks of coll_check.cc. Prints "rank R pid P" first,
// "rank R: N checks passed" at the end, and exits non-zero on any mismatch or error.
// Uses only the public API (nccl.h) and the header-only test data (algorithms/datatypes.h).
#include <malloc.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "collectives/test_memory.h"
#include "nccl.h"
#include "process/coll_check.h"

namespace {

int envInt(const char* name) {
  const char* s = getenv(name);
  if (!s || !*s) {
    fprintf(stderr, "rank_worker: %s is not set (run me under baton-run)\n", name);
    exit(2);
  }
  return atoi(s);
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--quick")) {
      quick = true;
    } else {
      fprintf(stderr, "usage: baton-run -n N %s [--quick]\n", argv[0]);
      return 2;
    }
  }
  const int rank = envInt("BATON_RANK"), nranks = envInt("BATON_NRANKS");
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // reuse freed buffers instead of faulting pages in again
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  printf("rank %d pid %d\n", rank, (int)getpid());
  fflush(stdout);
  const auto t0 = std::chrono::steady_clock::now();
  ncclUniqueId id;
  ncclComm_t comm = nullptr;
  ncclResult_t res = ncclGetUniqueId(&id);
  if (res == ncclSuccess) res = ncclCommInitRank(&comm, nranks, id, rank);
  if (res != ncclSuccess) {
    fprintf(stderr, "rank %d: init failed: %s: %s\n", rank, ncclGetErrorString(res), ncclGetLastError(nullptr));
    return 1;
  }
  res = bt::attachTestMemory({comm});  // BATON_TEST_MEMORY=registered|window (lesson 09)
  if (res != ncclSuccess) {
    fprintf(stderr, "rank %d: test memory: %s: %s\n", rank, ncclGetErrorString(res), ncclGetLastError(comm));
    return 1;
  }
  const bt::CheckReport rep = bt::runProcessChecks(comm, rank, nranks, quick);
  res = bt::detachTestMemory({comm});
  if (res == ncclSuccess) res = ncclCommDestroy(comm);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (rep.failed || res != ncclSuccess) {
    fprintf(stderr, "rank %d: %d checks passed, %d FAILED (first: %s)%s\n", rank, rep.passed, rep.failed,
            rep.firstFailure.c_str(), res != ncclSuccess ? "; ncclCommDestroy failed" : "");
    return 1;
  }
  printf("rank %d: %d checks passed (%.1f s)\n", rank, rep.passed, secs);
  return 0;
}

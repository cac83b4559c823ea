// One rank of a multi-process run of the tensor-parallel fused operations (lesson 11):
//
//   build/bin/baton-run -n N build/tests/fused_worker [--stages naive,decomposed,fused,optimized]
//
// Runs tests/fused/devapi_check.h's device-side API rounds, then tests/fused/tp_check.h's exact checks (forward and
// backward of AllGather+GEMM and GEMM+ReduceScatter) for every stage named, float / half / bfloat16 and a few shapes,
// the stage chosen through BATON_FUSED_STAGE as a user would. Prints "rank R pid P" first, "rank R: N fused checks
// passed, F failed" at the end, and exits non-zero if any check failed.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fused/devapi_check.h"
#include "fused/tp_check.h"
#include "nccl.h"

int main(int argc, char** argv) {
  std::string stages = "naive,decomposed,fused,optimized";
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--stages") && i + 1 < argc) {
      stages = argv[++i];
    } else {
      fprintf(stderr, "usage: baton-run -n N %s [--stages naive,decomposed,fused,optimized]\n", argv[0]);
      return 2;
    }
  }
  const char* r = getenv("BATON_RANK");
  const char* nr = getenv("BATON_NRANKS");
  if (!r || !nr) {
    fprintf(stderr, "fused_worker: BATON_RANK / BATON_NRANKS are not set (run me under baton-run)\n");
    return 2;
  }
  const int rank = atoi(r), nRanks = atoi(nr);
  printf("rank %d pid %d\n", rank, (int)getpid());
  fflush(stdout);
  ncclUniqueId id;
  ncclComm_t comm = nullptr;
  ncclResult_t res = ncclGetUniqueId(&id);
  if (res == ncclSuccess) res = ncclCommInitRank(&comm, nRanks, id, rank);
  if (res != ncclSuccess) {
    fprintf(stderr, "rank %d: init failed: %s: %s\n", rank, ncclGetErrorString(res), ncclGetLastError(nullptr));
    return 1;
  }
  const std::vector<tpcheck::Shape> shapes = {{(size_t)nRanks, 3, 2},
                                              {(size_t)nRanks * 17, 9, 33},
                                              {(size_t)nRanks * 40, 64, 24},
                                              {(size_t)nRanks * 130, 40, 70}};
  int passed = 0, failed = 0;
  // The device-side API first: peer pointers, signals and barriers inside this host's LSA team.
  if (const std::string err = devcheck::checkRank(comm, 200); err.empty()) {
    ++passed;
  } else {
    fprintf(stderr, "rank %d: device API: %s\n", rank, err.c_str());
    ++failed;
  }
  size_t at = 0;
  while (at <= stages.size()) {
    const size_t comma = std::min(stages.find(',', at), stages.size());
    const std::string stage = stages.substr(at, comma - at);
    at = comma + 1;
    setenv("BATON_FUSED_STAGE", stage.c_str(), 1);
    for (ncclDataType_t t : {ncclFloat, ncclFloat16, ncclBfloat16})
      for (const tpcheck::Shape& s : shapes) {
        // A failed check does not stop this rank: its peers are waiting for its next calls.
        const std::string err = tpcheck::checkRank(comm, rank, nRanks, s, t, 7 + passed + failed);
        if (!err.empty()) {
          fprintf(stderr, "rank %d: stage %s, type %d, m=%zu n=%zu k=%zu: %s\n", rank, stage.c_str(), (int)t, s.m, s.n,
                  s.k, err.c_str());
          ++failed;
          continue;
        }
        ++passed;
      }
  }
  ncclCommDestroy(comm);
  printf("rank %d: %d fused checks passed, %d failed\n", rank, passed, failed);
  return failed ? 1 : 0;
}

// An AlltoAll as a list of steps, each a copy or an exchange (a batch of point-to-point sends and
// receives that progress together): the form in which the CUDA backend runs the pairwise and
// Bruck algorithms (algorithms/alltoall.h) and in-place AlltoAlls on device buffers, a step being
// a cudaMemcpyAsync or one launch of the send/recv kernel on the caller's stream
// (src/gpu/gpu_alltoall.cc). Kept apart from the launches so the CPU tests run every rank's steps
// and check the result and the hazards a kernel would hit (tests/unit/alltoall_steps_test.cc).
//
// The steps never read a byte that an exchange of the same step writes, so a kernel that moves a
// step's transfers in any order gives the same result:
//   - direct: the rank's own block as a copy, then every other send and receive in one exchange;
//   - pairwise: the copy, then n-1 exchanges, in round i one send to me+i and one receive from me-i;
//   - Bruck (every block the same size only: ncclAlltoAll): ceil(log2 n) exchanges, in round k one
//     message per slot whose index has bit k set, sent to me+2^k in slot order (the connector keeps
//     their order, so no slot is copied into a packed buffer). A slot starts as its block of
//     sendbuff and is received into recvbuff at its last round (that of its highest set bit);
//     before that into one of two scratch homes, never the one it is being sent from;
//   - in place (sendbuff == recvbuff): a copy of the whole send extent into scratch first, which
//     the algorithm then sends from.
#pragma once

#include <cstddef>
#include <vector>

#include "nccl.h"

namespace baton {

struct AlltoAllStep {
  enum Kind { kCopy, kExchange } kind = kCopy;
  // kCopy: bytes from src to dst (never overlapping).
  char* dst = nullptr;
  const char* src = nullptr;
  size_t bytes = 0;
  // kExchange: this rank's transfers with other ranks; per peer and direction in this order.
  struct Transfer {
    bool isSend;
    int peer;
    char* buf;  // a send's source (only read) or a receive's destination
    size_t bytes;
  };
  std::vector<Transfer> xfers;
};

struct AlltoAllStepsIn {
  int algo = 0;  // kAlltoAllDirect, kAlltoAllPairwise or kAlltoAllBruck
  int rank = 0, nRanks = 1;
  const char* sendbuff = nullptr;
  char* recvbuff = nullptr;
  const size_t* layout = nullptr;  // sendBytes[n], sendOffset[n], recvBytes[n], recvOffset[n] (task.h)
  bool uniform = false;            // every block the same size (Bruck needs it)
};

// Scratch bytes the steps of `in` need (0 for an out-of-place direct or pairwise AlltoAll).
size_t alltoallStepsScratch(const AlltoAllStepsIn& in);
// The steps of `in`, using `scratch` (alltoallStepsScratch bytes). Bruck without uniform blocks is
// ncclInvalidUsage (a rank would have to learn every peer's block sizes first).
ncclResult_t alltoallSteps(const AlltoAllStepsIn& in, char* scratch, std::vector<AlltoAllStep>* out);

}  // namespace baton

// What every fused operation does before it computes (lesson 11): validate its arguments, pick the
// stage (BATON_FUSED_STAGE), and agree with its peers that every rank called the same operation on
// the same shape, so a mismatch is an error on every rank instead of a hang.
#pragma once

#include <cstddef>
#include <initializer_list>

#include "comm.h"
#include "fused/fused_scratch.h"

namespace baton {

enum class FusedStage : int { kNaive = 1, kDecomposed = 2, kFused = 3, kOptimized = 4 };
const char* fusedStageName(FusedStage s);

// One operand or output, for the pointer and overlap checks.
struct FusedBuffer {
  const char* name;
  const void* ptr;
  size_t elems;
  bool output;
  bool optional = false;  // may be NULL (then not computed)
  bool agreed = true;     // optional: every rank must pass NULL alike (it changes what is communicated)
};

struct FusedCall {
  ncclComm* comm = nullptr;
  const char* fn = "";
  FusedStage stage = FusedStage::kNaive;
  size_t m = 0, n = 0, k = 0;
  ncclDataType_t type = ncclFloat;
  size_t elemSize = 4;
  int rank = 0, nRanks = 1;
  size_t rowsPerRank = 0;           // m / nRanks
  FusedScratch* scratch = nullptr;  // the communicator's, for this call's buffers
};

// Validates (communicator, group, datatype, shape, pointers, overlaps), loads the BLAS, resolves
// the stage and runs the agreement; a rank whose own arguments fail still joins the agreement, so
// every rank fails together (the others naming it). `op` tells the operations apart in the agreement; `outputsMask`
// says which optional outputs this rank computes (every rank must say the same).
ncclResult_t beginFusedCall(FusedCall* call, ncclComm* comm, const char* fn, int op, size_t m, size_t n, size_t k,
                            ncclDataType_t type, std::initializer_list<FusedBuffer> buffers);

}  // namespace baton

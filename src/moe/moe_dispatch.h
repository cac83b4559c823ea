// MoE dispatch and combine (include/baton/moe.h, lesson 12), behind their entry points
// (src/api/moe_api.cc, which runs them inside guardedCall). Each checks its own arguments and
// agrees with its peers on them, so a rank with wrong arguments still joins the agreement and every
// rank fails together; `fn` names the entry point in messages.
#pragma once

#include <cstddef>
#include <cstdint>

#include "baton/moe.h"
#include "comm.h"

namespace baton {

// One dispatch call's arguments: batonMoeDispatch (recvScales NULL, fp8 false), batonMoeDispatchFp8
// (fp8: e4m3 rows and their scales) and batonMoeDispatchGemm (expertWeights, ffn, expertOut: each
// expert's first GEMM too). `fn` names the entry point in messages.
struct MoeDispatchArgs {
  const char* fn = "batonMoeDispatch";
  ncclComm* comm = nullptr;
  const void* tokens = nullptr;      // [numTokens x hidden] of type
  const int32_t* topkIdx = nullptr;  // [numTokens x topk] expert ids, -1 for none
  size_t numTokens = 0, hidden = 0;
  int numExperts = 0, topk = 0;
  ncclDataType_t type = ncclFloat;
  void* recvTokens = nullptr;   // [recvCapacity x hidden] rows received, expert-major
  float* recvScales = nullptr;  // fp8: [recvCapacity x hidden/128]
  bool fp8 = false;
  size_t recvCapacity = 0;
  size_t* recvPerExpert = nullptr;             // out: rows per local expert
  size_t* numRecv = nullptr;                   // out: rows received
  batonMoeRouting_t* routing = nullptr;        // out: what combine needs
  const void* const* expertWeights = nullptr;  // GEMM: [hidden x ffn] per local expert
  size_t ffn = 0;
  void* expertOut = nullptr;  // GEMM: [recvCapacity x ffn]
};
ncclResult_t moeDispatch(const MoeDispatchArgs& a);
// batonMoeCombine, and batonMoeDispatchBackward (weights NULL: a combine with every weight 1).
ncclResult_t moeCombine(const char* fn, const void* expertOut, const float* weights, void* out, batonMoeRouting_t r,
                        ncclComm* comm);
// batonMoeCombineBackward.
ncclResult_t moeCombineBackward(const void* gradOut, const float* weights, const void* expertOut, void* gradExpertOut,
                                float* gradWeights, batonMoeRouting_t r, ncclComm* comm);

}  // namespace baton

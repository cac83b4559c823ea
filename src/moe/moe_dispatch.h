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

// batonMoeDispatch (recvScales NULL, fp8 false), batonMoeDispatchFp8 (fp8: e4m3 rows and their
// scales) and batonMoeDispatchGemm (expertWeights, ffn, expertOut: each expert's first GEMM too).
ncclResult_t moeDispatch(const char* fn, const void* tokens, const int32_t* topkIdx, size_t numTokens, size_t hidden,
                         int numExperts, int topk, ncclDataType_t type, void* recvTokens, float* recvScales, bool fp8,
                         size_t recvCapacity, size_t* recvPerExpert, size_t* numRecv, batonMoeRouting_t* routing,
                         ncclComm* comm, const void* const* expertWeights = nullptr, size_t ffn = 0,
                         void* expertOut = nullptr);
// batonMoeCombine, and batonMoeDispatchBackward (weights NULL: a combine with every weight 1).
ncclResult_t moeCombine(const char* fn, const void* expertOut, const float* weights, void* out, batonMoeRouting_t r,
                        ncclComm* comm);
// batonMoeCombineBackward.
ncclResult_t moeCombineBackward(const void* gradOut, const float* weights, const void* expertOut, void* gradExpertOut,
                                float* gradWeights, batonMoeRouting_t r, ncclComm* comm);

}  // namespace baton

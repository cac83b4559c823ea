// MoE dispatch and combine (include/baton/moe.h, lesson 12): each runs inside guardedCall
// (communicator checked, call counted in flight, no exception across the C API); the operation
// checks the rest of its arguments itself, inside the agreement with its peers
// (src/moe/moe_dispatch.h).
#include "api/guarded_call.h"
#include "baton/moe.h"
#include "moe/moe_dispatch.h"
#include "moe/moe_routing.h"

using namespace baton;

extern "C" __attribute__((visibility("default"))) ncclResult_t batonMoeDispatch(
    const void* tokens, const int32_t* topkIdx, size_t numTokens, size_t hidden, int numExperts, int topk,
    ncclDataType_t datatype, void* recvTokens, size_t recvCapacity, size_t* recvPerExpert, size_t* numRecv,
    batonMoeRouting_t* routing, ncclComm_t comm, cudaStream_t) {
  return guardedCall(comm, "batonMoeDispatch", [&] {
    MoeDispatchArgs a;
    a.fn = "batonMoeDispatch", a.comm = comm, a.tokens = tokens, a.topkIdx = topkIdx, a.numTokens = numTokens;
    a.hidden = hidden, a.numExperts = numExperts, a.topk = topk, a.type = datatype, a.recvTokens = recvTokens;
    a.recvCapacity = recvCapacity, a.recvPerExpert = recvPerExpert, a.numRecv = numRecv, a.routing = routing;
    return moeDispatch(a);
  });
}

extern "C" __attribute__((visibility("default"))) ncclResult_t batonMoeDispatchGemm(
    const void* tokens, const int32_t* topkIdx, size_t numTokens, size_t hidden, int numExperts, int topk,
    ncclDataType_t datatype, const void* const* expertWeights, size_t ffn, void* recvTokens, void* expertOut,
    size_t recvCapacity, size_t* recvPerExpert, size_t* numRecv, batonMoeRouting_t* routing, ncclComm_t comm,
    cudaStream_t) {
  return guardedCall(comm, "batonMoeDispatchGemm", [&] {
    MoeDispatchArgs a;
    a.fn = "batonMoeDispatchGemm", a.comm = comm, a.tokens = tokens, a.topkIdx = topkIdx, a.numTokens = numTokens;
    a.hidden = hidden, a.numExperts = numExperts, a.topk = topk, a.type = datatype, a.recvTokens = recvTokens;
    a.recvCapacity = recvCapacity, a.recvPerExpert = recvPerExpert, a.numRecv = numRecv, a.routing = routing;
    a.expertWeights = expertWeights, a.ffn = ffn, a.expertOut = expertOut;
    return moeDispatch(a);
  });
}

extern "C" __attribute__((visibility("default"))) ncclResult_t batonMoeDispatchFp8(
    const void* tokens, const int32_t* topkIdx, size_t numTokens, size_t hidden, int numExperts, int topk,
    ncclDataType_t datatype, void* recvTokens, float* recvScales, size_t recvCapacity, size_t* recvPerExpert,
    size_t* numRecv, batonMoeRouting_t* routing, ncclComm_t comm, cudaStream_t) {
  return guardedCall(comm, "batonMoeDispatchFp8", [&] {
    MoeDispatchArgs a;
    a.fn = "batonMoeDispatchFp8", a.comm = comm, a.tokens = tokens, a.topkIdx = topkIdx, a.numTokens = numTokens;
    a.hidden = hidden, a.numExperts = numExperts, a.topk = topk, a.type = datatype, a.recvTokens = recvTokens;
    a.recvScales = recvScales, a.fp8 = true, a.recvCapacity = recvCapacity, a.recvPerExpert = recvPerExpert;
    a.numRecv = numRecv, a.routing = routing;
    return moeDispatch(a);
  });
}

extern "C" __attribute__((visibility("default"))) ncclResult_t batonMoeCombine(const void* expertOut,
                                                                               const float* topkWeights, void* out,
                                                                               batonMoeRouting_t routing,
                                                                               ncclComm_t comm, cudaStream_t) {
  return guardedCall(comm, "batonMoeCombine",
                     [&] { return moeCombine("batonMoeCombine", expertOut, topkWeights, out, routing, comm); });
}

extern "C" __attribute__((visibility("default"))) ncclResult_t batonMoeDispatchBackward(const void* gradRecv,
                                                                                        void* gradTokens,
                                                                                        batonMoeRouting_t routing,
                                                                                        ncclComm_t comm, cudaStream_t) {
  return guardedCall(comm, "batonMoeDispatchBackward", [&] {
    return moeCombine("batonMoeDispatchBackward", gradRecv, nullptr, gradTokens, routing, comm);
  });
}

extern "C" __attribute__((visibility("default"))) ncclResult_t batonMoeCombineBackward(
    const void* gradOut, const float* topkWeights, const void* expertOut, void* gradExpertOut, float* gradWeights,
    batonMoeRouting_t routing, ncclComm_t comm, cudaStream_t) {
  return guardedCall(comm, "batonMoeCombineBackward", [&] {
    return moeCombineBackward(gradOut, topkWeights, expertOut, gradExpertOut, gradWeights, routing, comm);
  });
}

extern "C" __attribute__((visibility("default"))) ncclResult_t batonMoeRoutingDestroy(batonMoeRouting_t routing) {
  delete routing;
  return ncclSuccess;
}

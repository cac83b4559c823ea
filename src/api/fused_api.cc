// The tensor-parallel fused operations (include/baton/fused.h, lesson 11): each runs inside
// guardedCall (communicator checked, call counted in flight, no exception across the C API); the
// operation checks the rest of its arguments itself, inside the agreement with its peers
// (src/fused/tensor_parallel.h).
#include "api/guarded_call.h"
#include "baton/fused.h"
#include "fused/tensor_parallel.h"

using namespace baton;

extern "C" __attribute__((visibility("default"))) ncclResult_t batonAllGatherGemm(const void* aShard, const void* b,
                                                                                  void* c, void* aGathered, size_t m,
                                                                                  size_t n, size_t k,
                                                                                  ncclDataType_t datatype,
                                                                                  ncclComm_t comm, cudaStream_t) {
  return guardedCall(comm, "batonAllGatherGemm",
                     [&] { return agGemm(aShard, b, c, aGathered, m, n, k, datatype, comm); });
}

extern "C" __attribute__((visibility("default"))) ncclResult_t batonGemmReduceScatter(const void* a, const void* bShard,
                                                                                      void* cShard, size_t m, size_t n,
                                                                                      size_t k, ncclDataType_t datatype,
                                                                                      ncclComm_t comm, cudaStream_t) {
  return guardedCall(comm, "batonGemmReduceScatter",
                     [&] { return gemmRs(a, bShard, cShard, m, n, k, datatype, comm); });
}

extern "C" __attribute__((visibility("default"))) ncclResult_t batonAllGatherGemmBackward(
    const void* aShard, const void* b, const void* dC, void* dAShard, void* dB, size_t m, size_t n, size_t k,
    ncclDataType_t datatype, ncclComm_t comm, cudaStream_t) {
  return guardedCall(comm, "batonAllGatherGemmBackward",
                     [&] { return agGemmBackward(aShard, b, dC, dAShard, dB, m, n, k, datatype, comm); });
}

extern "C" __attribute__((visibility("default"))) ncclResult_t batonGemmReduceScatterBackward(
    const void* a, const void* bShard, const void* dCShard, void* dA, void* dBShard, size_t m, size_t n, size_t k,
    ncclDataType_t datatype, ncclComm_t comm, cudaStream_t) {
  return guardedCall(comm, "batonGemmReduceScatterBackward",
                     [&] { return gemmRsBackward(a, bShard, dCShard, dA, dBShard, m, n, k, datatype, comm); });
}

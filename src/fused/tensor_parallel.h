// The tensor-parallel fused operations (include/baton/fused.h, lesson 11) behind their entry points
// (src/api/fused_api.cc, which run them inside guardedCall): each checks its arguments and agrees
// with its peers itself (fused_call.h's beginFusedCall), so a rank with wrong arguments still joins
// the agreement and every rank fails together.
#pragma once

#include <cstddef>

#include "comm.h"

namespace baton {

// C[M x N] = allgather_rows(aShard) * B (batonAllGatherGemm).
ncclResult_t agGemm(const void* aShard, const void* b, void* c, void* aGathered, size_t m, size_t n, size_t k,
                    ncclDataType_t type, ncclComm* comm);
// cShard[M/n x N] = reduce_scatter_rows(A * bShard) (batonGemmReduceScatter).
ncclResult_t gemmRs(const void* a, const void* bShard, void* cShard, size_t m, size_t n, size_t k, ncclDataType_t type,
                    ncclComm* comm);
// dAShard = reduce_scatter_rows(dC * Bᵀ); dB = allgather_rows(aShard)ᵀ * dC (batonAllGatherGemmBackward).
ncclResult_t agGemmBackward(const void* aShard, const void* b, const void* dC, void* dAShard, void* dB, size_t m,
                            size_t n, size_t k, ncclDataType_t type, ncclComm* comm);
// dA = allgather_rows(dCShard) * bShardᵀ; dBShard = Aᵀ * allgather_rows(dCShard) (batonGemmReduceScatterBackward).
ncclResult_t gemmRsBackward(const void* a, const void* bShard, const void* dCShard, void* dA, void* dBShard, size_t m,
                            size_t n, size_t k, ncclDataType_t type, ncclComm* comm);

}  // namespace baton

// The tensor-parallel fused operations (include/baton/fused.h, lesson 11): AllGather+GEMM,
// GEMM+ReduceScatter and their backward passes, each a GEMM per row block around one of the two
// communication patterns of row_exchange.h, so every stage of the exchange serves all four. The
// entry points are src/api/fused_api.cc's.
#include "fused/tensor_parallel.h"

#include <cstring>
#include <new>
#include <vector>

#include "fused/blas.h"
#include "fused/fp32_operand.h"
#include "fused/fused_call.h"
#include "fused/row_exchange.h"
#include "misc/debug.h"

namespace baton {
namespace {

enum FusedOp { kAgGemm = 1, kGemmRs = 2, kAgGemmBackward = 3, kGemmRsBackward = 4 };

}  // namespace

// C[M x N] = allgather_rows(aShard) * B.
ncclResult_t agGemm(const void* aShard, const void* b, void* c, void* aGathered, size_t m, size_t n, size_t k,
                    ncclDataType_t type, ncclComm* comm) {
  const char* fn = "batonAllGatherGemm";
  FusedCall call;
  const size_t rows = m / (size_t)comm->nRanks;
  BATON_CHECK(beginFusedCall(&call, comm, fn, kAgGemm, m, n, k, type,
                             {{"aShard", aShard, rows * k, false},
                              {"b", b, k * n, false},
                              {"c", c, m * n, true},
                              {"aGathered", aGathered, m * k, true, true, /*agreed=*/false}}));
  char* gathered =
      aGathered ? (char*)aGathered : (char*)call.scratch->get(FusedScratch::kGathered, m * k * call.elemSize);
  Fp32In bF(call, FusedScratch::kWideIn1, b, k * n), aBlock(call, FusedScratch::kWideIn0);
  Fp32Out cOut(call, FusedScratch::kWideOut0, c, m * n);
  BATON_CHECK(gatherRows(call, aShard, k * call.elemSize, gathered, aGathered != nullptr,
                         [&](int j, size_t r0, size_t nr, const void* aRows) {
                           sgemm(false, false, nr, n, k, 1.f, aBlock.load(aRows, nr * k), k, bF.get(), n, 0.f,
                                 cOut.get() + ((size_t)j * rows + r0) * n, n);
                           return ncclSuccess;
                         }));
  cOut.store();
  return ncclSuccess;
}

// cShard[M/n x N] = reduce_scatter_rows(A * bShard).
ncclResult_t gemmRs(const void* a, const void* bShard, void* cShard, size_t m, size_t n, size_t k, ncclDataType_t type,
                    ncclComm* comm) {
  const char* fn = "batonGemmReduceScatter";
  FusedCall call;
  const size_t rows = m / (size_t)comm->nRanks;
  BATON_CHECK(
      beginFusedCall(&call, comm, fn, kGemmRs, m, n, k, type,
                     {{"a", a, m * k, false}, {"bShard", bShard, k * n, false}, {"cShard", cShard, rows * n, true}}));
  Fp32In aF(call, FusedScratch::kWideIn0, a, m * k), bF(call, FusedScratch::kWideIn1, bShard, k * n);
  Fp32Out cOut(call, FusedScratch::kWideOut0, cShard, rows * n);
  BATON_CHECK(reduceScatterRows(
      call, n,
      [&](int j, size_t r0, size_t nr, float* partial) {
        sgemm(false, false, nr, n, k, 1.f, aF.get() + ((size_t)j * rows + r0) * k, k, bF.get(), n, 0.f, partial, n);
        return ncclSuccess;
      },
      cOut.get()));
  cOut.store();
  return ncclSuccess;
}

// dAShard = reduce_scatter_rows(dC * Bᵀ); dB = allgather_rows(aShard)ᵀ * dC.
ncclResult_t agGemmBackward(const void* aShard, const void* b, const void* dC, void* dAShard, void* dB, size_t m,
                            size_t n, size_t k, ncclDataType_t type, ncclComm* comm) {
  const char* fn = "batonAllGatherGemmBackward";
  FusedCall call;
  const size_t rows = m / (size_t)comm->nRanks;
  BATON_CHECK(beginFusedCall(&call, comm, fn, kAgGemmBackward, m, n, k, type,
                             {{"aShard", aShard, rows * k, false},
                              {"b", b, k * n, false},
                              {"dC", dC, m * n, false},
                              {"dAShard", dAShard, rows * k, true, true},
                              {"dB", dB, k * n, true, true}}));
  Fp32In bF(call, FusedScratch::kWideIn1, b, k * n), dCF(call, FusedScratch::kWideIn2, dC, m * n);
  if (dAShard) {
    Fp32Out dAOut(call, FusedScratch::kWideOut0, dAShard, rows * k);
    BATON_CHECK(reduceScatterRows(
        call, k,
        [&](int j, size_t r0, size_t nr, float* partial) {
          sgemm(false, true, nr, k, n, 1.f, dCF.get() + ((size_t)j * rows + r0) * n, n, bF.get(), n, 0.f, partial, k);
          return ncclSuccess;
        },
        dAOut.get()));
    dAOut.store();
  }
  if (dB) {
    char* gathered = (char*)call.scratch->get(FusedScratch::kGathered, m * k * call.elemSize);
    Fp32In aBlock(call, FusedScratch::kWideIn0);
    Fp32Out dBOut(call, FusedScratch::kWideOut1, dB, k * n);
    memset(dBOut.get(), 0, k * n * sizeof(float));
    BATON_CHECK(gatherRows(call, aShard, k * call.elemSize, gathered, false,
                           [&](int j, size_t r0, size_t nr, const void* aRows) {
                             sgemm(true, false, k, n, nr, 1.f, aBlock.load(aRows, nr * k), k,
                                   dCF.get() + ((size_t)j * rows + r0) * n, n, 1.f, dBOut.get(), n);
                             return ncclSuccess;
                           }));
    dBOut.store();
  }
  return ncclSuccess;
}

// dA = allgather_rows(dCShard) * bShardᵀ; dBShard = Aᵀ * allgather_rows(dCShard).
ncclResult_t gemmRsBackward(const void* a, const void* bShard, const void* dCShard, void* dA, void* dBShard, size_t m,
                            size_t n, size_t k, ncclDataType_t type, ncclComm* comm) {
  const char* fn = "batonGemmReduceScatterBackward";
  FusedCall call;
  const size_t rows = m / (size_t)comm->nRanks;
  BATON_CHECK(beginFusedCall(&call, comm, fn, kGemmRsBackward, m, n, k, type,
                             {{"a", a, m * k, false},
                              {"bShard", bShard, k * n, false},
                              {"dCShard", dCShard, rows * n, false},
                              {"dA", dA, m * k, true, true},
                              {"dBShard", dBShard, k * n, true, true}}));
  if (!dA && !dBShard) return ncclSuccess;
  Fp32In bF(call, FusedScratch::kWideIn1, bShard, k * n),
      aF(call, FusedScratch::kWideIn0, dBShard ? a : nullptr, dBShard ? m * k : 0),
      dCBlock(call, FusedScratch::kWideIn2);
  Fp32Out dAOut(call, FusedScratch::kWideOut0, dA, m * k), dBOut(call, FusedScratch::kWideOut1, dBShard, k * n);
  if (dBShard) memset(dBOut.get(), 0, k * n * sizeof(float));
  char* gathered = (char*)call.scratch->get(FusedScratch::kGathered, m * n * call.elemSize);
  BATON_CHECK(gatherRows(call, dCShard, n * call.elemSize, gathered, false,
                         [&](int j, size_t r0, size_t nr, const void* dCRows) {
                           const float* g = dCBlock.load(dCRows, nr * n);
                           const size_t row = (size_t)j * rows + r0;
                           if (dA) sgemm(false, true, nr, k, n, 1.f, g, n, bF.get(), n, 0.f, dAOut.get() + row * k, k);
                           if (dBShard)
                             sgemm(true, false, k, n, nr, 1.f, aF.get() + row * k, k, g, n, 1.f, dBOut.get(), n);
                           return ncclSuccess;
                         }));
  dAOut.store();
  dBOut.store();
  return ncclSuccess;
}

}  // namespace baton

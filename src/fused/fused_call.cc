// Argument checks, stage selection and the cross-rank agreement of the fused operations.
#include "fused/fused_call.h"

#include <cinttypes>
#include <climits>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "comm_registry.h"
#include "cuda_backend.h"
#include "fused/blas.h"
#include "fused/row_exchange.h"
#include "group.h"
#include "misc/debug.h"
#include "misc/param.h"

namespace baton {
namespace {

// auto: optimized on one host, where reading peers in place measured 0.56-0.90 of naive for the
// gathering operations and never slower beyond noise for the others; naive across hosts, where
// the chunks pay on a slow link (0.60-0.65 at 1 gbit/s) but cost what they hide on a fast one
// (0.89-1.34 at 10 gbit/s; docs/perf.md).
ncclResult_t stageFromEnv(const char* fn, int nNodes, FusedStage* out) {
  const std::string v = envStr("BATON_FUSED_STAGE", "auto");
  if (v == "auto") *out = nNodes == 1 ? FusedStage::kOptimized : FusedStage::kNaive;
  else if (v == "naive" || v == "1") *out = FusedStage::kNaive;
  else if (v == "decomposed" || v == "2") *out = FusedStage::kDecomposed;
  else if (v == "fused" || v == "3") *out = FusedStage::kFused;
  else if (v == "optimized" || v == "4") *out = FusedStage::kOptimized;
  else
    return batonError(ncclInvalidArgument,
                      "%s: BATON_FUSED_STAGE=%s is not a stage (naive, decomposed, fused, optimized or auto)", fn,
                      v.c_str());
  return ncclSuccess;
}

bool overlaps(const FusedBuffer& a, const FusedBuffer& b, size_t elemSize) {
  if (!a.ptr || !b.ptr || a.elems == 0 || b.elems == 0) return false;
  const auto a0 = (uintptr_t)a.ptr, b0 = (uintptr_t)b.ptr;
  return a0 < b0 + b.elems * elemSize && b0 < a0 + a.elems * elemSize;
}

const char* opName(uint64_t op) {
  static const char* const kNames[] = {"?", "AllGather+GEMM", "GEMM+ReduceScatter", "AllGather+GEMM backward",
                                       "GEMM+ReduceScatter backward"};
  return op < sizeof(kNames) / sizeof(kNames[0]) ? kNames[op] : "?";
}

const char* stageName(uint64_t s) { return s >= 1 && s <= 4 ? fusedStageName((FusedStage)s) : "?"; }

// What the ranks must agree on, one word each.
enum AgreeWord { kOp, kM, kN, kK, kType, kStage, kOutputs, kStatus, kWords };

}  // namespace

const char* fusedStageName(FusedStage s) {
  switch (s) {
    case FusedStage::kNaive: return "naive";
    case FusedStage::kDecomposed: return "decomposed";
    case FusedStage::kFused: return "fused";
    case FusedStage::kOptimized: return "optimized";
  }
  return "?";
}

// This rank's own arguments: ncclSuccess, or the error (with its message recorded) it must report.
namespace {
ncclResult_t checkLocal(const char* fn, int nRanks, int nNodes, size_t m, size_t n, size_t k, ncclDataType_t type,
                        std::initializer_list<FusedBuffer> buffers, uint64_t* outputs, FusedStage* stage) {
  if (type != ncclFloat && type != ncclFloat16 && type != ncclBfloat16)
    return batonError(ncclInvalidArgument, "%s: datatype %d (%s) is not supported: float, half or bfloat16", fn,
                      (int)type, (int)type >= 0 && type < ncclNumTypes ? typeName(type) : "unknown");
  if (m % (size_t)nRanks != 0)
    return batonError(ncclInvalidArgument, "%s: m=%zu rows do not divide by the %d ranks of the communicator", fn, m,
                      nRanks);
  // BLAS takes int dimensions and row pitches.
  for (auto [name, v] : {std::pair{"m", m}, std::pair{"n", n}, std::pair{"k", k}})
    if (v > (size_t)INT_MAX)
      return batonError(ncclInvalidArgument, "%s: %s=%zu is larger than a BLAS dimension can be (%d)", fn, name, v,
                        INT_MAX);
  const size_t elemSize = typeSize(type);
  int bit = 0;
  for (const FusedBuffer& b : buffers) {
    size_t bytes;
    if (__builtin_mul_overflow(b.elems, elemSize, &bytes) || bytes > (size_t)SSIZE_MAX)
      return batonError(ncclInvalidArgument, "%s: %s of %zu elements overflows the address space", fn, b.name, b.elems);
    if (b.optional && b.agreed) *outputs |= (b.ptr ? 1ull : 0ull) << bit++;
    if (!b.ptr && b.elems > 0 && !b.optional)
      return batonError(ncclInvalidArgument, "%s: %s is NULL but holds %zu elements", fn, b.name, b.elems);
    BATON_CHECK(checkHostMemory(b.ptr, fn, b.name));
  }
  for (const FusedBuffer& o : buffers) {
    if (!o.output) continue;
    for (const FusedBuffer& b : buffers)
      if (&b != &o && overlaps(o, b, elemSize))
        return batonError(ncclInvalidArgument, "%s: output %s [%p, +%zu elements) overlaps %s [%p, +%zu elements)", fn,
                          o.name, o.ptr, o.elems, b.name, b.ptr, b.elems);
  }
  BATON_CHECK(blasLoad(fn));
  return stageFromEnv(fn, nNodes, stage);
}
}  // namespace

ncclResult_t beginFusedCall(FusedCall* call, ncclComm* comm, const char* fn, int op, size_t m, size_t n, size_t k,
                            ncclDataType_t type, std::initializer_list<FusedBuffer> buffers) {
  BATON_CHECK(checkCommReady(comm, fn));
  if (inGroup())
    return batonError(ncclInvalidUsage,
                      "%s: a fused operation cannot be issued inside ncclGroupStart/End (it computes while it "
                      "communicates and returns when done); call it outside the group",
                      fn);
  const int nRanks = comm->nRanks;
  uint64_t outputs = 0;
  FusedStage stage = FusedStage::kNaive;
  // A rank whose own arguments are wrong still joins the agreement, so its peers fail at once
  // with it instead of waiting for it in the operation.
  const ncclResult_t local = checkLocal(fn, nRanks, comm->nNodes, m, n, k, type, buffers, &outputs, &stage);
  std::string localWhy = local == ncclSuccess ? "" : ncclGetLastError(comm);
  if (!comm->fusedScratch) comm->fusedScratch = std::make_shared<FusedScratch>();
  *call = FusedCall{
      comm, fn, stage, m, n, k, type, typeSize(type), comm->rank, nRanks, m / (size_t)nRanks, comm->fusedScratch.get()};
  if (nRanks == 1) return local;
  uint64_t mine[kWords] = {(uint64_t)op, m, n, k, (uint64_t)type, (uint64_t)stage, outputs, (uint64_t)local};
  std::vector<uint64_t> all((size_t)kWords * nRanks);
  BATON_CHECK(allGatherBytes(*call, mine, all.data(), sizeof(mine)));
  if (local != ncclSuccess) return batonError(local, "%s", localWhy.c_str());  // restore this rank's message
  for (int r = 0; r < nRanks; ++r) {
    const uint64_t* theirs = &all[(size_t)r * kWords];
    if (theirs[kStatus] != ncclSuccess)
      return batonError(ncclInvalidUsage,
                        "%s: rank %d rejected its own arguments (%s; its error says which), so no rank runs the "
                        "operation",
                        fn, r, ncclGetErrorString((ncclResult_t)theirs[kStatus]));
  }
  for (int r = 0; r < nRanks; ++r) {
    const uint64_t* theirs = &all[(size_t)r * kWords];
    if (memcmp(theirs, mine, sizeof(mine)) == 0) continue;
    return batonError(ncclInvalidUsage,
                      "%s: ranks disagree: rank %d called %s with m=%" PRIu64 " n=%" PRIu64 " k=%" PRIu64
                      " %s, stage %s, optional outputs %#" PRIx64
                      "; rank %d (this one) %s with m=%zu n=%zu k=%zu %s, stage %s, optional outputs %#" PRIx64,
                      fn, r, opName(theirs[kOp]), theirs[kM], theirs[kN], theirs[kK],
                      theirs[kType] < ncclNumTypes ? typeName((ncclDataType_t)theirs[kType]) : "?",
                      stageName(theirs[kStage]), theirs[kOutputs], comm->rank, opName((uint64_t)op), m, n, k,
                      typeName(type), fusedStageName(stage), outputs);
  }
  return ncclSuccess;
}

}  // namespace baton

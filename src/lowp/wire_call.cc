// Argument checks, environment and the cross-rank agreement of the wire-format collectives.
#include "lowp/wire_call.h"

#include <cinttypes>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "enqueue.h"
#include "group.h"
#include "misc/debug.h"
#include "misc/param.h"
#include "task.h"

namespace baton {
namespace {

// AllReduce's one-shot carries nRanks x the bytes; up to here it saves rsag's second round.
constexpr size_t kOneShotMaxWireBytes = 64 << 10;

const char* opName(WireOp op) {
  switch (op) {
    case WireOp::kAllGather: return "AllGather";
    case WireOp::kAllGatherPacked: return "AllGather (packed)";
    case WireOp::kReduceScatter: return "ReduceScatter";
    case WireOp::kAllReduce: return "AllReduce";
  }
  return "?";
}

bool reduces(WireOp op) { return op == WireOp::kReduceScatter || op == WireOp::kAllReduce; }

ncclResult_t algoFromEnv(const char* fn, WireOp op, WireFormat wire, size_t count, WireAlgo* out) {
  const std::string v = envStr("BATON_LOWP_ALGO", "auto");
  if (v != "auto" && v != "rsag" && v != "oneshot" && v != "ring")
    return batonError(ncclInvalidArgument, "%s: BATON_LOWP_ALGO=%s is not an algorithm (rsag, ring, oneshot or auto)",
                      fn, v.c_str());
  if (op == WireOp::kAllReduce)
    *out = v == "rsag"   ? WireAlgo::kRsAg
           : v == "ring" ? WireAlgo::kRing
           : v == "oneshot"
               ? WireAlgo::kOneShot
               : (wireSegmentBytes(wire, count) <= kOneShotMaxWireBytes ? WireAlgo::kOneShot : WireAlgo::kRsAg);
  else if (op == WireOp::kReduceScatter) *out = v == "ring" ? WireAlgo::kRing : WireAlgo::kAlltoAll;
  else *out = WireAlgo::kGather;
  return ncclSuccess;
}

ncclResult_t fromEnv(const char* fn, WireStage* stage, size_t* pieceBytes, bool* stochastic) {
  const std::string s = envStr("BATON_LOWP_STAGE", "auto");
  if (s != "auto" && s != "naive" && s != "pipelined" && s != "fused")
    return batonError(ncclInvalidArgument, "%s: BATON_LOWP_STAGE=%s is not a stage (naive, pipelined, fused or auto)",
                      fn, s.c_str());
  // auto: pipelined. The fused stage is level with it on one host and across a slow link, where the
  // pipelined one also overlaps the AllReduce's two exchanges (docs/perf.md), and its AllGather
  // quantizes a block once per peer where the pipelined one quantizes it once.
  *stage = s == "naive" ? WireStage::kNaive : s == "fused" ? WireStage::kFused : WireStage::kPipelined;
  const int64_t piece = envInt("BATON_LOWP_PIECE", 1 << 20, EnvLog::kQuiet);
  if (piece < 1)
    return batonError(ncclInvalidArgument, "%s: BATON_LOWP_PIECE=%lld is not a positive size", fn, (long long)piece);
  *pieceBytes = size_t(piece);
  const std::string r = envStr("BATON_LOWP_ROUNDING", "nearest");
  if (r != "nearest" && r != "stochastic")
    return batonError(ncclInvalidArgument, "%s: BATON_LOWP_ROUNDING=%s is not a rounding (nearest or stochastic)", fn,
                      r.c_str());
  *stochastic = r == "stochastic";
  return ncclSuccess;
}

ncclResult_t checkLocal(WireCall* c, WireOp op, const void* sendbuff, void* recvbuff, size_t count, int wire,
                        ncclRedOp_t redop) {
  const char* fn = c->fn;
  if (inGroup())
    return batonError(ncclInvalidUsage,
                      "%s: a wire-format collective cannot be issued inside ncclGroupStart/End (it quantizes and "
                      "decodes around its exchange and returns when done); call it outside the group",
                      fn);
  if (wire < 1 || wire >= kNumWireFormats)
    return batonError(ncclInvalidArgument,
                      "%s: wire format %d is not one this baton knows (batonWireMxfp8 1, batonWireMxfp4 2, "
                      "batonWireNvfp4 3)",
                      fn, wire);
  c->wire = WireFormat(wire);
  if (c->type != ncclFloat && c->type != ncclBfloat16 && c->type != ncclHalf)
    return batonError(ncclInvalidArgument,
                      "%s: datatype %s (%d) cannot use a wire format (float, bfloat16 or half data only: the "
                      "formats carry real numbers, and an integer's exactness would be lost)",
                      fn, (int)c->type >= 0 && c->type < ncclNumTypes ? typeName(c->type) : "unknown", (int)c->type);
  if (reduces(op)) {
    if (redop != ncclSum && redop != ncclAvg)
      return batonError(ncclInvalidArgument,
                        "%s: op %d is not supported with a wire format (ncclSum or ncclAvg: the sum is taken in "
                        "fp32 after decoding)",
                        fn, (int)redop);
    c->avg = redop == ncclAvg;
  }
  // The largest buffer is count x nRanks elements (AllGather's output, ReduceScatter's input).
  const size_t n = (size_t)c->nRanks, elem = typeSize(c->type);
  if (count > (SIZE_MAX / 2) / n / elem)
    return batonError(ncclInvalidArgument, "%s: count %zu x %zu ranks x %zu bytes overflows", fn, count, n, elem);
  if (count && !sendbuff) return batonError(ncclInvalidArgument, "%s: sendbuff is NULL with count %zu", fn, count);
  if (count && !recvbuff) return batonError(ncclInvalidArgument, "%s: recvbuff is NULL with count %zu", fn, count);
  BATON_CHECK(fromEnv(fn, &c->stage, &c->pieceBytes, &c->stochastic));
  BATON_CHECK(algoFromEnv(fn, op, c->wire, count, &c->algo));
  // Nothing to overlap: one-shot (small messages), the ring (one hop after another), and AllGather's
  // packed form (the bytes are the output). Every rank decides alike, so the agreement still holds.
  if (c->algo == WireAlgo::kOneShot || c->algo == WireAlgo::kRing || op == WireOp::kAllGatherPacked)
    c->stage = WireStage::kNaive;
  return ncclSuccess;
}

// What the ranks must agree on, one word each; kVersion changes with the wire layout.
enum AgreeWord { kVersion, kOp, kCount, kType, kWire, kAvg, kAlgo, kStage, kStochastic, kPiece, kStatus, kWords };
constexpr uint64_t kWireLayoutVersion = 1;

}  // namespace

const char* wireFormatName(WireFormat f) {
  switch (f) {
    case WireFormat::kMxfp8: return "mxfp8";
    case WireFormat::kMxfp4: return "mxfp4";
    case WireFormat::kNvfp4: return "nvfp4";
    default: return "unknown";
  }
}

const char* wireStageName(WireStage s) {
  return s == WireStage::kNaive       ? "naive"
         : s == WireStage::kPipelined ? "pipelined"
         : s == WireStage::kFused     ? "fused"
                                      : "unknown";
}

const char* wireAlgoName(WireAlgo a) {
  switch (a) {
    case WireAlgo::kGather: return "allgather";
    case WireAlgo::kAlltoAll: return "alltoall";
    case WireAlgo::kRsAg: return "rsag";
    case WireAlgo::kOneShot: return "oneshot";
    case WireAlgo::kRing: return "ring";
  }
  return "?";
}

WireRounding WireCall::rounding(int segment) const {
  return WireRounding{stochastic, detail::mix64(seed ^ detail::mix64((uint64_t(rank) << 32) | uint32_t(segment))), 0};
}

ncclResult_t beginWireCall(WireCall* call, ncclComm* comm, const char* fn, WireOp op, const void* sendbuff,
                           void* recvbuff, size_t count, ncclDataType_t type, int wire, ncclRedOp_t redop) {
  WireCall c;
  c.comm = comm, c.fn = fn, c.op = op, c.type = type, c.count = count, c.rank = comm->rank, c.nRanks = comm->nRanks;
  // A rank whose own arguments are wrong still joins the agreement, so its peers fail with it.
  const ncclResult_t local = checkLocal(&c, op, sendbuff, recvbuff, count, wire, redop);
  const std::string localWhy = local == ncclSuccess ? "" : ncclGetLastError(comm);
  // The fused stage's segments are its FIFO steps: the ranks agree on them as on pieces.
  if (local == ncclSuccess && c.stage == WireStage::kFused) c.pieceBytes = wireFusedStepElems(c) * typeSize(type);
  if (!comm->fusedScratch) comm->fusedScratch = std::make_shared<FusedScratch>();
  c.scratch = comm->fusedScratch.get();
  c.seed = detail::mix64((uint64_t)envInt("BATON_LOWP_SEED", 0, EnvLog::kQuiet) ^ detail::mix64(comm->wireCalls++));
  const uint64_t mine[kWords] = {
      kWireLayoutVersion, (uint64_t)op,      count,        (uint64_t)type, (uint64_t)wire, c.avg,
      (uint64_t)c.algo,   (uint64_t)c.stage, c.stochastic, c.pieceBytes,   (uint64_t)local};
  if (c.nRanks > 1) {
    std::vector<uint64_t> all((size_t)kWords * c.nRanks);
    Task t = collTask(kFuncAllGather, mine, all.data(), sizeof(mine), ncclInt8);
    t.op.nRanks = c.nRanks;
    BATON_CHECK(runTasksNow(comm, {t}));
    if (local != ncclSuccess) return batonError(local, "%s", localWhy.c_str());
    for (int r = 0; r < c.nRanks; ++r) {
      const uint64_t* w = &all[(size_t)r * kWords];
      if (w[kStatus] != ncclSuccess)
        return batonError(ncclInvalidUsage, "%s: rank %d rejected its own arguments (%s; its error says which)", fn, r,
                          ncclGetErrorString((ncclResult_t)w[kStatus]));
    }
    for (int r = 0; r < c.nRanks; ++r) {
      const uint64_t* w = &all[(size_t)r * kWords];
      if (memcmp(w, mine, kStatus * sizeof(uint64_t)) == 0) continue;
      return batonError(ncclInvalidUsage,
                        "%s: ranks disagree: rank %d called %s with count %" PRIu64
                        ", %s, wire %s, %s, "
                        "algorithm %s, stage %s (pieces of %" PRIu64 " bytes), %s rounding, layout v%" PRIu64
                        "; rank %d (this one) %s with count %zu, %s, wire %s, %s, algorithm %s, stage %s (pieces of "
                        "%zu bytes), %s rounding, layout v%" PRIu64,
                        fn, r, opName((WireOp)w[kOp]), w[kCount],
                        w[kType] < ncclNumTypes ? typeName((ncclDataType_t)w[kType]) : "?",
                        wireFormatName((WireFormat)w[kWire]), w[kAvg] ? "avg" : "sum", wireAlgoName((WireAlgo)w[kAlgo]),
                        wireStageName((WireStage)w[kStage]), w[kPiece], w[kStochastic] ? "stochastic" : "nearest",
                        w[kVersion], c.rank, opName(op), count, typeName(type), wireFormatName(c.wire),
                        c.avg ? "avg" : "sum", wireAlgoName(c.algo), wireStageName(c.stage), c.pieceBytes,
                        c.stochastic ? "stochastic" : "nearest", kWireLayoutVersion);
    }
  } else if (local != ncclSuccess) {
    return local;
  }
  BATON_INFO(kSubColl, "%s: %zu %s elements as %s (%zu bytes per segment), stage %s, algorithm %s, %d ranks", fn, count,
             typeName(type), wireFormatName(c.wire), wireSegmentBytes(c.wire, count), wireStageName(c.stage),
             wireAlgoName(c.algo), c.nRanks);
  *call = c;
  return ncclSuccess;
}

}  // namespace baton

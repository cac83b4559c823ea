// MoE dispatch and combine (include/baton/moe.h, lesson 12; the entry points are
// src/api/moe_api.cc's): argument checks, the agreement (which also carries the counts every stage
// needs), the expert-major row order, and the routing kept between dispatch and combine.
#include "moe/moe_dispatch.h"

#include <cinttypes>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "baton/moe.h"
#include "comm_registry.h"
#include "cuda_backend.h"
#include "enqueue.h"
#include "fp8_blocks.h"
#include "fused/blas.h"
#include "group.h"
#include "misc/debug.h"
#include "misc/param.h"
#include "moe/moe_routing.h"

namespace baton {

const char* moeStageName(MoeStage s) {
  switch (s) {
    case MoeStage::kAuto: return "auto";
    case MoeStage::kNaive: return "naive";
    case MoeStage::kAlltoAllv: return "alltoallv";
    case MoeStage::kNormal: return "normal";
    case MoeStage::kLowLatency: return "lowlatency";
  }
  return "?";
}

namespace {

// What every rank must agree on, then this rank's token count and per-destination token counts.
// Then, per destination rank, the tokens (once per rank) and the rows (once per expert) sent there.
enum Word { kHidden, kExperts, kTopk, kType, kStage, kFp8, kFfn, kStatus, kTokens, kCapacity, kWords };

ncclResult_t stageFromEnv(const char* fn, MoeStage* out) {
  const std::string v = envStr("BATON_MOE_STAGE", "auto");
  if (v == "naive" || v == "1") *out = MoeStage::kNaive;
  else if (v == "alltoallv" || v == "2") *out = MoeStage::kAlltoAllv;
  else if (v == "normal" || v == "3") *out = MoeStage::kNormal;
  else if (v == "lowlatency" || v == "4") *out = MoeStage::kLowLatency;
  else if (v == "auto") *out = MoeStage::kAuto;
  else
    return batonError(ncclInvalidArgument,
                      "%s: BATON_MOE_STAGE=%s is not a stage (naive, alltoallv, normal, lowlatency or auto)", fn,
                      v.c_str());
  return ncclSuccess;
}

ncclResult_t checkDispatch(const MoeDispatchArgs& a) {
  const char* fn = a.fn;
  const ncclComm* comm = a.comm;
  const void* tokens = a.tokens;
  const int32_t* topkIdx = a.topkIdx;
  const size_t numTokens = a.numTokens, hidden = a.hidden, recvCapacity = a.recvCapacity, ffn = a.ffn;
  const int numExperts = a.numExperts, topk = a.topk;
  const ncclDataType_t type = a.type;
  const bool fp8 = a.fp8;
  const void* recvTokens = a.recvTokens;
  const float* recvScales = a.recvScales;
  const void* const* expertWeights = a.expertWeights;
  const void* expertOut = a.expertOut;
  const size_t *recvPerExpert = a.recvPerExpert, *numRecv = a.numRecv;
  const batonMoeRouting_t* routing = a.routing;
  if (type != ncclFloat && type != ncclBfloat16)
    return batonError(ncclInvalidArgument, "%s: datatype %d is not supported: float or bfloat16", fn, (int)type);
  if (hidden == 0) return batonError(ncclInvalidArgument, "%s: hidden is 0", fn);
  if (fp8 && hidden % kFp8Block != 0)
    return batonError(ncclInvalidArgument, "%s: hidden=%zu is not a multiple of %zu (the scale blocks)", fn, hidden,
                      kFp8Block);
  if (fp8 && recvCapacity && !recvScales)
    return batonError(ncclInvalidArgument, "%s: recvScales is NULL with recvCapacity %zu", fn, recvCapacity);
  if (numExperts < 1 || numExperts % comm->nRanks != 0)
    return batonError(ncclInvalidArgument, "%s: numExperts=%d is not a positive multiple of the %d ranks", fn,
                      numExperts, comm->nRanks);
  if (topk < 1 || topk > numExperts || topk > kMoeMaxTopk)
    return batonError(ncclInvalidArgument, "%s: topk=%d must be 1..min(numExperts=%d, %d)", fn, topk, numExperts,
                      kMoeMaxTopk);
  size_t bytes;
  if (__builtin_mul_overflow(numTokens, hidden, &bytes) || __builtin_mul_overflow(bytes, typeSize(type), &bytes) ||
      numTokens > UINT32_MAX)
    return batonError(ncclInvalidArgument, "%s: numTokens=%zu x hidden=%zu overflows", fn, numTokens, hidden);
  if (numTokens && !tokens)
    return batonError(ncclInvalidArgument, "%s: tokens is NULL with numTokens %zu", fn, numTokens);
  if (numTokens && !topkIdx)
    return batonError(ncclInvalidArgument, "%s: topkIdx is NULL with numTokens %zu", fn, numTokens);
  if (recvCapacity && !recvTokens)
    return batonError(ncclInvalidArgument, "%s: recvTokens is NULL with recvCapacity %zu", fn, recvCapacity);
  BATON_CHECK(checkHostMemory(tokens, fn, "tokens"));
  BATON_CHECK(checkHostMemory(recvTokens, fn, "recvTokens"));
  if (expertWeights || ffn || expertOut || strcmp(fn, "batonMoeDispatchGemm") == 0) {
    if (ffn == 0) return batonError(ncclInvalidArgument, "%s: ffn is 0", fn);
    if (!expertWeights) return batonError(ncclInvalidArgument, "%s: expertWeights is NULL", fn);
    for (int e = 0; e < numExperts / comm->nRanks; ++e)
      if (!expertWeights[e]) return batonError(ncclInvalidArgument, "%s: expertWeights[%d] is NULL", fn, e);
    if (recvCapacity && !expertOut)
      return batonError(ncclInvalidArgument, "%s: expertOut is NULL with recvCapacity %zu", fn, recvCapacity);
    BATON_CHECK(blasLoad(fn));
  }
  if (!recvPerExpert || !numRecv || !routing)
    return batonError(ncclInvalidArgument, "%s: %s is NULL", fn,
                      !recvPerExpert ? "recvPerExpert"
                      : !numRecv     ? "numRecv"
                                     : "routing");
  for (size_t t = 0; t < numTokens; ++t)
    for (int j = 0; j < topk; ++j) {
      const int32_t id = topkIdx[t * topk + j];
      if (id < -1 || id >= numExperts)
        return batonError(ncclInvalidArgument, "%s: topkIdx[%zu][%d]=%d is not an expert id (0..%d, or -1)", fn, t, j,
                          id, numExperts - 1);
      for (int i = 0; i < j; ++i)
        if (id >= 0 && topkIdx[t * topk + i] == id)
          return batonError(ncclInvalidArgument, "%s: token %zu names expert %d twice (slots %d and %d)", fn, t, id, i,
                            j);
    }
  return ncclSuccess;
}

// Quantizes every token to e4m3 with block scales (fp8_blocks.h), back to back in r's wire format.
const char* quantize(const batonMoeRouting& r, const void* tokens) {
  char* q = r.scratch<char>(FusedScratch::kMoeQuant, r.numTokens * r.wireBytes);
  for (size_t t = 0; t < r.numTokens; ++t) {
    uint8_t* bytes = reinterpret_cast<uint8_t*>(q + t * r.wireBytes);
    float* scales = reinterpret_cast<float*>(bytes + r.hidden);  // hidden is a multiple of 128: aligned
    if (r.type == ncclFloat)
      fp8QuantizeToken(static_cast<const float*>(tokens) + t * r.hidden, r.hidden, bytes, scales);
    else fp8QuantizeToken(static_cast<const bfloat16_t*>(tokens) + t * r.hidden, r.hidden, bytes, scales);
  }
  return q;
}

// The experts' weights as fp32 (widened once per call for bfloat16).
void widenWeights(const batonMoeRouting& r, const void* const* weights, MoeGemm* g) {
  const size_t elems = r.hidden * g->ffn;
  g->widened.resize(r.perRank);
  for (int e = 0; e < r.perRank; ++e) {
    if (r.type == ncclFloat) {
      g->wideWeights.push_back(static_cast<const float*>(weights[e]));
      continue;
    }
    g->widened[e].resize(elems);
    widenToFloat(r.type, weights[e], g->widened[e].data(), elems);
    g->wideWeights.push_back(g->widened[e].data());
  }
}

// The agreement: every rank's shape, stage and own verdict, and how many tokens and rows it sends
// to each rank, in one all-gather (words per rank: kWords, then n token counts, then n row counts).
// Fails on every rank alike when one rank rejected its arguments or the ranks disagree; fills the
// routing's per-rank token counts.
ncclResult_t agreeOnDispatch(const MoeDispatchArgs& a, MoeStage stage, ncclResult_t local, const std::string& localWhy,
                             batonMoeRouting* r, std::vector<uint64_t>* allOut) {
  ncclComm* comm = a.comm;
  const int n = comm->nRanks, me = comm->rank;
  const size_t words = kWords + 2 * (size_t)n;
  std::vector<uint64_t> mine(words, 0), all(words * n);
  mine[kHidden] = a.hidden, mine[kExperts] = (uint64_t)a.numExperts, mine[kTopk] = (uint64_t)a.topk;
  mine[kType] = (uint64_t)a.type, mine[kStage] = (uint64_t)stage, mine[kFp8] = a.fp8, mine[kFfn] = a.ffn;
  mine[kStatus] = (uint64_t)local;
  if (local == ncclSuccess) {
    mine[kTokens] = a.numTokens, mine[kCapacity] = a.recvCapacity;
    r->topkIdx.assign(a.topkIdx, a.topkIdx + a.numTokens * a.topk);
    for (size_t t = 0; t < a.numTokens; ++t)
      for (int j = 0; j < a.topk; ++j) {
        const int32_t id = a.topkIdx[t * a.topk + j];
        if (id < 0) continue;
        ++mine[kWords + n + r->rankOf(id)];                        // a row there
        if (r->firstOnRank(t, j)) ++mine[kWords + r->rankOf(id)];  // the token, once
      }
  }
  BATON_CHECK(runTasksNow(comm, {[&] {
                            Task t = collTask(kFuncAllGather, mine.data(), all.data(), words, ncclUint64);
                            t.op.nRanks = n;
                            return t;
                          }()}));
  if (local != ncclSuccess) return batonError(local, "%s", localWhy.c_str());
  for (int q = 0; q < n; ++q) {
    const uint64_t* w = &all[q * words];
    if (w[kStatus] != ncclSuccess)
      return batonError(ncclInvalidUsage, "%s: rank %d rejected its own arguments (its error says which)", a.fn, q);
    if (memcmp(w, mine.data(), kStatus * sizeof(uint64_t)) != 0)
      return batonError(ncclInvalidUsage,
                        "%s: ranks disagree: rank %d has hidden=%" PRIu64 " numExperts=%" PRIu64 " topk=%" PRIu64
                        " datatype %" PRIu64 " stage %s%s ffn=%" PRIu64
                        "; rank %d (this one) hidden=%zu numExperts=%d topk=%d "
                        "datatype %d stage %s%s ffn=%zu",
                        a.fn, q, w[kHidden], w[kExperts], w[kTopk], w[kType], moeStageName((MoeStage)w[kStage]),
                        w[kFp8] ? " fp8" : "", w[kFfn], me, a.hidden, a.numExperts, a.topk, (int)a.type,
                        moeStageName(stage), a.fp8 ? " fp8" : "", a.ffn);
  }
  r->tokensPerRank.resize(n), r->sendTokens.resize((size_t)n * n);
  for (int q = 0; q < n; ++q) {
    r->tokensPerRank[q] = all[q * words + kTokens];
    for (int p = 0; p < n; ++p) r->sendTokens[(size_t)q * n + p] = all[q * words + kWords + p];
  }
  *allOut = std::move(all);
  return ncclSuccess;
}

// Every rank's rows against its capacity, before anything moves: all fail, or none. Sets this
// rank's row count.
ncclResult_t checkCapacities(const MoeDispatchArgs& a, const std::vector<uint64_t>& all) {
  const int n = a.comm->nRanks;
  const size_t words = kWords + 2 * (size_t)n;
  auto rowsTo = [&](int p) {
    uint64_t rows = 0;
    for (int q = 0; q < n; ++q) rows += all[q * words + kWords + n + p];
    return rows;
  };
  *a.numRecv = rowsTo(a.comm->rank);
  for (int p = 0; p < n; ++p) {
    const uint64_t rows = rowsTo(p), cap = all[p * words + kCapacity];
    if (rows > cap)
      return batonError(ncclInvalidUsage,
                        "%s: rank %d would receive %" PRIu64
                        " rows (tokens x its experts chosen) but its recvCapacity "
                        "is %" PRIu64 "; no rank moved any token",
                        a.fn, p, rows, cap);
  }
  return ncclSuccess;
}

// Moves the tokens (quantized first for fp8) by the stage, and for the GEMM call multiplies the
// rows by their experts' weights; `placed`: the stage put the rows in recvTokens itself, else
// `data` holds where each row arrived.
ncclResult_t moveTokens(const MoeDispatchArgs& a, batonMoeRouting* r, MoeGemm* gemm, bool* placed,
                        std::vector<const char*>* data) {
  const void* wire = a.fp8 ? quantize(*r, a.tokens) : a.tokens;
  if (a.ffn) {
    gemm->ffn = a.ffn, gemm->recvTokens = a.recvTokens, gemm->expertOut = a.expertOut;
    widenWeights(*r, a.expertWeights, gemm);
    BATON_CHECK(moeExpertBlocks(r, &gemm->blockStart));
  }
  // The low-latency stage with experts places the rows itself, multiplying each source's as they come.
  // (BATON_MOE_OVERLAP=0: multiply once every row is in, to see what the overlap saves.)
  *placed = a.ffn && r->stage == MoeStage::kLowLatency && envInt("BATON_MOE_OVERLAP", 1) != 0;
  return *placed                             ? moeDispatchLowLatencyGemm(r, wire, *gemm)
         : r->stage == MoeStage::kNaive      ? moeDispatchNaive(r, wire, data)
         : r->stage == MoeStage::kLowLatency ? moeDispatchLowLatency(r, wire, data)
                                             : moeDispatchAlltoAllv(r, wire, data);  // normal: as alltoallv
}

// Groups the rows by local expert, keeping arrival order (source, token) within each: the row
// counts per expert, each row's place, and (unless the stage placed them) the rows themselves in
// recvTokens with their GEMM.
ncclResult_t placeRowsByExpert(const MoeDispatchArgs& a, batonMoeRouting* r, const MoeGemm& gemm, bool placed,
                               const std::vector<const char*>& data) {
  const size_t rowBytes = a.fp8 ? a.hidden : a.hidden * r->elemSize, nRows = r->rows.size();
  const size_t nScales = a.hidden / kFp8Block;
  std::vector<size_t> next(r->perRank, 0);
  for (const MoeRow& x : r->rows) ++next[x.expert];
  for (int e = 0; e < r->perRank; ++e) a.recvPerExpert[e] = next[e];
  *a.numRecv = nRows;
  for (int e = 0, at = 0; e < r->perRank; ++e) {
    const size_t c = next[e];
    next[e] = (size_t)at, at += (int)c;
  }
  r->rowOf.resize(nRows);
  for (size_t i = 0; i < nRows; ++i) r->rowOf[i] = (uint32_t)next[r->rows[i].expert]++;
  if (!placed)
    moePlaceRows(*r, data, static_cast<char*>(a.recvTokens), rowBytes, a.fp8 ? a.recvScales : nullptr, nScales,
                 a.comm->tun.streamStores);
  for (int e = 0, first = 0; a.ffn && !placed && e < r->perRank; first += (int)a.recvPerExpert[e++])
    BATON_CHECK(moeExpertGemm(*r, gemm, e, (size_t)first, a.recvPerExpert[e]));
  return ncclSuccess;
}

}  // namespace

// A dispatch in named steps, every rank taking each: check our own arguments and the stage; agree
// with every rank (shapes, verdicts, counts); check every rank's capacity; move the tokens by the
// stage; place the rows by expert.
ncclResult_t moeDispatch(const MoeDispatchArgs& a) {
  ncclComm* comm = a.comm;
  BATON_CHECK(checkCommReady(comm, a.fn));
  if (inGroup())
    return batonError(ncclInvalidUsage, "%s: cannot be issued inside ncclGroupStart/End (it waits for counts)", a.fn);
  if (a.routing) *a.routing = nullptr;
  MoeStage stage = MoeStage::kAuto;
  ncclResult_t local = checkDispatch(a);
  if (local == ncclSuccess) local = stageFromEnv(a.fn, &stage);
  const std::string localWhy = local == ncclSuccess ? "" : lastError();
  auto r = std::make_unique<batonMoeRouting>();
  const int n = comm->nRanks;
  r->comm = comm, r->stage = stage, r->hidden = a.hidden, r->elemSize = typeSize(a.type), r->numTokens = a.numTokens;
  r->numExperts = a.numExperts, r->topk = a.topk, r->perRank = std::max(1, a.numExperts / n), r->type = a.type;
  r->fp8 = a.fp8, r->wireBytes = a.fp8 ? fp8TokenBytes(a.hidden) : a.hidden * r->elemSize;
  std::vector<uint64_t> all;
  BATON_CHECK(agreeOnDispatch(a, stage, local, localWhy, r.get(), &all));
  BATON_CHECK(checkCapacities(a, all));
  if (stage == MoeStage::kAuto || stage == MoeStage::kLowLatency) {
    // Auto is the low-latency stage: fastest at every shape measured, on one host and across two
    // (docs/perf.md). Across hosts its window is written with puts through the proxies.
    BATON_CHECK(moeLowLatencyWindow(r.get()));
    stage = MoeStage::kLowLatency;
  }
  r->stage = stage;
  if (!comm->fusedScratch) comm->fusedScratch = std::make_shared<FusedScratch>();
  MoeGemm gemm;
  bool placed = false;
  std::vector<const char*> data;
  BATON_CHECK(moveTokens(a, r.get(), &gemm, &placed, &data));
  BATON_CHECK(placeRowsByExpert(a, r.get(), gemm, placed, data));
  if (stage == MoeStage::kLowLatency) BATON_CHECK(moeLowLatencyDispatchEnd(*r));  // rows out of the window
  BATON_INFO(kSubColl, "%s: %zu tokens, hidden %zu, top-%d of %d experts, stage %s%s: %zu rows received", a.fn,
             a.numTokens, a.hidden, a.topk, a.numExperts, moeStageName(stage), a.fp8 ? ", fp8" : "", r->rows.size());
  *a.routing = r.release();
  return ncclSuccess;
}

namespace {

// What every call after dispatch checks first.
ncclResult_t checkRouting(const char* fn, const batonMoeRouting* r, ncclComm* comm) {
  BATON_CHECK(checkCommReady(comm, fn));
  if (inGroup()) return batonError(ncclInvalidUsage, "%s: cannot be issued inside ncclGroupStart/End", fn);
  if (!r) return batonError(ncclInvalidArgument, "%s: routing is NULL", fn);
  if (r->comm != comm)
    return batonError(ncclInvalidArgument, "%s: routing %p was made by batonMoeDispatch on communicator %p, not %p", fn,
                      (const void*)r, (void*)r->comm, (void*)comm);
  if (!comm->fusedScratch) comm->fusedScratch = std::make_shared<FusedScratch>();
  return ncclSuccess;
}

ncclResult_t checkRows(const char* fn, const batonMoeRouting* r, const void* rows, const char* name) {
  if (!r->rows.empty() && !rows)
    return batonError(ncclInvalidArgument, "%s: %s is NULL but this rank holds %zu rows", fn, name, r->rows.size());
  return checkHostMemory(rows, fn, name);
}

ncclResult_t checkTokens(const char* fn, const batonMoeRouting* r, const void* tokens, const char* name) {
  if (r->numTokens && !tokens)
    return batonError(ncclInvalidArgument, "%s: %s is NULL with %zu tokens", fn, name, r->numTokens);
  return checkHostMemory(tokens, fn, name);
}

}  // namespace

// Combine, and dispatch's backward pass (a combine with every weight 1).
ncclResult_t moeCombine(const char* fn, const void* expertOut, const float* weights, void* out, batonMoeRouting_t r,
                        ncclComm* comm) {
  BATON_CHECK(checkRouting(fn, r, comm));
  BATON_CHECK(checkRows(fn, r, expertOut, fn == std::string("batonMoeCombine") ? "expertOut" : "gradRecv"));
  BATON_CHECK(checkTokens(fn, r, out, fn == std::string("batonMoeCombine") ? "out" : "gradTokens"));
  const char* rows = static_cast<const char*>(expertOut);
  if (r->stage == MoeStage::kLowLatency) return moeCombineLowLatency(*r, rows, weights, out);
  const size_t elems = r->numTokens * r->hidden;
  float* sum = r->scratch<float>(FusedScratch::kMoeSum, elems);
  BATON_CHECK(r->stage == MoeStage::kNaive    ? moeCombineNaive(*r, rows, weights, sum)
              : r->stage == MoeStage::kNormal ? moeCombineNormal(*r, rows, weights, sum)
                                              : moeCombineAlltoAllv(*r, rows, weights, sum));
  roundFromFloat(r->type, sum, out, elems);
  return ncclSuccess;
}

// Combine's backward pass: each token's gradient (and its weights) to its rows, the weighted
// gradient there, and each row's <y, gradient> back to the token's rank.
ncclResult_t moeCombineBackward(const void* gradOut, const float* weights, const void* expertOut, void* gradExpertOut,
                                float* gradWeights, batonMoeRouting_t r, ncclComm* comm) {
  const char* fn = "batonMoeCombineBackward";
  BATON_CHECK(checkRouting(fn, r, comm));
  BATON_CHECK(checkTokens(fn, r, gradOut, "gradOut"));
  BATON_CHECK(checkRows(fn, r, gradExpertOut, "gradExpertOut"));
  // A row's weight gradient is computed where the row is, for whichever rank its token is on: every
  // rank holding rows needs the forward's expert outputs, whether or not it wants gradWeights itself.
  BATON_CHECK(checkRows(fn, r, expertOut, "expertOut"));
  const size_t h = r->hidden, rowBytes = h * r->elemSize, k = (size_t)r->topk, bytes = rowBytes + k * sizeof(float);
  char* payload = r->scratch<char>(FusedScratch::kMoePartial, r->numTokens * bytes);
  for (size_t t = 0; t < r->numTokens; ++t) {
    memcpy(payload + t * bytes, static_cast<const char*>(gradOut) + t * rowBytes, rowBytes);
    for (size_t j = 0; j < k; ++j) {
      const float w = moeWeight(*r, weights, t, (int)j);
      memcpy(payload + t * bytes + rowBytes + j * sizeof(float), &w, sizeof w);
    }
  }
  std::vector<const char*> at;
  BATON_CHECK(r->stage == MoeStage::kNaive ? moeRedispatchNaive(*r, payload, bytes, &at)
                                           : moeRedispatchAlltoAllv(*r, payload, bytes, &at));
  std::vector<float> g(h), y(h), dots(r->rows.size(), 0.f);
  for (size_t a = 0; a < r->rows.size(); ++a) {
    float w;
    memcpy(&w, at[a] + rowBytes + (size_t)r->rows[a].j * sizeof(float), sizeof w);
    widenToFloat(r->type, at[a], g.data(), h);
    widenToFloat(r->type, static_cast<const char*>(expertOut) + (size_t)r->rowOf[a] * rowBytes, y.data(), h);
    for (size_t e = 0; e < h; ++e) dots[a] += y[e] * g[e];
    for (size_t e = 0; e < h; ++e) g[e] *= w;
    roundFromFloat(r->type, g.data(), static_cast<char*>(gradExpertOut) + (size_t)r->rowOf[a] * rowBytes, h);
  }
  // Every rank runs the return, whether or not it wants gradWeights, so no peer waits for it.
  std::vector<float> back(r->numTokens * k);
  BATON_CHECK(r->stage == MoeStage::kNaive ? moeReturnFloatsNaive(*r, dots.data(), back.data())
                                           : moeReturnFloatsAlltoAllv(*r, dots.data(), back.data()));
  if (gradWeights) std::copy(back.begin(), back.end(), gradWeights);
  return ncclSuccess;
}

}  // namespace baton

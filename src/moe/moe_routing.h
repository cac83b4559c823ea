// What MoE dispatch learned and combine needs (include/baton/moe.h, lesson 12): the agreed
// configuration, this rank's tokens' expert ids, and for every row dispatch delivered here where it
// came from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "comm.h"
#include "fused/fused_scratch.h"

namespace baton {

enum class MoeStage : int { kAuto = 0, kNaive = 1, kAlltoAllv = 2, kNormal = 3, kLowLatency = 4 };
constexpr int kMoeMaxTopk = 64;
const char* moeStageName(MoeStage s);

// One row of recvTokens: token `seq` of those source rank `src` sent here (in its token order;
// `token`: its index at the source, known to the naive stage only), for that token's j-th expert,
// this rank's local expert `expert`.
struct MoeRow {
  int src;
  int j;
  int expert;
  uint32_t seq;
  uint32_t token;
};

}  // namespace baton

struct batonMoeRouting {
  ncclComm* comm = nullptr;
  baton::MoeStage stage = baton::MoeStage::kAlltoAllv;
  size_t hidden = 0, elemSize = 4, numTokens = 0;
  size_t wireBytes = 0;  // a token's bytes as dispatch moves it: hidden x elemSize, or FP8's (fp8_blocks.h)
  bool fp8 = false;      // dispatched as e4m3 with block scales (combine's rows are still `type`)
  int numExperts = 0, topk = 0, perRank = 0;
  ncclDataType_t type = ncclFloat;
  std::vector<int32_t> topkIdx;       // this rank's [numTokens x topk]
  std::vector<baton::MoeRow> rows;    // the rows received, in arrival order: by source, token, j
  std::vector<uint32_t> rowOf;        // rows[a] is recvTokens' row rowOf[a] (grouped by local expert)
  std::vector<size_t> tokensPerRank;  // every rank's numTokens (the naive stage pads to the largest)
  std::vector<size_t> sendTokens;     // [src * n + dst]: tokens src sends dst (the alltoallv stage)

  int rankOf(int expert) const { return expert / perRank; }
  // Whether token t's slot j is the first of its slots on that expert's rank: a token travels once
  // to each rank, for its first expert there (the counts, dispatch and the backward pass agree on it).
  bool firstOnRank(size_t t, int j) const {
    const int32_t* ids = &topkIdx[t * (size_t)topk];
    if (ids[j] < 0) return false;
    for (int i = 0; i < j; ++i)
      if (ids[i] >= 0 && rankOf(ids[i]) == rankOf(ids[j])) return false;
    return true;
  }
  // The communicator's scratch slot `slot` as `bytes` bytes of T (contents not kept between calls).
  template <typename T>
  T* scratch(baton::FusedScratch::Slot slot, size_t count) const {
    return static_cast<T*>(comm->fusedScratch->get(slot, count * sizeof(T) + 1));
  }
};

namespace baton {

// Dispatch's and combine's ways (moe_naive.cc, moe_alltoallv.cc; the normal stage dispatches as
// alltoallv does and combines in moe_normal.cc). Dispatch moves each token's r->wireBytes bytes
// from `tokens` and appends to r->rows every row this rank receives, in arrival order, and to *data
// where its bytes are (in the communicator's scratch, valid until the next operation on it).
ncclResult_t moeDispatchNaive(batonMoeRouting* r, const void* tokens, std::vector<const char*>* data);
ncclResult_t moeDispatchAlltoAllv(batonMoeRouting* r, const void* tokens, std::vector<const char*>* data);
// out (fp32, [numTokens x hidden]) = the weighted sum of each of this rank's tokens' rows.
ncclResult_t moeCombineNaive(const batonMoeRouting& r, const char* expertOut, const float* weights, float* out);
ncclResult_t moeCombineAlltoAllv(const batonMoeRouting& r, const char* expertOut, const float* weights, float* out);
ncclResult_t moeCombineNormal(const batonMoeRouting& r, const char* expertOut, const float* weights, float* out);
// The low-latency stage (moe_lowlatency.cc): dispatch first sizes the window (collective; across
// hosts, the first call also makes the window written with puts), and ends with
// moeLowLatencyDispatchEnd once the rows are copied out of it.
ncclResult_t moeLowLatencyWindow(batonMoeRouting* r);
ncclResult_t moeDispatchLowLatency(batonMoeRouting* r, const void* tokens, std::vector<const char*>* data);
ncclResult_t moeLowLatencyDispatchEnd(const batonMoeRouting& r);
// Its combine writes out in the tokens' datatype itself, a token at a time (no fp32 [T x hidden]
// pass), with the same sums in the same order as the other stages.
ncclResult_t moeCombineLowLatency(const batonMoeRouting& r, const char* expertOut, const float* weights, void* out);

// batonMoeDispatchGemm's experts (moe_experts.cc): expertOut rows = recvTokens rows x the expert's
// [hidden x ffn] weights, fp32 accumulation, rounded once.
struct MoeGemm {
  size_t ffn = 0;  // 0: no GEMM (plain dispatch)
  void* recvTokens = nullptr;
  void* expertOut = nullptr;
  std::vector<const float*> wideWeights;  // per local expert, fp32 (the caller's own for float)
  std::vector<std::vector<float>> widened;
  std::vector<size_t> blockStart;  // [e * nRanks + s]: first row of local expert e's rows from s; then the total
};
// Collective: all-gathers every rank's rows per expert, so every block's place is known before
// any token arrives.
ncclResult_t moeExpertBlocks(batonMoeRouting* r, std::vector<size_t>* blockStart);
// Local expert `expert`'s rows [firstRow, firstRow + rows) of g.recvTokens into g.expertOut.
ncclResult_t moeExpertGemm(const batonMoeRouting& r, const MoeGemm& g, int expert, size_t firstRow, size_t rows);
// The low-latency dispatch that places each source's rows in recvTokens itself and multiplies them
// as soon as that source's tokens are in (moeLowLatencyWindow first).
ncclResult_t moeDispatchLowLatencyGemm(batonMoeRouting* r, const void* tokens, const MoeGemm& g);

// The backward pass's two movements, per stage: each of this rank's tokens' `bytes`-byte payload
// to the rows that token has on other ranks (*at[a]: arrival row a's token's payload, valid until
// the next operation on the communicator), and one float per arrival row back to its token's rank
// (out[t * topk + j], 0 for an empty slot).
ncclResult_t moeRedispatchNaive(const batonMoeRouting& r, const char* payload, size_t bytes,
                                std::vector<const char*>* at);
ncclResult_t moeRedispatchAlltoAllv(const batonMoeRouting& r, const char* payload, size_t bytes,
                                    std::vector<const char*>* at);
ncclResult_t moeReturnFloatsNaive(const batonMoeRouting& r, const float* perRow, float* out);
ncclResult_t moeReturnFloatsAlltoAllv(const batonMoeRouting& r, const float* perRow, float* out);

// An AlltoAllv of per-peer byte counts packed back to back on both sides; largestBlock is the
// largest block of the whole exchange (every rank passes the same, so all choose one algorithm).
ncclResult_t moeExchangeBytes(ncclComm* comm, const void* send, const std::vector<size_t>& sendBytes, void* recv,
                              const std::vector<size_t>& recvBytes, size_t largestBlock);

// dst[0..h) += w * row[0..h) (first: dst = w * row, sparing a pass that zeroes dst), the row in
// the routing's datatype (float or bfloat16), in fp32. next: the row the caller reads after this
// one (NULL: none or unknown), fetched into the cache alongside.
void moeAccumulate(ncclDataType_t type, const char* row, float w, float* dst, size_t h, bool first = false,
                   const char* next = nullptr);

// Dispatch's placement: recvTokens + rowOf[a] * rowBytes = arrival row a's bytes (data[a]), and
// with recvScales (FP8) its nScales scales, which follow the row's bytes in data[a]. Large outputs
// are written with streaming stores when stream is set (BATON_STREAM_STORES).
void moePlaceRows(const batonMoeRouting& r, const std::vector<const char*>& data, char* recvTokens, size_t rowBytes,
                  float* recvScales, size_t nScales, bool stream);

// out[0..h) = parts[0] + parts[1] + ... + parts[count-1] in fp32, in that order (0 where count is
// 0), rounded once to the datatype (float or bfloat16): a token's partials made into its output.
void moeSumRound(ncclDataType_t type, const float* const* parts, int count, size_t h, void* out);

// The weight of this rank's token t's j-th expert (1 where weights is NULL).
inline float moeWeight(const batonMoeRouting& r, const float* weights, size_t t, int j) {
  return weights ? weights[t * (size_t)r.topk + (size_t)j] : 1.f;
}

}  // namespace baton

// MoE stage 3, "normal" (include/baton/moe.h, lesson 12): the layout of DeepEP's normal kernels on
// a CPU. Dispatch moves each token once per rank as stage 2 does (moe_alltoallv.cc); combine
// reduces on the experts' rank: each token's weights go first to the ranks holding its rows (topk
// floats per token and rank), each rank sums its rows of a token in fp32 with them, and one fp32
// partial per (token, rank) returns, which the token's rank adds. A token with e rows on a rank
// returns 4 x hidden bytes there instead of e rows: for bfloat16 fewer bytes from two rows per rank
// on, for float from two too, and the token's rank adds one row per rank instead of one per expert.
#include <algorithm>
#include <cstring>
#include <vector>

#include "misc/debug.h"
#include "moe/moe_routing.h"

namespace baton {

ncclResult_t moeCombineNormal(const batonMoeRouting& r, const char* expertOut, const float* weights, float* out) {
  const int n = r.comm->nRanks, me = r.comm->rank, k = r.topk;
  const size_t h = r.hidden, rowBytes = h * r.elemSize, partialBytes = h * sizeof(float);
  // 1. The weights, to every rank a token went to (as dispatch sent it: *at[a] is row a's token's).
  std::vector<float> w(r.numTokens * (size_t)k);
  for (size_t t = 0; t < r.numTokens; ++t)
    for (int j = 0; j < k; ++j) w[t * k + j] = moeWeight(r, weights, t, j);
  std::vector<const char*> at;
  BATON_CHECK(moeRedispatchAlltoAllv(r, reinterpret_cast<const char*>(w.data()), k * sizeof(float), &at));
  // 2. One fp32 partial per (source, token) held here: rows arrive grouped by source, then token.
  // The other sources' partials go out back to back; this rank's own tokens' come last and stay
  // where they are (no copy to itself).
  std::vector<size_t> sendBytes(n), recvBytes(n), first(n), cursor(n);
  size_t held = 0, returned = 0, largestBlock = 0;
  for (int p = 0; p < n; ++p)
    if (p != me) first[p] = held, held += r.sendTokens[(size_t)p * n + me];
  first[me] = held, held += r.sendTokens[(size_t)me * n + me];
  for (int p = 0; p < n; ++p) {
    const bool other = p != me;
    cursor[p] = other ? returned : first[me], returned += other ? r.sendTokens[(size_t)me * n + p] : 0;
    sendBytes[p] = other ? r.sendTokens[(size_t)p * n + me] * partialBytes : 0;
    recvBytes[p] = other ? r.sendTokens[(size_t)me * n + p] * partialBytes : 0;
    for (int q = 0; q < n; ++q)
      if (p != q) largestBlock = std::max(largestBlock, r.sendTokens[(size_t)p * n + q] * partialBytes);
  }
  float* partial = r.scratch<float>(FusedScratch::kMoePartial, held * h);
  std::fill(partial, partial + held * h, 0.f);
  for (size_t a = 0; a < r.rows.size(); ++a) {
    const MoeRow& x = r.rows[a];
    float wt;
    memcpy(&wt, at[a] + (size_t)x.j * sizeof(float), sizeof wt);
    moeAccumulate(r.type, expertOut + (size_t)r.rowOf[a] * rowBytes, wt, &partial[(first[x.src] + x.seq) * h], h, false,
                  a + 1 < r.rows.size() ? expertOut + (size_t)r.rowOf[a + 1] * rowBytes : nullptr);
  }
  float* back = r.scratch<float>(FusedScratch::kMoeIdsRecv, returned * h);
  BATON_CHECK(moeExchangeBytes(r.comm, partial, sendBytes, back, recvBytes, largestBlock));
  // 3. Each token's partials, one per rank, in the order of its first slot on each (token order
  // within a rank, as dispatch sent them).
  for (size_t t = 0; t < r.numTokens; ++t) {
    float* dst = out + t * h;
    std::fill(dst, dst + h, 0.f);
    for (int j = 0; j < k; ++j) {
      if (!r.firstOnRank(t, j)) continue;
      const int p = r.rankOf(r.topkIdx[t * k + j]);
      const float* src = (p == me ? partial : back) + cursor[p]++ * h;
      for (size_t e = 0; e < h; ++e) dst[e] += src[e];
    }
  }
  return ncclSuccess;
}

}  // namespace baton

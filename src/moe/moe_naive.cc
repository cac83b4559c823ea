// MoE stage 1, naive (include/baton/moe.h, lesson 12): dispatch all-gathers every token and its
// expert ids, and each rank keeps the rows of its own experts; combine sums each rank's weighted
// rows for every token of every rank in fp32, and a ReduceScatter adds the ranks' sums.
#include <algorithm>
#include <cstring>

#include "enqueue.h"
#include "misc/debug.h"
#include "moe/moe_routing.h"
#include "task.h"

namespace baton {
namespace {

Task sumTask(CollFunc func, const void* send, void* recv, size_t count, ncclDataType_t type, int nRanks) {
  Task t = collTask(func, send, recv, count, type);
  t.op.kind = kOpSum;
  t.op.nRanks = nRanks;
  return t;
}

size_t largest(const std::vector<size_t>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }

}  // namespace

ncclResult_t moeDispatchNaive(batonMoeRouting* r, const void* tokens, std::vector<const char*>* data) {
  ncclComm* comm = r->comm;
  const int n = comm->nRanks, me = comm->rank, k = r->topk;
  const size_t maxT = largest(r->tokensPerRank), rowBytes = r->wireBytes;
  // This rank's tokens and ids padded to the largest count (ids -1: no expert), then gathered.
  char* mine = r->scratch<char>(FusedScratch::kMoeSend, maxT * rowBytes);
  char* all = r->scratch<char>(FusedScratch::kMoeRecv, maxT * rowBytes * n);
  int32_t* myIds = r->scratch<int32_t>(FusedScratch::kMoeIdsSend, maxT * k);
  int32_t* allIds = r->scratch<int32_t>(FusedScratch::kMoeIdsRecv, maxT * k * n);
  if (r->numTokens) memcpy(mine, tokens, r->numTokens * rowBytes);
  std::copy(r->topkIdx.begin(), r->topkIdx.end(), myIds);
  std::fill(myIds + r->topkIdx.size(), myIds + maxT * k, -1);
  if (maxT)
    BATON_CHECK(runTasksNow(comm, {sumTask(kFuncAllGather, mine, all, maxT * rowBytes, ncclInt8, n),
                                   sumTask(kFuncAllGather, myIds, allIds, maxT * k, ncclInt32, n)}));
  for (int s = 0; s < n; ++s) {
    uint32_t seq = 0;
    for (size_t t = 0; t < r->tokensPerRank[s]; ++t) {
      const int32_t* ids = &allIds[(s * maxT + t) * k];
      bool here = false;
      for (int j = 0; j < k; ++j) {
        if (ids[j] < 0 || r->rankOf(ids[j]) != me) continue;
        r->rows.push_back({s, j, ids[j] % r->perRank, seq, (uint32_t)t});
        data->push_back(&all[(s * maxT + t) * rowBytes]);
        here = true;
      }
      seq += here;
    }
  }
  return ncclSuccess;
}

ncclResult_t moeCombineNaive(const batonMoeRouting& r, const char* expertOut, const float* weights, float* out) {
  ncclComm* comm = r.comm;
  const int n = comm->nRanks, k = r.topk;
  const size_t maxT = largest(r.tokensPerRank), h = r.hidden;
  if (maxT == 0) return ncclSuccess;
  // Every rank's weights (1 where a rank passed none), for the rows this rank holds.
  std::vector<float> myW(maxT * k, 0.f), allW(maxT * k * n);
  for (size_t t = 0; t < r.numTokens; ++t)
    for (int j = 0; j < k; ++j) myW[t * k + j] = moeWeight(r, weights, t, j);
  BATON_CHECK(runTasksNow(comm, {sumTask(kFuncAllGather, myW.data(), allW.data(), maxT * k, ncclFloat, n)}));
  float* partial = r.scratch<float>(FusedScratch::kMoePartial, maxT * h * n);
  std::fill(partial, partial + maxT * h * n, 0.f);
  auto rowAt = [&](size_t a) { return expertOut + (size_t)r.rowOf[a] * h * r.elemSize; };
  for (size_t a = 0; a < r.rows.size(); ++a) {
    const MoeRow& x = r.rows[a];
    moeAccumulate(r.type, rowAt(a), allW[((size_t)x.src * maxT + x.token) * k + x.j],
                  &partial[((size_t)x.src * maxT + x.token) * h], h, false,
                  a + 1 < r.rows.size() ? rowAt(a + 1) : nullptr);
  }
  float* mine = r.scratch<float>(FusedScratch::kMoeRecv, maxT * h);
  BATON_CHECK(runTasksNow(comm, {sumTask(kFuncReduceScatter, partial, mine, maxT * h, ncclFloat, n)}));
  std::copy(mine, mine + r.numTokens * h, out);
  return ncclSuccess;
}

ncclResult_t moeRedispatchNaive(const batonMoeRouting& r, const char* payload, size_t bytes,
                                std::vector<const char*>* at) {
  const int n = r.comm->nRanks;
  const size_t maxT = largest(r.tokensPerRank);
  char* mine = r.scratch<char>(FusedScratch::kMoeSend, maxT * bytes);
  char* all = r.scratch<char>(FusedScratch::kMoeRecv, maxT * bytes * n);
  if (r.numTokens) memcpy(mine, payload, r.numTokens * bytes);
  if (maxT) BATON_CHECK(runTasksNow(r.comm, {sumTask(kFuncAllGather, mine, all, maxT * bytes, ncclInt8, n)}));
  for (const MoeRow& x : r.rows) at->push_back(all + ((size_t)x.src * maxT + x.token) * bytes);
  return ncclSuccess;
}

ncclResult_t moeReturnFloatsNaive(const batonMoeRouting& r, const float* perRow, float* out) {
  const int n = r.comm->nRanks, k = r.topk;
  const size_t maxT = largest(r.tokensPerRank);
  if (maxT == 0) return ncclSuccess;
  // Every (token, slot) of every rank is one rank's row at most: a sum that places each value.
  float* all = r.scratch<float>(FusedScratch::kMoeIdsSend, maxT * k * n);
  float* mine = r.scratch<float>(FusedScratch::kMoeIdsRecv, maxT * k);
  std::fill(all, all + maxT * k * n, 0.f);
  for (size_t a = 0; a < r.rows.size(); ++a) {
    const MoeRow& x = r.rows[a];
    all[((size_t)x.src * maxT + x.token) * k + x.j] = perRow[a];
  }
  BATON_CHECK(runTasksNow(r.comm, {sumTask(kFuncReduceScatter, all, mine, maxT * k, ncclFloat, n)}));
  std::copy(mine, mine + r.numTokens * k, out);
  return ncclSuccess;
}

}  // namespace baton

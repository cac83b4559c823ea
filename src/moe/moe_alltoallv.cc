// MoE stage 2, counts exchange then AlltoAllv (include/baton/moe.h, lesson 12): the framework
// recipe. The counts (tokens each rank sends each rank) were all-gathered with the call's agreement
// (moe_api.cc), so every rank sizes its receive side on the host, then one batonAlltoAllv moves each
// token once per destination rank with its expert ids appended; combine moves the rows back the
// same way and sums them at the token's rank.
#include <algorithm>
#include <cstring>
#include <memory>

#include "alltoall.h"
#include "alltoall/alltoall_choice.h"
#include "alltoall/alltoall_executor.h"
#include "enqueue.h"
#include "misc/debug.h"
#include "moe/moe_routing.h"

namespace baton {

// Every rank knows every count, so the algorithm may be chosen by the largest block of the whole
// exchange (the same on every rank).
ncclResult_t moeExchangeBytes(ncclComm* comm, const void* send, const std::vector<size_t>& sendBytes, void* recv,
                              const std::vector<size_t>& recvBytes, size_t largestBlock) {
  const int n = comm->nRanks;
  auto layout = std::make_shared<std::vector<size_t>>(4 * (size_t)n);
  size_t* l = layout->data();
  size_t so = 0, ro = 0;
  for (int p = 0; p < n; ++p) {
    l[p] = sendBytes[p], l[n + p] = so, l[2 * n + p] = recvBytes[p], l[3 * n + p] = ro;
    so += sendBytes[p], ro += recvBytes[p];
  }
  // The scratch is in no window unless it is: a forced window must not fail on it.
  const bool inWindow = alltoallWindowFit(comm, recv, 1) == kWindowInside;
  const int algo = chooseAlltoAll(comm, largestBlock, /*sizeAgreed=*/true, inWindow ? kWindowInside : kWindowNone);
  return runTasksNow(comm, alltoallTasks(comm, algo, send, recv, std::move(layout), /*uniform=*/false));
}

ncclResult_t moeDispatchAlltoAllv(batonMoeRouting* r, const void* tokens, std::vector<const char*>* data) {
  ncclComm* comm = r->comm;
  const int n = comm->nRanks, me = comm->rank, k = r->topk;
  const size_t tokBytes = r->wireBytes, wireRow = tokBytes + k * sizeof(int32_t);
  // Each token once per destination rank, in token order, with its ids after its elements.
  std::vector<size_t> sendBytes(n), recvBytes(n), off(n);
  size_t largestBlock = 0, sendTotal = 0, recvTotal = 0;
  for (int p = 0; p < n; ++p) {
    sendBytes[p] = r->sendTokens[(size_t)me * n + p] * wireRow,
    recvBytes[p] = r->sendTokens[(size_t)p * n + me] * wireRow;
    off[p] = sendTotal, sendTotal += sendBytes[p], recvTotal += recvBytes[p];
    for (int q = 0; q < n; ++q) largestBlock = std::max(largestBlock, r->sendTokens[(size_t)p * n + q] * wireRow);
  }
  char* send = r->scratch<char>(FusedScratch::kMoeSend, sendTotal);
  char* recv = r->scratch<char>(FusedScratch::kMoeRecv, recvTotal);
  for (size_t t = 0; t < r->numTokens; ++t) {
    const int32_t* ids = &r->topkIdx[t * k];
    for (int j = 0; j < k; ++j) {
      if (!r->firstOnRank(t, j)) continue;
      const int p = r->rankOf(ids[j]);
      char* dst = &send[off[p]];
      memcpy(dst, static_cast<const char*>(tokens) + t * tokBytes, tokBytes);
      memcpy(dst + tokBytes, ids, k * sizeof(int32_t));
      off[p] += wireRow;
    }
  }
  BATON_CHECK(moeExchangeBytes(comm, send, sendBytes, recv, recvBytes, largestBlock));
  const char* in = recv;
  for (int s = 0; s < n; ++s)
    for (uint32_t seq = 0; seq < r->sendTokens[(size_t)s * n + me]; ++seq, in += wireRow) {
      int32_t ids[kMoeMaxTopk];
      memcpy(ids, in + tokBytes, k * sizeof(int32_t));
      for (int j = 0; j < k; ++j) {
        if (ids[j] < 0 || r->rankOf(ids[j]) != me) continue;
        r->rows.push_back({s, j, ids[j] % r->perRank, seq, 0});
        data->push_back(in);
      }
    }
  return ncclSuccess;
}

ncclResult_t moeCombineAlltoAllv(const batonMoeRouting& r, const char* expertOut, const float* weights, float* out) {
  ncclComm* comm = r.comm;
  const int n = comm->nRanks, k = r.topk;
  const size_t h = r.hidden, rowBytes = h * r.elemSize;
  // Back to each source, in its (token, j) order: the arrival order, which is grouped by source.
  std::vector<size_t> sendBytes(n, 0), recvBytes(n, 0);
  for (const MoeRow& x : r.rows) sendBytes[x.src] += rowBytes;
  for (size_t t = 0; t < r.numTokens; ++t)
    for (int j = 0; j < k; ++j)
      if (r.topkIdx[t * k + j] >= 0) recvBytes[r.rankOf(r.topkIdx[t * k + j])] += rowBytes;
  char* send = r.scratch<char>(FusedScratch::kMoeSend, r.rows.size() * rowBytes);
  for (size_t a = 0; a < r.rows.size(); ++a)
    memcpy(send + a * rowBytes, expertOut + (size_t)r.rowOf[a] * rowBytes, rowBytes);
  size_t recvTotal = 0, largestBlock = 0;
  std::vector<size_t> cursor(n);
  for (int p = 0; p < n; ++p) cursor[p] = recvTotal, recvTotal += recvBytes[p];
  // Every rank's largest block: rows it returns to one source (the counts every rank holds).
  for (int p = 0; p < n; ++p)
    for (int s = 0; s < n; ++s) largestBlock = std::max(largestBlock, r.sendTokens[(size_t)s * n + p] * k * rowBytes);
  char* recv = r.scratch<char>(FusedScratch::kMoeRecv, recvTotal);
  BATON_CHECK(moeExchangeBytes(comm, send, sendBytes, recv, recvBytes, largestBlock));
  for (size_t t = 0; t < r.numTokens; ++t) {
    float* dst = out + t * h;
    std::fill(dst, dst + h, 0.f);
    for (int j = 0; j < k; ++j) {
      const int32_t id = r.topkIdx[t * k + j];
      if (id < 0) continue;
      const int p = r.rankOf(id);
      moeAccumulate(r.type, &recv[cursor[p]], moeWeight(r, weights, t, j), dst, h);
      cursor[p] += rowBytes;
    }
  }
  return ncclSuccess;
}

ncclResult_t moeRedispatchAlltoAllv(const batonMoeRouting& r, const char* payload, size_t bytes,
                                    std::vector<const char*>* at) {
  ncclComm* comm = r.comm;
  const int n = comm->nRanks, me = comm->rank, k = r.topk;
  std::vector<size_t> sendBytes(n), recvBytes(n), sendOff(n), recvOff(n);
  size_t largestBlock = 0, sendTotal = 0, recvTotal = 0;
  for (int p = 0; p < n; ++p) {
    sendBytes[p] = r.sendTokens[(size_t)me * n + p] * bytes, recvBytes[p] = r.sendTokens[(size_t)p * n + me] * bytes;
    sendOff[p] = sendTotal, recvOff[p] = recvTotal, sendTotal += sendBytes[p], recvTotal += recvBytes[p];
    for (int q = 0; q < n; ++q) largestBlock = std::max(largestBlock, r.sendTokens[(size_t)p * n + q] * bytes);
  }
  char* send = r.scratch<char>(FusedScratch::kMoeSend, sendTotal);
  char* recv = r.scratch<char>(FusedScratch::kMoeRecv, recvTotal);
  // As dispatch: each token once per rank hosting one of its experts, in token order.
  for (size_t t = 0; t < r.numTokens; ++t) {
    for (int j = 0; j < k; ++j) {
      if (!r.firstOnRank(t, j)) continue;
      const int p = r.rankOf(r.topkIdx[t * k + j]);
      memcpy(send + sendOff[p], payload + t * bytes, bytes), sendOff[p] += bytes;
    }
  }
  BATON_CHECK(moeExchangeBytes(comm, send, sendBytes, recv, recvBytes, largestBlock));
  for (const MoeRow& x : r.rows) at->push_back(recv + recvOff[x.src] + (size_t)x.seq * bytes);
  return ncclSuccess;
}

ncclResult_t moeReturnFloatsAlltoAllv(const batonMoeRouting& r, const float* perRow, float* out) {
  ncclComm* comm = r.comm;
  const int n = comm->nRanks, k = r.topk;
  std::vector<size_t> sendBytes(n, 0), recvBytes(n, 0), cursor(n);
  for (const MoeRow& x : r.rows) sendBytes[x.src] += sizeof(float);
  for (size_t t = 0; t < r.numTokens; ++t)
    for (int j = 0; j < k; ++j)
      if (r.topkIdx[t * k + j] >= 0) recvBytes[r.rankOf(r.topkIdx[t * k + j])] += sizeof(float);
  size_t recvTotal = 0, largestBlock = 0;
  for (int p = 0; p < n; ++p) cursor[p] = recvTotal / sizeof(float), recvTotal += recvBytes[p];
  for (int p = 0; p < n; ++p)
    for (int s = 0; s < n; ++s)
      largestBlock = std::max(largestBlock, r.sendTokens[(size_t)s * n + p] * k * sizeof(float));
  float* recv = r.scratch<float>(FusedScratch::kMoeIdsRecv, recvTotal / sizeof(float));
  // The arrival order is grouped by source and in each source's (token, slot) order already.
  BATON_CHECK(moeExchangeBytes(comm, perRow, sendBytes, recv, recvBytes, largestBlock));
  for (size_t t = 0; t < r.numTokens; ++t)
    for (int j = 0; j < k; ++j) {
      const int32_t id = r.topkIdx[t * k + j];
      out[t * k + j] = id < 0 ? 0.f : recv[cursor[r.rankOf(id)]++];
    }
  return ncclSuccess;
}

}  // namespace baton

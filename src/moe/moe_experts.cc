// The experts' first GEMM fused into MoE dispatch (batonMoeDispatchGemm, include/baton/moe.h,
// lesson 12): where each (local expert, source) block of rows lands in recvTokens, and the GEMM of
// one such block. The low-latency stage multiplies a source's blocks as soon as that source's
// tokens are in, while the others are still storing theirs (Comet's overlap, arXiv:2502.19811);
// the other stages multiply every expert's rows once the exchange is over.
#include <algorithm>
#include <cstring>
#include <vector>

#include "enqueue.h"
#include "fused/blas.h"
#include "misc/debug.h"
#include "moe/moe_routing.h"
#include "task.h"

namespace baton {

ncclResult_t moeExpertBlocks(batonMoeRouting* r, std::vector<size_t>* blockStart) {
  ncclComm* comm = r->comm;
  const int n = comm->nRanks, me = comm->rank, E = r->numExperts, per = r->perRank, k = r->topk;
  // Rows this rank sends each expert, all-gathered: every rank then knows where every block lands.
  std::vector<uint64_t> mine(E, 0), all((size_t)E * n);
  for (size_t t = 0; t < r->numTokens; ++t)
    for (int j = 0; j < k; ++j)
      if (r->topkIdx[t * k + j] >= 0) ++mine[r->topkIdx[t * k + j]];
  BATON_CHECK(runTasksNow(comm, {[&] {
                            Task t = collTask(kFuncAllGather, mine.data(), all.data(), (size_t)E, ncclUint64);
                            t.op.nRanks = n;
                            return t;
                          }()}));
  // Rows grouped by local expert, then source: block (e, s) starts after every earlier one.
  blockStart->assign((size_t)per * n + 1, 0);
  size_t at = 0;
  for (int e = 0; e < per; ++e)
    for (int s = 0; s < n; ++s) {
      (*blockStart)[(size_t)e * n + s] = at;
      at += all[(size_t)s * E + (size_t)me * per + e];
    }
  (*blockStart)[(size_t)per * n] = at;
  return ncclSuccess;
}

ncclResult_t moeExpertGemm(const batonMoeRouting& r, const MoeGemm& g, int expert, size_t firstRow, size_t rows) {
  if (rows == 0) return ncclSuccess;
  const size_t h = r.hidden, f = g.ffn;
  const char* a = static_cast<const char*>(g.recvTokens) + firstRow * h * r.elemSize;
  const float* af = reinterpret_cast<const float*>(a);
  if (r.type != ncclFloat) {
    float* wide = r.scratch<float>(FusedScratch::kWideIn0, rows * h);
    widenToFloat(r.type, a, wide, rows * h);
    af = wide;
  }
  const float* b = g.wideWeights[expert];
  char* c = static_cast<char*>(g.expertOut) + firstRow * f * r.elemSize;
  if (r.type == ncclFloat) {
    sgemm(false, false, rows, f, h, 1.f, af, h, b, f, 0.f, reinterpret_cast<float*>(c), f);
  } else {
    float* out = r.scratch<float>(FusedScratch::kWideOut0, rows * f);
    sgemm(false, false, rows, f, h, 1.f, af, h, b, f, 0.f, out, f);
    roundFromFloat(r.type, out, c, rows * f);
  }
  return ncclSuccess;
}

}  // namespace baton

// One rank's exact-data checks of every collective and p2p pattern (coll_check.h), shared by the
// multi-process workers.
#include "process/coll_check.h"

#include <cstdio>
#include <cstdlib>

#include "baton/alltoallv.h"
#include "baton/moe.h"
#include "collectives/alltoallv_case.h"
#include "collectives/moe_case.h"
#include "collectives/rank_case.h"
#include "collectives/wire_case.h"

namespace bt {
namespace {

// The representative set for small counts: every op on float and int8, one or two on every other
// type (the threads suite runs the full product).
const std::vector<std::pair<ncclDataType_t, std::vector<Op>>> kTypeOps = {
    {ncclFloat32, {std::begin(kAllOps), std::end(kAllOps)}},
    {ncclInt8, {std::begin(kAllOps), std::end(kAllOps)}},
    {ncclUint8, {Op::Avg}},
    {ncclInt32, {Op::Min}},
    {ncclUint32, {Op::Prod}},
    {ncclInt64, {Op::Avg}},
    {ncclUint64, {Op::Sum}},
    {ncclFloat16, {Op::Sum, Op::Max}},
    {ncclFloat64, {Op::PreMulSum}},
    {ncclBfloat16, {Op::Avg}},
    {ncclFloat8e4m3, {Op::Sum}},
    {ncclFloat8e5m2, {Op::Prod}},
};
const std::vector<ncclDataType_t> kQuickTypes = {ncclFloat32, ncclInt8, ncclFloat16, ncclFloat8e5m2};
// The large count with these (type, op) only.
const std::vector<std::pair<ncclDataType_t, Op>> kLargeCases = {
    {ncclFloat32, Op::Sum}, {ncclInt8, Op::Avg}, {ncclBfloat16, Op::Max}, {ncclFloat64, Op::PreMulSum}};

constexpr Coll kEvery[] = {Coll::AllReduce, Coll::Reduce, Coll::ReduceScatter, Coll::AllGather, Coll::Broadcast,
                           Coll::AlltoAll,  Coll::Gather, Coll::Scatter,       Coll::SendRecv};

}  // namespace

CheckReport runProcessChecks(ncclComm_t comm, int rank, int n, bool quick) {
  CheckReport rep;
  uint64_t seed = 1;
  // One case on this rank; false if the NCCL call failed (then nothing more can run).
  auto run = [&](CollCase c) {
    c.seed = seed++;
    RankBuffers b;
    ncclResult_t res = prepareRank(c, n, rank, comm, b);
    if (res == ncclSuccess) res = issueRank(c, n, rank, comm, b);
    std::string err = res == ncclSuccess ? checkRank(c, n, rank, comm, b)
                                         : std::string(ncclGetErrorString(res)) + ": " + ncclGetLastError(comm);
    if (err.empty()) {
      ++rep.passed;
      return true;
    }
    if (++rep.failed <= 10) fprintf(stderr, "rank %d: FAILED %s: %s\n", rank, describe(c, n).c_str(), err.c_str());
    if (rep.firstFailure.empty()) rep.firstFailure = describe(c, n) + ": " + err;
    return res == ncclSuccess;
  };
  const std::vector<size_t> counts = {0, 1, 7, 1023};
  std::vector<int> roots{0};
  for (int r : {n / 2, n - 1})
    if (r != roots.back()) roots.push_back(r);
  for (Coll coll : kEvery) {
    for (const auto& [type, ops] : kTypeOps) {
      if (quick && std::find(kQuickTypes.begin(), kQuickTypes.end(), type) == kQuickTypes.end()) continue;
      for (Op op : reduces(coll) ? ops : std::vector<Op>{Op::Sum})
        for (size_t count : counts)
          for (int root : rooted(coll) ? roots : std::vector<int>{0})
            for (bool inPlace : {false, true}) {
              if (inPlace && coll == Coll::SendRecv) continue;
              if (!run({coll, type, op, count, root, inPlace})) return rep;
            }
    }
    if (quick) continue;
    for (auto [type, op] : kLargeCases)
      for (bool inPlace : {false, true})
        if (!(inPlace && coll == Coll::SendRecv) && !run({coll, type, op, largeCount(coll, type, n), n - 1, inPlace}))
          return rep;
  }
  // AlltoAllv (baton's extra): uneven and zero counts, blocks out of peer order with gaps.
  for (size_t unit : {size_t(1), size_t(777), size_t(70001)}) {
    if (quick && unit > 1000) break;
    AlltoAllvRank k(rank, n, unit);
    const ncclResult_t res = k.run(comm, arenaOf(comm));
    k.finish();
    const std::string what = "AlltoAllv unit " + std::to_string(unit);
    if (res != ncclSuccess) {
      ++rep.failed;
      if (rep.firstFailure.empty())
        rep.firstFailure = what + ": " + ncclGetErrorString(res) + ": " + ncclGetLastError(comm);
      return rep;
    }
    if (k.recv == k.want) {
      ++rep.passed;
    } else {
      if (++rep.failed <= 10) fprintf(stderr, "rank %d: FAILED %s: received data differs\n", rank, what.c_str());
      if (rep.firstFailure.empty()) rep.firstFailure = what + ": received data differs";
    }
  }
  // MoE dispatch, experts, combine and both backward passes (baton's extra), every stage, against
  // moe_case.h's reference.
  const int experts = n * std::max(2, (8 + n - 1) / n);
  for (const char* stage : {"naive", "alltoallv", "normal", "lowlatency"})
    for (ncclDataType_t type : {ncclFloat, ncclBfloat16})
      for (int topk : {1, 2, 8}) {
        if (quick && topk == 8) continue;
        MoeCase c;
        c.nRanks = n, c.experts = experts, c.topk = topk, c.type = type, c.seed = (uint64_t)(n * 10 + topk);
        c.pattern = topk == 1 ? MoePattern::kOneExpert : topk == 2 ? MoePattern::kHalfTheRanks : MoePattern::kRandom;
        setenv("BATON_MOE_STAGE", stage, 1);
        const std::string what =
            std::string("MoE ") + stage + " top-" + std::to_string(topk) + (type == ncclFloat ? " float" : " bfloat16");
        const MoeRank want = moeMake(c)[rank];
        const size_t rowBytes = c.hidden * moeElemSize(type);
        std::vector<char> recv(want.wantNumRecv * rowBytes), expertOut(recv.size()), out(want.wantOut.size());
        std::vector<size_t> per(experts / n);
        size_t numRecv = 0;
        batonMoeRouting_t routing = nullptr;
        ncclResult_t res =
            batonMoeDispatch(want.tokens.data(), want.ids.data(), want.numTokens, c.hidden, experts, topk, type,
                             recv.data(), want.wantNumRecv, per.data(), &numRecv, &routing, comm, nullptr);
        std::vector<char> gradExpertOut(recv.size()), gradTokens(out.size());
        std::vector<float> gradWeights(want.numTokens * topk);
        if (res == ncclSuccess) {
          moeRunExperts(c, rank, recv.data(), per.data(), expertOut.data());
          res = batonMoeCombine(expertOut.data(), want.weights.data(), out.data(), routing, comm, nullptr);
        }
        if (res == ncclSuccess)
          res = batonMoeCombineBackward(want.gradOut.data(), want.weights.data(), expertOut.data(),
                                        gradExpertOut.data(), gradWeights.data(), routing, comm, nullptr);
        if (res == ncclSuccess)
          res = batonMoeDispatchBackward(expertOut.data(), gradTokens.data(), routing, comm, nullptr);
        batonMoeRoutingDestroy(routing);
        if (res != ncclSuccess) {
          ++rep.failed;
          if (rep.firstFailure.empty())
            rep.firstFailure = what + ": " + ncclGetErrorString(res) + ": " + ncclGetLastError(comm);
          return rep;
        }
        if (recv == want.wantRecv && per == want.wantPerExpert && out == want.wantOut &&
            gradExpertOut == want.wantGradExpertOut && gradWeights == want.wantGradWeights &&
            gradTokens == want.wantGradTokens) {
          ++rep.passed;
        } else {
          if (++rep.failed <= 10) fprintf(stderr, "rank %d: FAILED %s: results differ\n", rank, what.c_str());
          if (rep.firstFailure.empty()) rep.firstFailure = what + ": results differ";
        }
      }
  unsetenv("BATON_MOE_STAGE");
  // The wire-format collectives (baton's extra, lesson 15), bit for bit against wire_case.h.
  // The default (pipelined) stage, then the fused one where it applies (not one-shot, not the ring).
  for (const char* stage : {"auto", "fused"})
    for (batonWireFormat_t w : {batonWireMxfp8, batonWireMxfp4, batonWireNvfp4})
      for (WireColl coll : {WireColl::kAllGather, WireColl::kReduceScatter, WireColl::kAllReduceRsag,
                            WireColl::kAllReduceOneShot, WireColl::kReduceScatterRing, WireColl::kAllReduceRing})
        for (size_t count : {size_t(1), size_t(77), quick ? size_t(1000) : size_t(70001)}) {
          const ncclDataType_t type = count == 77 ? ncclHalf : ncclBfloat16;
          const bool ring = coll == WireColl::kReduceScatterRing || coll == WireColl::kAllReduceRing;
          const bool whole = ring || coll == WireColl::kAllReduceOneShot;  // these run in the naive stage
          if (std::string(stage) == "fused" && whole) continue;
          const bool fused = !whole && std::string(stage) == "fused";
          const std::string what = std::string("wire ") + batonWireName(w) + " collective " +
                                   std::to_string(int(coll)) + " count " + std::to_string(count) + " stage " + stage;
          std::vector<std::vector<char>> in(n);
          const bool rs = coll == WireColl::kReduceScatter || coll == WireColl::kReduceScatterRing;
          const size_t sendElems = rs ? count * n : count;
          for (int p = 0; p < n; ++p) in[p] = wireInputs(type, sendElems, p, false);
          // Pieces of 8 KiB: 70001 elements take 18 of them; the fused stage's steps are pieces too.
          const std::vector<char> want = fused ? wireExpected(coll, w, type, false, n, count, rank, in, 8192 / 2)
                                               : wireExpectedPieces(coll, w, type, false, n, count, rank, in, 8192);
          std::vector<char> got(want.size());
          setenv("BATON_LOWP_STAGE", stage, 1);
          setenv("BATON_LOWP_ALGO", coll == WireColl::kAllReduceOneShot ? "oneshot" : ring ? "ring" : "rsag", 1);
          setenv("BATON_LOWP_PIECE", "8192", 1);
          const ncclResult_t res =
              coll == WireColl::kAllGather
                  ? batonAllGatherWire(in[rank].data(), got.data(), count, type, w, comm, nullptr)
              : rs ? batonReduceScatterWire(in[rank].data(), got.data(), count, type, w, ncclSum, comm, nullptr)
                   : batonAllReduceWire(in[rank].data(), got.data(), count, type, w, ncclSum, comm, nullptr);
          unsetenv("BATON_LOWP_ALGO");
          unsetenv("BATON_LOWP_PIECE");
          unsetenv("BATON_LOWP_STAGE");
          if (res != ncclSuccess) {
            ++rep.failed;
            if (rep.firstFailure.empty())
              rep.firstFailure = what + ": " + ncclGetErrorString(res) + ": " + ncclGetLastError(comm);
            return rep;
          }
          if (got == want) {
            ++rep.passed;
          } else {
            if (++rep.failed <= 10) fprintf(stderr, "rank %d: FAILED %s: results differ\n", rank, what.c_str());
            if (rep.firstFailure.empty()) rep.firstFailure = what + ": results differ";
          }
        }
  return rep;
}

}  // namespace bt

// MoE dispatch and combine and their backward passes (include/baton/moe.h, lesson 12), every stage
// forced with BATON_MOE_STAGE, against the reference of moe_case.h computed without communication:
// float and bfloat16, random routings with empty slots, every token to one expert, experts only on
// half the ranks (the others' experts get no tokens), top-1, 2 and 8, a rank with no tokens and
// uneven counts on the others, with and without weights, at 1, 2, 3, 4 and 8 thread ranks; FP8
// dispatch within its bound, dispatch fused with the experts' GEMM, the low-latency stage's double
// buffer across a growth of its window. Then bad input: a rank over its capacity (every rank fails
// before anything moves), an unknown expert id, ranks that disagree, a routing of another
// communicator, FP8's and the GEMM's own arguments.
#include <memory>
#include <string>
#include <vector>

#include "baton/moe.h"
#include "collectives/harness.h"
#include "collectives/moe_case.h"
#include "fp8_blocks.h"

namespace bt {
namespace {

struct RankResult {
  std::vector<char> recv, expertOut, out, gradExpertOut, gradTokens;
  std::vector<uint8_t> fp8;   // FP8 dispatch: the e4m3 rows as received (two rows of slack after)
  std::vector<float> scales;  // and their block scales
  std::vector<float> recvF;   // and the rows dequantized (moeE4m3ToFloat x scale)
  std::vector<float> gradWeights;
  std::vector<size_t> perExpert;
  size_t numRecv = 0;
  ncclResult_t dispatch = ncclSuccess, combine = ncclSuccess;
  std::string error;
};

// Every rank dispatches, runs its experts, combines; `capacityRows(r)` sizes rank r's recvTokens.
// fp8: dispatch with batonMoeDispatchFp8, and the experts take the rows dequantized.
std::vector<RankResult> runMoe(const Comms& comms, const MoeCase& c, const std::vector<MoeRank>& ranks,
                               const std::function<size_t(int)>& capacityRows, bool fp8 = false) {
  const int n = (int)comms.size();
  const size_t es = moeElemSize(c.type), rowBytes = c.hidden * es;
  (void)es;
  std::vector<RankResult> res(n);
  runRanks(n, Drive::Threads, [&](int r) {
    RankResult& x = res[r];
    const MoeRank& in = ranks[r];
    const size_t cap = capacityRows(r);
    x.recv.assign(cap * rowBytes + 1, 0), x.perExpert.assign(c.experts / n + 1, 7);
    batonMoeRouting_t routing = nullptr;
    if (fp8) {
      const size_t blocks = c.hidden / 128;
      x.fp8.assign(cap * c.hidden, 0), x.scales.assign(cap * blocks, 0.f);
      x.dispatch = batonMoeDispatchFp8(in.tokens.data(), in.ids.data(), in.numTokens, c.hidden, c.experts, c.topk,
                                       c.type, x.fp8.data(), x.scales.data(), cap, x.perExpert.data(), &x.numRecv,
                                       &routing, comms[r], nullptr);
      x.recvF.resize(x.numRecv * c.hidden);
      for (size_t i = 0; x.dispatch == ncclSuccess && i < x.recvF.size(); ++i) {
        x.recvF[i] = moeE4m3ToFloat(x.fp8[i]) * x.scales[i / 128];
        moeStore(c.type, &x.recv[i * es], x.recvF[i]);
      }
    } else {
      x.dispatch = batonMoeDispatch(in.tokens.data(), in.ids.data(), in.numTokens, c.hidden, c.experts, c.topk, c.type,
                                    x.recv.data(), cap, x.perExpert.data(), &x.numRecv, &routing, comms[r], nullptr);
    }
    if (x.dispatch != ncclSuccess) {
      x.error = ncclGetLastError(comms[r]);
      return ncclSuccess;
    }
    x.expertOut.assign(x.numRecv * rowBytes, 0);
    moeRunExperts(c, r, x.recv.data(), x.perExpert.data(), x.expertOut.data());
    x.out.assign(in.numTokens * rowBytes, 0);
    x.combine = batonMoeCombine(x.expertOut.data(), c.weights ? in.weights.data() : nullptr, x.out.data(), routing,
                                comms[r], nullptr);
    // The backward passes, on the same routing.
    x.gradExpertOut.assign(x.numRecv * rowBytes, 0), x.gradTokens.assign(in.numTokens * rowBytes, 0);
    x.gradWeights.assign(in.numTokens * c.topk, -1.f);
    if (x.combine == ncclSuccess)
      x.combine =
          batonMoeCombineBackward(in.gradOut.data(), c.weights ? in.weights.data() : nullptr, x.expertOut.data(),
                                  x.gradExpertOut.data(), x.gradWeights.data(), routing, comms[r], nullptr);
    if (x.combine == ncclSuccess)
      x.combine = batonMoeDispatchBackward(x.expertOut.data(), x.gradTokens.data(), routing, comms[r], nullptr);
    if (x.combine != ncclSuccess) x.error = ncclGetLastError(comms[r]);
    batonMoeRoutingDestroy(routing);
    return ncclSuccess;
  });
  return res;
}

std::string describe(const MoeCase& c) {
  return std::to_string(c.nRanks) + " ranks, " + std::to_string(c.experts) + " experts, top-" + std::to_string(c.topk) +
         ", " + (c.type == ncclFloat ? "float" : "bfloat16") + ", pattern " + std::to_string((int)c.pattern) +
         (c.weights ? "" : ", no weights");
}

void checkMoe(const Comms& comms, const MoeCase& c, bool fp8 = false) {
  const std::vector<MoeRank> ranks = moeMake(c);
  const size_t rowBytes = c.hidden * moeElemSize(c.type);
  // Two rows of slack: nothing may be written past the rows received.
  auto res = runMoe(
      comms, c, ranks, [&](int r) { return ranks[r].wantNumRecv + 2; }, fp8);
  for (int r = 0; r < c.nRanks; ++r) {
    const RankResult& x = res[r];
    const MoeRank& want = ranks[r];
    ASSERT_EQ(x.dispatch, ncclSuccess) << describe(c) << ", rank " << r << ": " << x.error;
    ASSERT_EQ(x.combine, ncclSuccess) << describe(c) << ", rank " << r << ": " << x.error;
    ASSERT_EQ(x.numRecv, want.wantNumRecv) << describe(c) << ", rank " << r;
    for (size_t e = 0; e < want.wantPerExpert.size(); ++e)
      ASSERT_EQ(x.perExpert[e], want.wantPerExpert[e]) << describe(c) << ", rank " << r << ", local expert " << e;
    EXPECT_EQ(x.perExpert.back(), 7u) << "written past recvPerExpert";
    ASSERT_TRUE(std::equal(want.wantRecv.begin(), want.wantRecv.end(), x.recv.begin()))
        << describe(c) << ", rank " << r << ": received rows differ";
    for (size_t b = want.wantRecv.size(); b < x.recv.size(); ++b)
      ASSERT_EQ(x.recv[b], 0) << describe(c) << ", rank " << r << ": written past the rows received";
    ASSERT_EQ(x.out, want.wantOut) << describe(c) << ", rank " << r << ": combined output differs";
    ASSERT_EQ(x.gradExpertOut, want.wantGradExpertOut) << describe(c) << ", rank " << r << ": gradExpertOut differs";
    ASSERT_EQ(x.gradWeights, want.wantGradWeights) << describe(c) << ", rank " << r << ": gradWeights differ";
    ASSERT_EQ(x.gradTokens, want.wantGradTokens) << describe(c) << ", rank " << r << ": gradTokens differ";
    (void)rowBytes;
  }
}

class MoeStage : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { env_ = std::make_unique<ScopedEnv>(ScopedEnv::Vars{{"BATON_MOE_STAGE", GetParam()}}); }
  void TearDown() override { env_.reset(); }
  std::unique_ptr<ScopedEnv> env_;
};

TEST_P(MoeStage, EqualsTheReference) {
  for (int n : {1, 2, 3, 4, 8}) {
    const Comms& comms = cachedComms(n);
    const int experts = n * std::max(2, (8 + n - 1) / n);  // at least 8: top-8 needs 8 experts
    for (ncclDataType_t type : {ncclFloat, ncclBfloat16})
      for (MoePattern pattern : {MoePattern::kRandom, MoePattern::kOneExpert, MoePattern::kHalfTheRanks})
        for (int topk : {1, 2, 8}) {
          MoeCase c;
          c.nRanks = n, c.experts = experts, c.topk = topk, c.type = type, c.pattern = pattern;
          c.hidden = topk == 2 ? 33 : 16, c.seed = (uint64_t)(n * 100 + topk), c.weights = topk != 1;
          checkMoe(comms, c);
          if (HasFatalFailure()) return;
        }
  }
}

INSTANTIATE_TEST_SUITE_P(, MoeStage, ::testing::Values("naive", "alltoallv", "normal", "lowlatency", "auto"),
                         [](const ::testing::TestParamInfo<const char*>& i) { return std::string(i.param); });

// FP8 dispatch's rows against the bfloat16 (and float) path's, within the bound include/baton/moe.h
// states: |dequantized - x| <= 2^-4 |x| + 2^-10 s, s = the block's amax / 448. Tokens spread over
// 2^-10..2^2 so that blocks hold e4m3 normals, subnormals and zeros. Every stage, 1-4 ranks.
TEST(MoeFp8, RowsWithinTheStatedErrorOfTheExactPath) {
  for (const char* stage : {"naive", "alltoallv", "normal", "lowlatency"}) {
    ScopedEnv env(ScopedEnv::Vars{{"BATON_MOE_STAGE", stage}});
    for (int n : {1, 2, 3, 4})
      for (ncclDataType_t type : {ncclBfloat16, ncclFloat}) {
        MoeCase c;
        c.nRanks = n, c.experts = 4 * n, c.topk = 3, c.type = type, c.hidden = 384, c.fine = true;
        c.seed = (uint64_t)n + 7;
        const std::vector<MoeRank> ranks = moeMake(c);
        auto res = runMoe(
            cachedComms(n), c, ranks, [&](int r) { return ranks[r].wantNumRecv + 2; }, true);
        size_t belowNormal = 0;
        for (int r = 0; r < n; ++r) {
          const RankResult& x = res[r];
          const MoeRank& want = ranks[r];
          ASSERT_EQ(x.dispatch, ncclSuccess) << stage << ", rank " << r << ": " << x.error;
          ASSERT_EQ(x.numRecv, want.wantNumRecv);
          for (size_t e = 0; e < want.wantPerExpert.size(); ++e) {
            ASSERT_EQ(x.perExpert[e], want.wantPerExpert[e]);
          }
          for (size_t row = 0; row < x.numRecv; ++row)
            for (size_t b = 0; b < c.hidden / 128; ++b) {
              float amax = 0;
              for (size_t e = b * 128; e < (b + 1) * 128; ++e)
                amax =
                    std::max(amax, std::fabs(moeLoad(type, &want.wantRecv[(row * c.hidden + e) * moeElemSize(type)])));
              const float s = x.scales[row * (c.hidden / 128) + b];
              ASSERT_EQ(s, amax > 0 ? amax / 448.f : 1.f) << stage << ", rank " << r << ", row " << row;
              for (size_t e = b * 128; e < (b + 1) * 128; ++e) {
                const float want1 = moeLoad(type, &want.wantRecv[(row * c.hidden + e) * moeElemSize(type)]);
                const float got = x.recvF[row * c.hidden + e];
                const float bound = 0x1p-4f * std::fabs(want1) + 0x1p-10f * s;
                belowNormal += std::fabs(want1) < 0x1p-6f * s;
                ASSERT_LE(std::fabs(got - want1), bound * 1.0001f)
                    << stage << ", " << n << " ranks, rank " << r << ", row " << row << ", element " << e
                    << ": x=" << want1 << " got " << got << " scale " << s;
              }
            }
          for (size_t i = x.numRecv * c.hidden; i < x.fp8.size(); ++i) {
            ASSERT_EQ(x.fp8[i], 0) << "written past the rows";
          }
          for (size_t i = x.numRecv * (c.hidden / 128); i < x.scales.size(); ++i) {
            ASSERT_EQ(x.scales[i], 0.f) << "scales written past the rows";
          }
        }
        EXPECT_GT(belowNormal, 0u) << "the data never reached e4m3's subnormals";
      }
  }
}

// The routing of an FP8 dispatch serves combine and both backward passes in the datatype: with
// tokens in -2..2 every value quantizes exactly (x / (2/448) = 224 x is an e4m3 value), so every
// result equals the reference bit for bit.
TEST(MoeFp8, RoutingServesCombineAndBackwardPasses) {
  for (const char* stage : {"naive", "alltoallv", "normal", "lowlatency"}) {
    ScopedEnv env(ScopedEnv::Vars{{"BATON_MOE_STAGE", stage}});
    for (int n : {1, 2, 4})
      for (ncclDataType_t type : {ncclBfloat16, ncclFloat}) {
        MoeCase c;
        c.nRanks = n, c.experts = 8 * n, c.topk = 8, c.type = type, c.hidden = 128, c.seed = (uint64_t)n + 11;
        checkMoe(cachedComms(n), c, true);
        if (HasFatalFailure()) return;
      }
  }
}

// batonMoeDispatchGemm: the experts' GEMM on the received rows (multiplied per source as they land
// in the lowlatency stage), against the reference rows times weights in -1..1 (exact in fp32 and
// bfloat16); the routing it returns then serves combine exactly. Every stage, 1-4 thread ranks.
TEST(MoeGemm, EveryStageEqualsTheReference) {
  for (const char* stage : {"naive", "alltoallv", "normal", "lowlatency"}) {
    ScopedEnv env(ScopedEnv::Vars{{"BATON_MOE_STAGE", stage}});
    for (int n : {1, 2, 3, 4})
      for (ncclDataType_t type : {ncclFloat, ncclBfloat16}) {
        MoeCase c;
        c.nRanks = n, c.experts = 3 * n, c.topk = 3, c.type = type, c.hidden = 33, c.seed = (uint64_t)n + 21;
        const size_t ffn = 8, es = moeElemSize(type), h = c.hidden;
        const int per = c.experts / n;
        const auto ranks = moeMake(c);
        std::vector<std::string> failures(n);
        runRanks(n, Drive::Threads, [&](int r) {
          const MoeRank& in = ranks[r];
          // Local expert e's weights: [hidden x ffn], (global expert + i + 2 f) % 3 - 1.
          std::vector<std::vector<char>> w(per, std::vector<char>(h * ffn * es));
          std::vector<const void*> wp;
          for (int e = 0; e < per; ++e) {
            for (size_t i = 0; i < h; ++i)
              for (size_t f = 0; f < ffn; ++f)
                moeStore(type, &w[e][(i * ffn + f) * es], (float)((r * per + e + i + 2 * f) % 3) - 1.f);
            wp.push_back(w[e].data());
          }
          const size_t cap = in.wantNumRecv;
          std::vector<char> recv(cap * h * es + 1, 0), y(cap * ffn * es + 1, 0);
          std::vector<size_t> perExpert(per);
          size_t numRecv = 0;
          batonMoeRouting_t routing = nullptr;
          if (batonMoeDispatchGemm(in.tokens.data(), in.ids.data(), in.numTokens, h, c.experts, c.topk, type, wp.data(),
                                   ffn, recv.data(), y.data(), cap, perExpert.data(), &numRecv, &routing,
                                   cachedComms(n)[r], nullptr) != ncclSuccess) {
            failures[r] = std::string("dispatch: ") + ncclGetLastError(cachedComms(n)[r]);
            return ncclSuccess;
          }
          std::vector<char> want(cap * ffn * es + 1, 0);
          for (size_t row = 0, e = 0, left = perExpert.empty() ? 0 : perExpert[0]; row < numRecv; ++row, --left) {
            while (left == 0) left = perExpert[++e];
            for (size_t f = 0; f < ffn; ++f) {
              float sum = 0;
              for (size_t i = 0; i < h; ++i)
                sum += moeLoad(type, &in.wantRecv[(row * h + i) * es]) * moeLoad(type, &w[e][(i * ffn + f) * es]);
              moeStore(type, &want[(row * ffn + f) * es], sum);
            }
          }
          if (numRecv != in.wantNumRecv || perExpert != in.wantPerExpert) failures[r] = "counts differ";
          else if (!std::equal(in.wantRecv.begin(), in.wantRecv.end(), recv.begin())) failures[r] = "rows differ";
          else if (y != want) failures[r] = "expertOut differs from rows x weights";
          // The routing serves combine as a plain dispatch's does.
          std::vector<char> ex(cap * h * es), out(in.numTokens * h * es);
          moeRunExperts(c, r, recv.data(), perExpert.data(), ex.data());
          if (batonMoeCombine(ex.data(), in.weights.data(), out.data(), routing, cachedComms(n)[r], nullptr) !=
              ncclSuccess)
            failures[r] += std::string(" combine: ") + ncclGetLastError(cachedComms(n)[r]);
          else if (failures[r].empty() && out != in.wantOut) failures[r] = "combined output differs";
          batonMoeRoutingDestroy(routing);
          return ncclSuccess;
        });
        for (int r = 0; r < n; ++r)
          ASSERT_EQ(failures[r], "") << stage << ", " << n << " ranks, " << (type == ncclFloat ? "float" : "bf16")
                                     << ", rank " << r;
      }
  }
}

// The low-latency stage's window regions grow only in dispatch and its combines alternate halves:
// two routings of different sizes, the larger dispatched second (the regions grow), then combines
// of both interleaved, each combine-type call on the half after the last one's.
TEST(MoeLowLatency, RoutingsInterleavedAcrossAGrowth) {
  ScopedEnv env(ScopedEnv::Vars{{"BATON_MOE_STAGE", "lowlatency"}});
  const int n = 3;
  MoeCase c1, c2;
  c1.nRanks = c2.nRanks = n, c1.experts = c2.experts = 9;
  c1.topk = 2, c1.hidden = 16, c1.seed = 5;
  c2.topk = 8, c2.hidden = 96, c2.seed = 6, c2.type = ncclBfloat16;
  const auto in1 = moeMake(c1), in2 = moeMake(c2);
  const Comms& comms = cachedComms(n);
  std::vector<std::string> failures(n);
  runRanks(n, Drive::Threads, [&](int r) {
    auto fail = [&](const std::string& what) {
      if (failures[r].empty()) failures[r] = what + ": " + ncclGetLastError(comms[r]);
      return ncclSuccess;
    };
    struct One {
      const MoeCase* c = nullptr;
      const MoeRank* in = nullptr;
      std::vector<char> recv, y, out, grad;
      std::vector<size_t> per;
      size_t numRecv = 0;
      batonMoeRouting_t routing = nullptr;
    } a, b;
    a.c = &c1, a.in = &in1[r], b.c = &c2, b.in = &in2[r];
    for (One* x : {&a, &b}) {
      const size_t rowBytes = x->c->hidden * moeElemSize(x->c->type);
      x->recv.assign(x->in->wantNumRecv * rowBytes + 1, 0), x->per.assign(3, 0);
      if (batonMoeDispatch(x->in->tokens.data(), x->in->ids.data(), x->in->numTokens, x->c->hidden, x->c->experts,
                           x->c->topk, x->c->type, x->recv.data(), x->in->wantNumRecv, x->per.data(), &x->numRecv,
                           &x->routing, comms[r], nullptr) != ncclSuccess)
        return fail("dispatch");
      x->y.assign(x->numRecv * rowBytes, 0), x->out.assign(x->in->numTokens * rowBytes, 0);
      x->grad = x->out;
      moeRunExperts(*x->c, r, x->recv.data(), x->per.data(), x->y.data());
    }
    // a, b, a, b: combine-type calls on alternating halves, the first routing's on the grown layout.
    for (One* x : {&a, &b})
      if (batonMoeCombine(x->y.data(), x->in->weights.data(), x->out.data(), x->routing, comms[r], nullptr))
        return fail("combine");
    for (One* x : {&a, &b})
      if (batonMoeDispatchBackward(x->y.data(), x->grad.data(), x->routing, comms[r], nullptr))
        return fail("dispatch backward");
    for (One* x : {&a, &b}) {
      if (x->out != x->in->wantOut) return fail("combined output differs");
      if (x->grad != x->in->wantGradTokens) return fail("gradTokens differ");
      batonMoeRoutingDestroy(x->routing);
    }
    return ncclSuccess;
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(failures[r], "") << "rank " << r;
}

// Dispatch writes 4 MiB and more of received rows with streaming stores (src/moe/moe_row_copy.cc):
// rows of 100001 elements, so that they start at every offset from a 16-byte line, in every stage.
TEST(MoeLargeRows, StreamedRowsEqualTheReference) {
  const Comms& comms = cachedComms(2);
  for (const char* stage : {"naive", "alltoallv", "normal", "lowlatency"})
    for (ncclDataType_t type : {ncclFloat, ncclBfloat16}) {
      ScopedEnv env(ScopedEnv::Vars{{"BATON_MOE_STAGE", stage}});
      MoeCase c;
      c.nRanks = 2, c.experts = 8, c.topk = 8, c.hidden = 100001, c.type = type, c.seed = 11;
      size_t most = 0;
      for (const MoeRank& r : moeMake(c)) most = std::max(most, r.wantNumRecv * c.hidden * moeElemSize(type));
      ASSERT_GE(most, size_t(4) << 20) << "the case no longer reaches the streaming size";
      checkMoe(comms, c);
      if (HasFatalFailure()) return;
    }
}

TEST(MoeBadInput, ARankOverItsCapacityFailsEveryRankBeforeAnythingMoves) {
  const Comms& comms = cachedComms(2);
  MoeCase c;
  const auto ranks = moeMake(c);
  ASSERT_GT(ranks[0].wantNumRecv, 1u);
  auto res = runMoe(comms, c, ranks, [&](int r) { return r == 0 ? ranks[0].wantNumRecv - 1 : ranks[1].wantNumRecv; });
  const std::string want = "rank 0 would receive " + std::to_string(ranks[0].wantNumRecv) +
                           " rows (tokens x its experts chosen) but its recvCapacity is " +
                           std::to_string(ranks[0].wantNumRecv - 1) + "; no rank moved any token";
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(res[r].dispatch, ncclInvalidUsage);
    EXPECT_NE(res[r].error.find(want), std::string::npos) << res[r].error;
    EXPECT_EQ(res[r].numRecv, ranks[r].wantNumRecv);
  }
  // Nothing moved, nothing left behind: the next call is exact.
  checkMoe(comms, c);
}

TEST(MoeBadInput, UnknownExpertAndDisagreementFailOnEveryRank) {
  const Comms& comms = cachedComms(2);
  MoeCase c;
  auto ranks = moeMake(c);
  ranks[0].ids[0] = c.experts;  // no such expert
  auto res = runMoe(comms, c, ranks, [&](int r) { return ranks[r].wantNumRecv + 8; });
  EXPECT_EQ(res[0].dispatch, ncclInvalidArgument);
  EXPECT_EQ(res[1].dispatch, ncclInvalidUsage);
  // The last error is the process's (as NCCL's is), and these two ranks are threads failing at the
  // same moment: each reads its own message or the other's, never anything else.
  for (int r = 0; r < 2; ++r) {
    const bool own0 = res[r].error.find("topkIdx[0][0]=4 is not an expert id") != std::string::npos;
    const bool own1 = res[r].error.find("rank 0 rejected its own arguments") != std::string::npos;
    EXPECT_TRUE(own0 || own1) << "rank " << r << ": " << res[r].error;
  }

  // Rank 1 calls with another hidden size: both fail naming both shapes.
  ranks = moeMake(c);
  std::vector<ncclResult_t> rc(2);
  std::vector<std::string> why(2);
  runRanks(2, Drive::Threads, [&](int r) {
    std::vector<char> recv(4096 * 4);
    std::vector<size_t> per(2);
    size_t numRecv = 0;
    batonMoeRouting_t routing = nullptr;
    rc[r] =
        batonMoeDispatch(ranks[r].tokens.data(), ranks[r].ids.data(), ranks[r].numTokens, r == 1 ? 8 : 16, c.experts,
                         c.topk, c.type, recv.data(), 256, per.data(), &numRecv, &routing, comms[r], nullptr);
    why[r] = ncclGetLastError(comms[r]);
    batonMoeRoutingDestroy(routing);
    return ncclSuccess;
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(rc[r], ncclInvalidUsage) << why[r];
    EXPECT_NE(why[r].find("ranks disagree"), std::string::npos) << why[r];
  }
}

TEST(MoeBadInput, ArgumentsNamed) {
  const Comms& one = cachedComms(1);
  std::vector<char> tok(64);
  int32_t ids[2] = {0, 0};
  size_t per[4], numRecv;
  batonMoeRouting_t routing;
  auto call = [&](const int32_t* idp, size_t hidden, int experts, int topk, ncclDataType_t t) {
    return batonMoeDispatch(tok.data(), idp, 1, hidden, experts, topk, t, tok.data(), 1, per, &numRecv, &routing,
                            one[0], nullptr);
  };
  auto err = [&](ncclResult_t got, const std::string& what) {
    EXPECT_EQ(got, ncclInvalidArgument) << what;
    EXPECT_NE(std::string(ncclGetLastError(one[0])).find(what), std::string::npos) << ncclGetLastError(one[0]);
  };
  err(call(ids, 4, 2, 2, ncclFloat), "token 0 names expert 0 twice");
  err(call(ids, 4, 2, 3, ncclFloat), "topk=3 must be 1..min(numExperts=2");
  err(call(ids, 0, 2, 1, ncclFloat), "hidden is 0");
  err(call(ids, 4, 2, 1, ncclInt32), "datatype 2 is not supported");
  err(call(nullptr, 4, 2, 1, ncclFloat), "topkIdx is NULL with numTokens 1");
  const void* noWeights[2] = {tok.data(), nullptr};
  err(batonMoeDispatchGemm(tok.data(), ids, 1, 4, 2, 1, ncclFloat, noWeights, 0, tok.data(), tok.data(), 1, per,
                           &numRecv, &routing, one[0], nullptr),
      "ffn is 0");
  err(batonMoeDispatchGemm(tok.data(), ids, 1, 4, 2, 1, ncclFloat, nullptr, 0, tok.data(), nullptr, 1, per, &numRecv,
                           &routing, one[0], nullptr),
      "ffn is 0");
  err(batonMoeDispatchGemm(tok.data(), ids, 1, 4, 2, 1, ncclFloat, noWeights, 4, tok.data(), tok.data(), 1, per,
                           &numRecv, &routing, one[0], nullptr),
      "expertWeights[1] is NULL");
  err(batonMoeDispatchGemm(tok.data(), ids, 1, 4, 2, 1, ncclFloat, nullptr, 4, tok.data(), tok.data(), 1, per, &numRecv,
                           &routing, one[0], nullptr),
      "expertWeights is NULL");
  float scales[4];
  err(batonMoeDispatchFp8(tok.data(), ids, 1, 64, 2, 1, ncclFloat, tok.data(), scales, 1, per, &numRecv, &routing,
                          one[0], nullptr),
      "hidden=64 is not a multiple of 128");
  err(batonMoeDispatchFp8(tok.data(), ids, 1, 128, 2, 1, ncclFloat, tok.data(), nullptr, 1, per, &numRecv, &routing,
                          one[0], nullptr),
      "recvScales is NULL with recvCapacity 1");
  EXPECT_EQ(batonMoeCombine(tok.data(), nullptr, tok.data(), nullptr, one[0], nullptr), ncclInvalidArgument);
  // A routing used on another communicator.
  ids[1] = 1;
  ASSERT_EQ(call(ids, 4, 2, 2, ncclFloat), ncclInvalidUsage);  // capacity 1, two rows: overflow, no routing
  EXPECT_EQ(routing, nullptr);
  ASSERT_EQ(
      batonMoeDispatch(tok.data(), ids, 1, 4, 2, 1, ncclFloat, tok.data(), 2, per, &numRecv, &routing, one[0], nullptr),
      ncclSuccess)
      << ncclGetLastError(one[0]);
  const Comms& two = cachedComms(2);
  EXPECT_EQ(batonMoeCombine(tok.data(), nullptr, tok.data(), routing, two[0], nullptr), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(two[0])).find("was made by batonMoeDispatch on communicator"),
            std::string::npos);
  batonMoeRoutingDestroy(routing);
}

}  // namespace
}  // namespace bt

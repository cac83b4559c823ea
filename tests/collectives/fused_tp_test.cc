// The tensor-parallel fused operations (include/baton/fused.h, lesson 11): every stage, forward and
// backward, exact against a reference computed without communication (tests/fused/tp_check.h), on
// 1-4 thread ranks and on 2-4 processes; then the bad-input list, each error on every rank.
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "collectives/harness.h"
#include "comm.h"
#include "fused/fused_window.h"
#include "fused/tp_check.h"
#include "gtest/gtest.h"

namespace bt {
namespace {

// Sets BATON_FUSED_STAGE for the scope (before any rank thread starts: the threads only read it).
class StageEnv {
 public:
  explicit StageEnv(const char* stage) { setenv("BATON_FUSED_STAGE", stage, 1); }
  ~StageEnv() { unsetenv("BATON_FUSED_STAGE"); }
};

const std::vector<const char*> kStages = {"naive", "decomposed", "fused", "optimized"};

// Calls of this rank that went through the fused window, both patterns (0 before its first use).
uint64_t windowCalls(ncclComm_t comm) {
  const baton::FusedWindow* w = comm->fusedWindow.get();
  return w ? w->callsThrough(baton::FusedWindow::kGather) + w->callsThrough(baton::FusedWindow::kReduceScatter) : 0;
}

class FusedThreads : public ::testing::TestWithParam<int> {};

TEST_P(FusedThreads, EveryStageForwardAndBackwardExact) {
  const int n = GetParam();
  const Comms& comms = cachedComms(n);
  ASSERT_EQ((int)comms.size(), n);
  // Rows per rank 1, 17 (no tile divides it), 40 and 130; K and N small, odd and wider.
  const std::vector<tpcheck::Shape> shapes = {{(size_t)n, 3, 2},
                                              {(size_t)n * 17, 9, 33},
                                              {(size_t)n * 40, 64, 24},
                                              {(size_t)n * 3, 1, 1},
                                              {(size_t)n * 130, 40, 70}};
  uint64_t seed = 11;
  for (const char* stage : kStages) {
    StageEnv env(stage);
    const uint64_t before = windowCalls(comms[0]);
    for (ncclDataType_t t : {ncclFloat, ncclFloat16, ncclBfloat16})
      for (const tpcheck::Shape& s : shapes) {
        std::vector<std::string> errs(n);
        const std::string r = runRanks(n, Drive::Threads, [&](int rank) {
          errs[rank] = tpcheck::checkRank(comms[rank], rank, n, s, t, seed);
          return ncclSuccess;
        });
        ++seed;
        EXPECT_EQ(r, "");
        for (int rank = 0; rank < n; ++rank)
          EXPECT_EQ(errs[rank], "") << "stage " << stage << ", type " << t << ", m=" << s.m << " n=" << s.n
                                    << " k=" << s.k << ", rank " << rank;
      }
    // The fused and optimized stages reach the peers of this host through the symmetric window
    // (the rows read in place, the partials written into it); naive and decomposed never do. A
    // silent fallback to the channels would pass the checks above: this fails it.
    const uint64_t through = windowCalls(comms[0]) - before;
    const bool windowStage = std::strcmp(stage, "fused") == 0 || std::strcmp(stage, "optimized") == 0;
    if (n > 1 && windowStage) {
      EXPECT_GT(through, 0u) << "stage " << stage << " never went through the window";
    } else if (!windowStage) {
      EXPECT_EQ(through, 0u) << "stage " << stage << " went through the window";
    }
  }
}
// Either gradient alone (NULL for the other, on every rank), every stage.
TEST(FusedThreadsOptional, EachGradientAloneIsExact) {
  const Comms& comms = cachedComms(3);
  ASSERT_EQ(comms.size(), 3u);
  for (const char* stage : kStages) {
    StageEnv env(stage);
    for (int skip : {1, 2}) {
      std::vector<std::string> errs(3);
      runRanks(3, Drive::Threads, [&](int rank) {
        errs[rank] = tpcheck::checkRank(comms[rank], rank, 3, {51, 9, 7}, ncclBfloat16, 90 + skip, skip);
        return ncclSuccess;
      });
      for (int rank = 0; rank < 3; ++rank) EXPECT_EQ(errs[rank], "") << stage << " skip " << skip << " rank " << rank;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(, FusedThreads, ::testing::Values(1, 2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& i) { return std::to_string(i.param) + "ranks"; });

std::string envOr(const char* name, const char* def) {
  const char* v = getenv(name);
  return v && *v ? v : def;
}

class FusedProcesses : public ::testing::TestWithParam<int> {};

TEST_P(FusedProcesses, EveryStageExactOnEveryRank) {
  const int n = GetParam();
  const std::string run = envOr("BATON_BUILD", "build") + "/bin/baton-run";
  const std::string worker = envOr("TESTDIR", "build/tests") + "/fused_worker";
  struct stat st;
  if (stat(run.c_str(), &st) != 0 || stat(worker.c_str(), &st) != 0)
    GTEST_SKIP() << run << " or " << worker << " is not built";
  const std::string cmd = "timeout -k 5 170 " + run + " -n " + std::to_string(n) + " " + worker + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  size_t got;
  while ((got = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, got);
  const int status = pclose(p);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd << "\n" << out;
  std::map<int, int> passed;
  const std::regex line(R"(rank (\d+): (\d+) fused checks passed, 0 failed)");
  for (std::sregex_iterator it(out.begin(), out.end(), line), end; it != end; ++it)
    passed[std::stoi((*it)[1])] = std::stoi((*it)[2]);
  ASSERT_EQ((int)passed.size(), n) << out;
  for (auto& [r, k] : passed)
    EXPECT_EQ(k, 1 + 4 * 3 * 4) << "rank " << r << "\n" << out;  // device API + stages x types x shapes
}
INSTANTIATE_TEST_SUITE_P(, FusedProcesses, ::testing::Values(2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& i) { return std::to_string(i.param) + "processes"; });

// ---- bad input --------------------------------------------------------------------------------

std::string lastError(ncclComm_t c) { return ncclGetLastError(c); }

TEST(FusedBadInput, OneRankArgumentErrorsNameTheArgument) {
  const Comms& one = cachedComms(1);
  ASSERT_EQ(one.size(), 1u);
  ncclComm_t c = one[0];
  // Inputs that would give non-zero products, an output filled with a pattern no GEMM writes.
  std::vector<float> a(64, 1.f), b(64, 1.f), out(64);
  memset(out.data(), 0xA5, out.size() * sizeof(float));
  const std::vector<float> untouched = out;
  EXPECT_EQ(batonAllGatherGemm(a.data(), b.data(), out.data(), nullptr, 4, 4, 4, ncclInt32, c, nullptr),
            ncclInvalidArgument);
  EXPECT_NE(lastError(c).find("datatype"), std::string::npos) << lastError(c);
  EXPECT_EQ(batonAllGatherGemm(a.data(), b.data(), nullptr, nullptr, 4, 4, 4, ncclFloat, c, nullptr),
            ncclInvalidArgument);
  EXPECT_NE(lastError(c).find("c is NULL"), std::string::npos) << lastError(c);
  EXPECT_EQ(batonGemmReduceScatter(a.data(), b.data(), b.data() + 3, 4, 4, 4, ncclFloat, c, nullptr),
            ncclInvalidArgument);
  EXPECT_NE(lastError(c).find("overlaps"), std::string::npos) << lastError(c);
  EXPECT_EQ(batonAllGatherGemm(a.data(), b.data(), out.data(), nullptr, 4, 4, 4, ncclFloat, nullptr, nullptr),
            ncclInvalidArgument);
  EXPECT_EQ(batonAllGatherGemm(a.data(), b.data(), out.data(), nullptr, (size_t)1 << 40, 4, 4, ncclFloat, c, nullptr),
            ncclInvalidArgument);
  EXPECT_NE(lastError(c).find("BLAS dimension"), std::string::npos) << lastError(c);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(batonAllGatherGemm(a.data(), b.data(), out.data(), nullptr, 4, 4, 4, ncclFloat, c, nullptr),
            ncclInvalidUsage);
  EXPECT_NE(lastError(c).find("inside ncclGroupStart"), std::string::npos) << lastError(c);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
  {
    StageEnv env("sideways");
    EXPECT_EQ(batonAllGatherGemm(a.data(), b.data(), out.data(), nullptr, 4, 4, 4, ncclFloat, c, nullptr),
              ncclInvalidArgument);
    EXPECT_NE(lastError(c).find("BATON_FUSED_STAGE=sideways"), std::string::npos) << lastError(c);
  }
  // Nothing was written by any refused call.
  EXPECT_EQ(memcmp(out.data(), untouched.data(), out.size() * sizeof(float)), 0);
}

// One rank alone passes a bad argument: it fails with its reason, the others at once naming it
// (not after a wait for a rank that never joins), and the communicator still works.
TEST(FusedBadInput, OneRanksBadArgumentFailsEveryRankAtOnce) {
  const Comms& comms = cachedComms(2);
  ASSERT_EQ(comms.size(), 2u);
  std::vector<float> a(256, 1.f), b(256, 1.f);
  std::vector<std::vector<float>> c(2, std::vector<float>(256));
  for (int bad = 0; bad < 3; ++bad) {
    std::vector<ncclResult_t> res(2);
    std::vector<std::string> msg(2);
    runRanks(2, Drive::Threads, [&](int r) {
      float* out = r == 1 && bad == 0 ? nullptr : c[r].data();
      const size_t m = r == 1 && bad == 1 ? 7 : 8;
      const ncclDataType_t t = r == 1 && bad == 2 ? ncclInt32 : ncclFloat;
      res[r] = batonAllGatherGemm(a.data(), b.data(), out, nullptr, m, 4, 4, t, comms[r], nullptr);
      msg[r] = lastError(comms[r]);
      return ncclSuccess;
    });
    // The codes say who failed how; thread ranks failing at once share the process's last error (as
    // NCCL's), so each may read either message.
    const char* own = bad == 0 ? "c is NULL" : bad == 1 ? "m=7" : "datatype";
    auto either = [&](const std::string& m) {
      return m.find(own) != std::string::npos || m.find("rank 1 rejected its own arguments") != std::string::npos;
    };
    EXPECT_EQ(res[1], ncclInvalidArgument) << msg[1];
    EXPECT_TRUE(either(msg[1])) << msg[1];
    EXPECT_EQ(res[0], ncclInvalidUsage) << msg[0];
    EXPECT_TRUE(either(msg[0])) << msg[0];
  }
  const std::string ok = runRanks(2, Drive::Threads, [&](int r) {
    return batonAllGatherGemm(a.data(), b.data(), c[r].data(), nullptr, 8, 4, 4, ncclFloat, comms[r], nullptr);
  });
  EXPECT_EQ(ok, "");
}

TEST(FusedBadInput, RowsThatDoNotDivideAndMismatchedShapesFailOnEveryRank) {
  const Comms& comms = cachedComms(2);
  ASSERT_EQ(comms.size(), 2u);
  std::vector<float> a(256, 1.f), b(256, 1.f);
  std::vector<std::vector<float>> c(2, std::vector<float>(256));
  {  // every rank: the rows do not divide by the rank count
    std::vector<ncclResult_t> res(2);
    std::vector<std::string> msg(2);
    runRanks(2, Drive::Threads, [&](int r) {
      res[r] = batonAllGatherGemm(a.data(), b.data(), c[r].data(), nullptr, 5, 4, 4, ncclFloat, comms[r], nullptr);
      msg[r] = lastError(comms[r]);
      return ncclSuccess;
    });
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(res[r], ncclInvalidArgument);
      EXPECT_NE(msg[r].find("m=5"), std::string::npos) << msg[r];
    }
  }
  for (const char* stage : kStages) {
    StageEnv env(stage);
    std::vector<ncclResult_t> res(2);
    std::vector<std::string> msg(2);
    runRanks(2, Drive::Threads, [&](int r) {
      res[r] = batonAllGatherGemm(a.data(), b.data(), c[r].data(), nullptr, 8, 4, r == 0 ? 4 : 5, ncclFloat, comms[r],
                                  nullptr);
      msg[r] = lastError(comms[r]);
      return ncclSuccess;
    });
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(res[r], ncclInvalidUsage) << stage << " rank " << r;
      EXPECT_NE(msg[r].find("ranks disagree"), std::string::npos) << msg[r];
      EXPECT_NE(msg[r].find("k=4"), std::string::npos) << msg[r];
      EXPECT_NE(msg[r].find("k=5"), std::string::npos) << msg[r];
    }
    // The communicator still works afterwards.
    const std::string ok = runRanks(2, Drive::Threads, [&](int r) {
      return batonAllGatherGemm(a.data(), b.data(), c[r].data(), nullptr, 8, 4, 4, ncclFloat, comms[r], nullptr);
    });
    EXPECT_EQ(ok, "");
    EXPECT_EQ(c[0][0], 4.f);
  }
  {  // auto (BATON_FUSED_STAGE unset) is the optimized stage when every rank is on one host
    std::vector<std::string> msg(2);
    runRanks(2, Drive::Threads, [&](int r) {
      batonAllGatherGemm(a.data(), b.data(), c[r].data(), nullptr, 8, 4, r == 0 ? 4 : 5, ncclFloat, comms[r], nullptr);
      msg[r] = lastError(comms[r]);
      return ncclSuccess;
    });
    for (int r = 0; r < 2; ++r) EXPECT_NE(msg[r].find("stage optimized"), std::string::npos) << msg[r];
  }
}

}  // namespace
}  // namespace bt

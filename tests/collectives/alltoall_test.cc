// AlltoAll's algorithms (lesson 12): direct, pairwise and Bruck, each forced with
// BATON_ALLTOALL_ALGO on communicators of its own (the variable is read at init), checked exactly
// against the reference of the collective suites: every datatype x counts {0,1,7,1023} x both
// placements at 1..8 ranks (drives taking turns), the large count (blocks of 4 MiB / n) at 2, 3, 5
// and 8 ranks, AlltoAlls issued in one group with other AlltoAlls and with sends and receives on
// the same connections, and the COLL log line naming the algorithm that ran. AlltoAllv on every
// algorithm: uneven and zero counts, blocks out of peer order with gaps between them.
#include <cstdint>
#include <vector>

#include "baton/alltoallv.h"
#include "baton/tuner.h"
#include "collectives/alltoallv_case.h"
#include "collectives/harness.h"

namespace bt {
namespace {

class AlltoAllAlgo : public ::testing::TestWithParam<const char*> {
 protected:
  // Communicators for n ranks running GetParam(), destroyed at the end of the test.
  const Comms& comms(int n) {
    ScopedEnv env(ScopedEnv::Vars{{"BATON_ALLTOALL_ALGO", GetParam()}});
    made_.push_back(initAll(n));
    return made_.back();
  }
  void TearDown() override {
    for (Comms& c : made_) destroyComms(c);
  }

 private:
  std::vector<Comms> made_;
};

TEST_P(AlltoAllAlgo, EveryTypeAndSmallCount) {
  for (int n = 1; n <= 8; ++n) {
    const Comms& c = comms(n);
    ASSERT_EQ((int)c.size(), n);
    for (ncclDataType_t type : kAllTypes) runSmall(c, Coll::AlltoAll, type);
  }
}

TEST_P(AlltoAllAlgo, LargeCount) {
  for (int n : {2, 3, 5, 8}) {
    const Comms& c = comms(n);
    for (ncclDataType_t type : {ncclInt8, ncclFloat32, ncclFloat64}) runLarge(c, Coll::AlltoAll, type);
  }
}

// Several AlltoAlls, then sends and receives, in one group on the same ranks: both ends of every
// connection must see the messages in the same order.
TEST_P(AlltoAllAlgo, GroupedWithOtherPointToPoint) {
  for (int n : {3, 4}) {
    const Comms& c = comms(n);
    for (Drive d : {Drive::Group, Drive::Threads}) {
      std::vector<GroupItem> items = mixedCases(c, Coll::AlltoAll, 3, 7);
      for (GroupItem& it : mixedCases(c, Coll::SendRecv, 2, 8)) items.push_back(std::move(it));
      runGrouped(items, d);
    }
  }
}

// AlltoAllv with uneven and zero counts, blocks out of peer order with gaps (alltoallv_case.h).
TEST_P(AlltoAllAlgo, AlltoAllvUnevenAndZeroCounts) {
  for (int n : {1, 2, 3, 5, 8}) {
    const Comms& c = comms(n);
    for (size_t unit : {size_t(1), size_t(777), size_t(70001)}) {
      for (Drive drive : {Drive::Threads, Drive::Group}) {
        std::vector<AlltoAllvRank> ranks;
        for (int r = 0; r < n; ++r) ranks.emplace_back(r, n, unit);
        ASSERT_EQ(runRanks(n, drive,
                           [&](int r) {
                             AlltoAllvRank& k = ranks[r];
                             return batonAlltoAllv(k.send.data(), k.sendCounts.data(), k.sendDispls.data(),
                                                   k.recv.data(), k.recvCounts.data(), k.recvDispls.data(), ncclUint32,
                                                   c[r], nullptr);
                           }),
                  "")
            << n << " ranks, unit " << unit;
        for (int r = 0; r < n; ++r)
          ASSERT_EQ(ranks[r].recv, ranks[r].want)
              << "rank " << r << " of " << n << ", unit " << unit << ", " << driveName(drive);
      }
    }
  }
}

// Bruck announces its sizes, so a receive count that differs from the matching send fails on the
// receiving rank naming both, and nothing hangs.
TEST_P(AlltoAllAlgo, AlltoAllvMismatchedCountUnderBruck) {
  if (std::string(GetParam()) != "bruck") GTEST_SKIP() << "only Bruck announces sizes";
  const Comms& c = comms(3);
  std::vector<AlltoAllvRank> ranks;
  for (int r = 0; r < 3; ++r) ranks.emplace_back(r, 3, 4);
  ranks[1].recvCounts[0] += 1;  // rank 1 expects one more element from rank 0 than rank 0 sends
  ranks[1].recv.resize(ranks[1].recv.size() + 1);
  std::vector<ncclResult_t> res(3);
  runRanks(3, Drive::Threads, [&](int r) {
    AlltoAllvRank& k = ranks[r];
    res[r] = batonAlltoAllv(k.send.data(), k.sendCounts.data(), k.sendDispls.data(), k.recv.data(), k.recvCounts.data(),
                            k.recvDispls.data(), ncclUint32, c[r], nullptr);
    return ncclSuccess;
  });
  EXPECT_EQ(res[0], ncclSuccess);
  EXPECT_EQ(res[2], ncclSuccess);
  EXPECT_NE(res[1], ncclSuccess);
  const size_t sent = ranks[0].sendCounts[1] * 4;
  const std::string want =
      "rank 1 expected " + std::to_string(sent + 4) + " bytes from rank 0, which sent " + std::to_string(sent);
  EXPECT_NE(std::string(ncclGetLastError(c[1])).find(want), std::string::npos) << ncclGetLastError(c[1]);
}

TEST_P(AlltoAllAlgo, TheLogNamesTheAlgorithm) {
  const std::string log = captureLog("COLL", [&] {
    const Comms& c = comms(4);
    EXPECT_EQ(runCase(c, {Coll::AlltoAll, ncclInt32, Op::Sum, 100}, Drive::Threads), "");
  });
  const std::string want = std::string("algorithm ") + (std::string(GetParam()) == "auto" ? "direct" : GetParam());
  EXPECT_NE(log.find("AlltoAll: sendbuff"), std::string::npos) << log;
  EXPECT_NE(log.find(want), std::string::npos) << log;
}

// auto across nodes (BATON_RANKS_PER_NODE=2 makes 4 thread ranks two nodes): Bruck for an
// AlltoAll of at most BATON_ALLTOALL_BRUCK_BYTES, direct above it and for every AlltoAllv (whose
// sizes differ per rank, so no rank could choose by them alike).
TEST(AlltoAllAuto, BruckAcrossNodesForSmallBuffersDirectOtherwise) {
  ScopedEnv env(ScopedEnv::Vars{{"BATON_RANKS_PER_NODE", "2"}, {"BATON_ALLTOALL_ALGO", nullptr}});
  Comms c = initAll(4);
  ASSERT_EQ(c.size(), 4u);
  const std::string log = captureLog("COLL", [&] {
    EXPECT_EQ(runCase(c, {Coll::AlltoAll, ncclInt32, Op::Sum, 100}, Drive::Threads), "");  // 1.6 KiB: Bruck
    EXPECT_EQ(runCase(c, {Coll::AlltoAll, ncclInt32, Op::Sum, 8192}, Drive::Group), "");   // 128 KiB: direct
    std::vector<AlltoAllvRank> ranks;
    for (int r = 0; r < 4; ++r) ranks.emplace_back(r, 4, 3);
    EXPECT_EQ(runRanks(4, Drive::Threads,
                       [&](int r) {
                         AlltoAllvRank& k = ranks[r];
                         return batonAlltoAllv(k.send.data(), k.sendCounts.data(), k.sendDispls.data(), k.recv.data(),
                                               k.recvCounts.data(), k.recvDispls.data(), ncclUint32, c[r], nullptr);
                       }),
              "");
    for (int r = 0; r < 4; ++r) EXPECT_EQ(ranks[r].recv, ranks[r].want) << "rank " << r;
  });
  // What --explain prints says the same, with the rule that decided.
  const char *algo = nullptr, *why = nullptr;
  ASSERT_EQ(batonTunerChooseAlltoAll(c[0], 400, &algo, &why), ncclSuccess);
  EXPECT_STREQ(algo, "bruck");
  EXPECT_NE(std::string(why).find("buffer <= BATON_ALLTOALL_BRUCK_BYTES"), std::string::npos) << why;
  ASSERT_EQ(batonTunerChooseAlltoAll(c[0], 8192 * 4, &algo, nullptr), ncclSuccess);
  EXPECT_STREQ(algo, "direct");
  EXPECT_EQ(batonTunerAlltoAllBruckBytes(c[0]), 65536u);
  EXPECT_EQ(batonTunerChooseAlltoAll(c[0], 8, nullptr, &why), ncclInvalidArgument);
  EXPECT_EQ(batonTunerChooseAlltoAll(nullptr, 8, &algo, &why), ncclInvalidArgument);
  destroyComms(c);
  size_t bruck = 0, direct = 0;
  for (size_t at = log.find("algorithm bruck"); at != std::string::npos; at = log.find("algorithm bruck", at + 1))
    ++bruck;
  for (size_t at = log.find("algorithm direct"); at != std::string::npos; at = log.find("algorithm direct", at + 1))
    ++direct;
  EXPECT_EQ(bruck, 4u) << log;
  EXPECT_EQ(direct, 8u) << log;
}

INSTANTIATE_TEST_SUITE_P(, AlltoAllAlgo, ::testing::Values("direct", "pairwise", "bruck", "auto"),
                         [](const ::testing::TestParamInfo<const char*>& i) { return std::string(i.param); });

}  // namespace
}  // namespace bt

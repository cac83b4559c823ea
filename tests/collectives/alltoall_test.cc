// AlltoAll's algorithms (lesson 12): direct, pairwise and Bruck, each forced with
// BATON_ALLTOALL_ALGO on communicators of its own (the variable is read at init), checked exactly
// against the reference of the collective suites: every datatype x counts {0,1,7,1023} x both
// placements at 1..8 ranks (drives taking turns), the large count (blocks of 4 MiB / n) at 2, 3, 5
// and 8 ranks, AlltoAlls issued in one group with other AlltoAlls and with sends and receives on
// the same connections, and the COLL log line naming the algorithm that ran.
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

TEST_P(AlltoAllAlgo, TheLogNamesTheAlgorithm) {
  const std::string log = captureLog("COLL", [&] {
    const Comms& c = comms(4);
    EXPECT_EQ(runCase(c, {Coll::AlltoAll, ncclInt32, Op::Sum, 100}, Drive::Threads), "");
  });
  const std::string want = std::string("algorithm ") + (std::string(GetParam()) == "auto" ? "direct" : GetParam());
  EXPECT_NE(log.find("AlltoAll: sendbuff"), std::string::npos) << log;
  EXPECT_NE(log.find(want), std::string::npos) << log;
}

INSTANTIATE_TEST_SUITE_P(, AlltoAllAlgo, ::testing::Values("direct", "pairwise", "bruck", "auto"),
                         [](const ::testing::TestParamInfo<const char*>& i) { return std::string(i.param); });

}  // namespace
}  // namespace bt

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
  bool window() const { return std::string(GetParam()) == "window"; }
  // Communicators for n ranks running GetParam(), destroyed at the end of the test. "window" puts
  // every buffer of the suite's cases in a symmetric window (test_memory.h), where it applies.
  const Comms& comms(int n) {
    ScopedEnv env(ScopedEnv::Vars{{"BATON_ALLTOALL_ALGO", GetParam()}, {"BATON_TEST_MEMORY", "window"}});
    made_.push_back(initAll(n));
    if (window()) {
      EXPECT_EQ(attachTestMemory(made_.back()), ncclSuccess) << ncclGetLastError(nullptr);
    }
    return made_.back();
  }
  void TearDown() override {
    for (Comms& c : made_) {
      // A test that made a rank fail left its communicator in error: its window cannot be
      // deregistered any more (the test process keeps the arena).
      const ncclResult_t res = detachTestMemory(c);
      if (!failedAny(c)) {
        EXPECT_EQ(res, ncclSuccess) << ncclGetLastError(nullptr);
      }
      destroyComms(c);
    }
  }
  static bool failedAny(const Comms& c) {
    for (ncclComm_t comm : c) {
      ncclResult_t async = ncclSuccess;
      if (ncclCommGetAsyncError(comm, &async) != ncclSuccess || async != ncclSuccess) return true;
    }
    return false;
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
        ASSERT_EQ(runRanks(n, drive, [&](int r) { return ranks[r].run(c[r], arenaOf(c[r])); }), "")
            << n << " ranks, unit " << unit;
        for (AlltoAllvRank& k : ranks) k.finish();
        for (int r = 0; r < n; ++r)
          ASSERT_EQ(ranks[r].recv, ranks[r].want)
              << "rank " << r << " of " << n << ", unit " << unit << ", " << driveName(drive);
      }
    }
  }
}

// Bruck announces its sizes and window posts them, so a receive count that differs from the
// matching send fails on the receiving rank naming both (with window on the sender too, which
// moves nothing into the receiver), and nothing hangs.
TEST_P(AlltoAllAlgo, AlltoAllvMismatchedCount) {
  if (!window() && std::string(GetParam()) != "bruck") GTEST_SKIP() << "only Bruck and window announce sizes";
  const Comms& c = comms(3);
  std::vector<AlltoAllvRank> ranks;
  for (int r = 0; r < 3; ++r) ranks.emplace_back(r, 3, 4);
  ranks[1].recvCounts[0] += 1;  // rank 1 expects one more element from rank 0 than rank 0 sends
  ranks[1].recv.resize(ranks[1].recv.size() + 1);
  std::vector<ncclResult_t> res(3);
  std::vector<std::string> err(3);
  runRanks(3, Drive::Threads, [&](int r) {
    res[r] = ranks[r].run(c[r], arenaOf(c[r]));
    err[r] = ncclGetLastError(c[r]);
    return ncclSuccess;
  });
  for (AlltoAllvRank& k : ranks) k.finish();
  // A rank that is done may still learn of the failure first (a failing rank announces it, and its
  // peers' last waits give up): then it returns ncclRemoteError instead of success. Nothing hangs.
  auto doneOrTold = [](ncclResult_t r) { return r == ncclSuccess || r == ncclRemoteError; };
  EXPECT_TRUE(doneOrTold(res[2])) << res[2];
  EXPECT_NE(res[1], ncclSuccess);
  const size_t sent = ranks[0].sendCounts[1] * 4;
  const std::string atReceiver =
      "rank 1 expected " + std::to_string(sent + 4) + " bytes from rank 0, which sent " + std::to_string(sent);
  const std::string atSender =
      "rank 0 sends " + std::to_string(sent) + " bytes to rank 1, which expects " + std::to_string(sent + 4);
  // Thread ranks failing together share the process's last error (as NCCL's): either may be read.
  auto names = [&](const std::string& e) {
    return e.find(atReceiver) != std::string::npos || e.find(atSender) != std::string::npos;
  };
  // The rank that failed first found the mismatch itself; the other may have been told first.
  EXPECT_TRUE(names(err[0]) || names(err[1])) << err[0] << "\n" << err[1];
  if (window()) {
    EXPECT_NE(res[0], ncclSuccess);
    // Rank 2's blocks moved both ways; rank 0's to rank 1 did not.
    for (size_t i = 0; i < ranks[2].recv.size(); ++i) ASSERT_EQ(ranks[2].recv[i], ranks[2].want[i]) << i;
    for (size_t i = 0; i < ranks[1].recvCounts[0]; ++i)
      ASSERT_EQ(ranks[1].recv[ranks[1].recvDispls[0] + i], AlltoAllvRank::kGap) << i;
  } else {
    EXPECT_TRUE(doneOrTold(res[0])) << res[0];
  }
}

// Forced window on buffers outside windows runs direct, and the COLL line says why.
TEST(AlltoAllWindow, ForcedWithoutAWindowRunsDirect) {
  ScopedEnv env(ScopedEnv::Vars{{"BATON_ALLTOALL_ALGO", "window"}, {"BATON_TEST_MEMORY", "plain"}});
  Comms c = initAll(3);
  const std::string log = captureLog("COLL", [&] {
    EXPECT_EQ(runCase(c, {Coll::AlltoAll, ncclInt32, Op::Sum, 100}, Drive::Threads), "");
  });
  destroyComms(c);
  EXPECT_NE(log.find("algorithm direct (window forced by BATON_ALLTOALL_ALGO, but the communicator has no symmetric "
                     "window on one host"),
            std::string::npos)
      << log;
}

// A rank whose AlltoAllv block would reach past its window fails naming it, the sender fails naming
// that rank, and nothing moves (the sender never stores into the peer's memory).
TEST(AlltoAllWindow, BlockPastTheWindowFailsOnBothRanks) {
  ScopedEnv env(ScopedEnv::Vars{{"BATON_ALLTOALL_ALGO", "auto"}, {"BATON_TEST_MEMORY", "window"}});
  Comms c = initAll(2);
  ASSERT_EQ(attachTestMemory(c), ncclSuccess) << ncclGetLastError(nullptr);
  std::vector<char*> recv(2), send(2);
  for (int r = 0; r < 2; ++r) recv[r] = arenaOf(c[r])->alloc(4096), send[r] = arenaOf(c[r])->alloc(4096);
  // Rank 0 sends 16 elements to rank 1, which places them 16 bytes before its window's end (recv is
  // the arena's first block, at the window's base).
  const size_t past = (Arena::kBytes - 16) / 4;
  const std::vector<std::vector<size_t>> sendCounts = {{0, 16}, {0, 0}}, recvCounts = {{0, 0}, {16, 0}},
                                         recvDispls = {{0, 0}, {past, 0}};
  const std::vector<size_t> zero = {0, 0};
  std::vector<ncclResult_t> res(2);
  std::vector<std::string> err(2);
  ASSERT_EQ(runRanks(2, Drive::Threads,
                     [&](int r) {
                       res[r] = batonAlltoAllv(send[r], sendCounts[r].data(), zero.data(), recv[r],
                                               recvCounts[r].data(), recvDispls[r].data(), ncclUint32, c[r], nullptr);
                       err[r] = ncclGetLastError(c[r]);
                       return ncclSuccess;
                     }),
            "");
  EXPECT_EQ(res[0], ncclInvalidUsage);
  EXPECT_EQ(res[1], ncclInvalidUsage);
  const std::string atReceiver = "rank 1's block from rank 0 (64 bytes at offset " + std::to_string(past * 4) +
                                 " of recvbuff) reaches past its window of " + std::to_string(Arena::kBytes) + " bytes";
  const std::string atSender = "rank 1's blocks do not lie in its window: nothing moved to it";
  for (int r = 0; r < 2; ++r)
    EXPECT_TRUE(err[r].find(atReceiver) != std::string::npos || err[r].find(atSender) != std::string::npos)
        << "rank " << r << ": " << err[r];
  detachTestMemory(c);  // not checked: the ranks' errors may have ended the communicator
  destroyComms(c);
}

// A rank that receives nothing may pass recvbuff NULL: it goes with its peers, whose buffers lie in
// a window, instead of choosing direct on its own (which would leave everyone waiting).
TEST(AlltoAllWindow, ARankReceivingNothingPassesNoBuffer) {
  ScopedEnv env(ScopedEnv::Vars{{"BATON_ALLTOALL_ALGO", "auto"}, {"BATON_TEST_MEMORY", "window"}});
  Comms c = initAll(3);
  ASSERT_EQ(attachTestMemory(c), ncclSuccess) << ncclGetLastError(nullptr);
  // Ranks 0 and 1 swap 5 elements each way and keep 3; rank 2 sends 7 to each and receives nothing.
  const std::vector<std::vector<size_t>> sendCounts = {{3, 5, 0}, {5, 3, 0}, {7, 7, 0}},
                                         recvCounts = {{3, 5, 7}, {5, 3, 7}, {0, 0, 0}};
  std::vector<uint32_t*> send(3), recv(3, nullptr);
  std::vector<std::vector<size_t>> sdispls(3), rdispls(3);
  for (int r = 0; r < 3; ++r) {
    send[r] = reinterpret_cast<uint32_t*>(arenaOf(c[r])->alloc(4096));
    for (int p = 0, at = 0; p < 3; at += (int)sendCounts[r][p++]) {
      sdispls[r].push_back(at);
      for (size_t i = 0; i < sendCounts[r][p]; ++i) send[r][at + i] = 1000u * r + 100u * p + (uint32_t)i;
    }
    for (int p = 0, at = 0; p < 3; at += (int)recvCounts[r][p++]) rdispls[r].push_back(at);
    if (r < 2) recv[r] = reinterpret_cast<uint32_t*>(arenaOf(c[r])->alloc(4096));
  }
  const std::string log = captureLog("COLL", [&] {
    EXPECT_EQ(runRanks(3, Drive::Threads,
                       [&](int r) {
                         return batonAlltoAllv(send[r], sendCounts[r].data(), sdispls[r].data(), recv[r],
                                               recvCounts[r].data(), rdispls[r].data(), ncclUint32, c[r], nullptr);
                       }),
              "");
  });
  for (int r = 0; r < 2; ++r)
    for (int s = 0; s < 3; ++s)
      for (size_t i = 0; i < recvCounts[r][s]; ++i)
        ASSERT_EQ(recv[r][rdispls[r][s] + i], 1000u * s + 100u * r + (uint32_t)i) << r << " from " << s << " " << i;
  size_t window = 0;
  for (size_t at = log.find("algorithm window"); at != std::string::npos; at = log.find("algorithm window", at + 1))
    ++window;
  EXPECT_EQ(window, 3u) << log;
  EXPECT_EQ(detachTestMemory(c), ncclSuccess) << ncclGetLastError(nullptr);
  destroyComms(c);
}

// Forced window, one rank's buffer outside the window: every rank fails with a message (the
// others name it) instead of that rank sending while the rest wait.
TEST(AlltoAllWindow, ForcedWithOneBufferOutsideFailsEverywhere) {
  ScopedEnv env(ScopedEnv::Vars{{"BATON_ALLTOALL_ALGO", "window"}, {"BATON_TEST_MEMORY", "window"}});
  Comms c = initAll(3);
  ASSERT_EQ(attachTestMemory(c), ncclSuccess) << ncclGetLastError(nullptr);
  const size_t count = 16;
  std::vector<char*> send(3), recv(3);
  std::vector<uint32_t> plain(3 * count, 0);
  for (int r = 0; r < 3; ++r) {
    send[r] = arenaOf(c[r])->alloc(4096);
    recv[r] = r == 1 ? reinterpret_cast<char*>(plain.data()) : arenaOf(c[r])->alloc(4096);
  }
  std::vector<ncclResult_t> res(3);
  std::vector<std::string> err(3);
  ASSERT_EQ(runRanks(3, Drive::Threads,
                     [&](int r) {
                       res[r] = ncclAlltoAll(send[r], recv[r], count, ncclUint32, c[r], nullptr);
                       err[r] = ncclGetLastError(c[r]);
                       return ncclSuccess;
                     }),
            "");
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(res[r], ncclInvalidUsage) << r;
    const bool named = err[r].find("rank 1's recvbuff") != std::string::npos ||
                       err[r].find("rank 1's blocks do not lie in its window") != std::string::npos;
    EXPECT_TRUE(named) << "rank " << r << ": " << err[r];
  }
  for (uint32_t v : plain) ASSERT_EQ(v, 0u);  // nothing was stored into rank 1's plain buffer
  detachTestMemory(c);                        // not checked: the ranks' errors may have ended the communicator
  destroyComms(c);
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
// AlltoAll of at most the Bruck threshold (built-in: the suites read no tuning file), direct above it and for every
// AlltoAllv (whose sizes differ per rank, so no rank could choose by them alike).
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
  EXPECT_NE(std::string(why).find("buffer <= the Bruck threshold"), std::string::npos) << why;
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

INSTANTIATE_TEST_SUITE_P(, AlltoAllAlgo, ::testing::Values("direct", "pairwise", "bruck", "window", "auto"),
                         [](const ::testing::TestParamInfo<const char*>& i) { return std::string(i.param); });

}  // namespace
}  // namespace bt

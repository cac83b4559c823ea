// ncclCommRevoke and ncclCommShrink with NCCL's semantics (src/fault/membership.cc), ranks as threads:
// bad input is refused with the argument named and the parent unchanged; a revoked communicator
// refuses new work; survivors of a rank that never comes back revoke, shrink it out, and the next
// 10 collectives on the child are exact. Grow (NCCL 2.29), non-blocking shrink, abort racing
// completion and batonCommGetFailedRanks' arguments too.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "baton/membership.h"
#include "comm.h"
#include "comm_error.h"
#include "nccl.h"
#include "unit/unit_helpers.h"

namespace {

using bt::secondsSince;

std::vector<ncclComm_t> initAll(int n) {
  std::vector<ncclComm_t> comms(n, nullptr);
  EXPECT_EQ(ncclCommInitAll(comms.data(), n, nullptr), ncclSuccess) << ncclGetLastError(nullptr);
  return comms;
}

// Runs fn(i) on one thread per entry of `ranks`, joins them.
template <typename F>
void onThreads(const std::vector<int>& ranks, F fn) {
  std::vector<std::thread> ts;
  for (int r : ranks) ts.emplace_back([&fn, r] { fn(r); });
  for (auto& t : ts) t.join();
}

// Every rank contributes rank+1 (times 1000 + i): exact in float.
void expectAllReduceExact(const std::vector<ncclComm_t>& comms, const std::vector<int>& ranks, int times) {
  for (int it = 0; it < times; ++it) {
    std::vector<std::vector<float>> bufs(comms.size(), std::vector<float>(4099));
    onThreads(ranks, [&](int r) {
      for (size_t i = 0; i < bufs[r].size(); ++i) bufs[r][i] = float((r + 1) * 1000 + i % 7 + it);
      EXPECT_EQ(ncclAllReduce(bufs[r].data(), bufs[r].data(), bufs[r].size(), ncclFloat, ncclSum, comms[r], nullptr),
                ncclSuccess)
          << ncclGetLastError(nullptr);
    });
    for (int r : ranks)
      for (size_t i = 0; i < bufs[r].size(); i += 1000) {
        float want = 0;
        for (int q : ranks) want += float((q + 1) * 1000 + i % 7 + it);
        ASSERT_EQ(bufs[r][i], want) << "rank " << r << " element " << i << " iteration " << it;
      }
  }
}

TEST(Shrink, BadExcludeListsAreRefusedAndLeaveTheParentWorking) {
  auto comms = initAll(3);
  ncclComm_t out = nullptr;
  int self[] = {0}, dup[] = {2, 2}, range[] = {3}, neg[] = {-1};
  EXPECT_NCCL_ERR(ncclCommShrink(comms[0], self, 1, &out, nullptr, NCCL_SHRINK_DEFAULT), ncclInvalidArgument,
                  "excludeRanksList[0] = 0 is the calling rank");
  EXPECT_NCCL_ERR(ncclCommShrink(comms[0], dup, 2, &out, nullptr, NCCL_SHRINK_DEFAULT), ncclInvalidArgument,
                  "excludeRanksList[1] = 2 appears twice");
  EXPECT_NCCL_ERR(ncclCommShrink(comms[0], range, 1, &out, nullptr, NCCL_SHRINK_DEFAULT), ncclInvalidArgument,
                  "excludeRanksList[0] = 3 is not a rank of this communicator (0..2)");
  EXPECT_NCCL_ERR(ncclCommShrink(comms[0], neg, 1, &out, nullptr, NCCL_SHRINK_DEFAULT), ncclInvalidArgument,
                  "excludeRanksList[0] = -1");
  EXPECT_NCCL_ERR(ncclCommShrink(comms[0], nullptr, 1, &out, nullptr, NCCL_SHRINK_DEFAULT), ncclInvalidArgument,
                  "excludeRanksList is NULL with excludeRanksCount 1");
  EXPECT_NCCL_ERR(ncclCommShrink(comms[0], range, -2, &out, nullptr, NCCL_SHRINK_DEFAULT), ncclInvalidArgument,
                  "excludeRanksCount -2");
  EXPECT_NCCL_ERR(ncclCommShrink(comms[0], range, 3, &out, nullptr, NCCL_SHRINK_DEFAULT), ncclInvalidArgument,
                  "excludeRanksCount 3");
  EXPECT_NCCL_ERR(ncclCommShrink(comms[0], range, 0, &out, nullptr, 7), ncclInvalidArgument, "shrinkFlags 7");
  EXPECT_NCCL_ERR(ncclCommShrink(comms[0], range, 0, nullptr, nullptr, 0), ncclInvalidArgument, "newcomm is NULL");
  EXPECT_NCCL_ERR(ncclCommShrink(nullptr, range, 0, &out, nullptr, 0), ncclInvalidArgument, "ncclCommShrink");
  EXPECT_EQ(out, nullptr);
  expectAllReduceExact(comms, {0, 1, 2}, 2);  // state unchanged
  for (auto c : comms) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
}

TEST(Revoke, RefusesNewWorkAndBadFlagsButCanBeDestroyed) {
  auto comms = initAll(2);
  EXPECT_NCCL_ERR(ncclCommRevoke(comms[0], 5), ncclInvalidArgument, "revokeFlags 5");
  ASSERT_NCCL_OK(ncclCommRevoke(comms[0], NCCL_REVOKE_DEFAULT));
  EXPECT_NCCL_ERR(ncclCommRevoke(comms[0], NCCL_REVOKE_DEFAULT), ncclInvalidUsage, "already revoked");
  float x = 1;
  EXPECT_NCCL_ERR(ncclAllReduce(&x, &x, 1, ncclFloat, ncclSum, comms[0], nullptr), ncclInvalidUsage, "was revoked");
  EXPECT_NCCL_ERR(ncclCommFinalize(comms[0]), ncclInvalidUsage, "was revoked");
  EXPECT_EQ(ncclCommDestroy(comms[0]), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(comms[1]), ncclSuccess);
}

// Four thread ranks; 0, 1 and 3 enter an AllReduce that rank 2 never joins, and wait in it.
struct StuckAllReduce {
  std::vector<ncclComm_t> comms = initAll(4);
  std::vector<std::vector<float>> bufs = std::vector<std::vector<float>>(4, std::vector<float>(1 << 16, 1.0f));
  std::vector<ncclResult_t> res = std::vector<ncclResult_t>(4, ncclSuccess);
  std::vector<std::string> msg = std::vector<std::string>(4);
  std::vector<std::thread> stuck;
  StuckAllReduce() {
    for (int r : {0, 1, 3})
      stuck.emplace_back([this, r] {
        res[r] = ncclAllReduce(bufs[r].data(), bufs[r].data(), bufs[r].size(), ncclFloat, ncclSum, comms[r], nullptr);
        msg[r] = ncclGetLastError(nullptr);
      });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  void join() {
    for (auto& t : stuck) t.join();
  }
};

// A rank that revokes marks its ring FIFOs: neighbours stuck waiting on it stop at once, and the
// failure travels around the ring to the ranks that wait on them.
TEST(Revoke, PeersStuckWaitingOnTheRevokedRankStopAndSayWhy) {
  StuckAllReduce st;
  auto& [comms, bufs, res, msg, stuck] = st;  // rank 2 never joins
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_NCCL_OK(ncclCommRevoke(comms[2], NCCL_REVOKE_DEFAULT));
  for (auto& t : stuck) t.join();
  EXPECT_LT(secondsSince(t0), 2.0) << "nobody waits for BATON_WAIT_TIMEOUT";
  for (int r : {0, 1, 3}) {
    EXPECT_EQ(res[r], ncclRemoteError) << "rank " << r << ": " << msg[r];
    EXPECT_TRUE(bt::messageHas(msg[r], {"failed (its communicator stopped)"})) << "rank " << r;
  }
  for (auto c : comms) EXPECT_EQ(ncclCommAbort(c), ncclSuccess);
}

// A rank whose watchdog declares a peer failed tells its ring neighbours which one: a rank that
// hears of the failure second hand names the failed rank, not only the messenger (on one host the
// dead process may still be tearing down, so looking for it there is no substitute).
TEST(Revoke, NeighboursNameTheFailedRankTheAnnouncerNamed) {
  StuckAllReduce st;
  auto& [comms, bufs, res, msg, stuck] = st;  // rank 2 never joins: its watchdog "finds" rank 1 dead instead
  baton::commNoteFailureCause(comms[2], 1);   // what Watchdog::suspect does, then:
  baton::commSetError(comms[2], ncclRemoteError, "rank 1 failed (test)");
  for (auto& t : stuck) t.join();
  for (int r : {0, 1, 3}) EXPECT_EQ(res[r], ncclRemoteError) << "rank " << r << ": " << msg[r];
  // Rank 3 says "peer rank 2's communicator stopped because rank 1 failed", rank 1 "... because it
  // holds this rank failed", rank 0 either (or names rank 1, its messenger). ncclGetLastError is one
  // message per process, as in NCCL, so a thread may read another rank's: ask that some rank read
  // a message only the travelling cause can produce.
  bool causeNamed = false;
  for (int r : {0, 1, 3})
    causeNamed |= msg[r].find("communicator stopped because rank 1 failed") != std::string::npos ||
                  msg[r].find("communicator stopped because it holds this rank failed") != std::string::npos;
  EXPECT_TRUE(causeNamed) << msg[0] << "\n" << msg[1] << "\n" << msg[3];
  for (auto c : comms) EXPECT_EQ(ncclCommAbort(c), ncclSuccess);
}

TEST(Shrink, HealthyParentWithoutOneRankGivesRenumberedChild) {
  auto comms = initAll(4);
  std::vector<ncclComm_t> kids(4, nullptr);
  int exclude[] = {2};
  onThreads({0, 1, 3}, [&](int r) {
    EXPECT_EQ(ncclCommShrink(comms[r], exclude, 1, &kids[r], nullptr, NCCL_SHRINK_DEFAULT), ncclSuccess)
        << ncclGetLastError(nullptr);
  });
  std::vector<ncclComm_t> child = {kids[0], kids[1], kids[3]};
  for (int i = 0; i < 3; ++i) {
    int n = 0, me = -1;
    ASSERT_NE(child[i], nullptr);
    ASSERT_NCCL_OK(ncclCommCount(child[i], &n));
    ASSERT_NCCL_OK(ncclCommUserRank(child[i], &me));
    EXPECT_EQ(n, 3);
    EXPECT_EQ(me, i) << "parent ranks 0, 1, 3 become 0, 1, 2";
  }
  expectAllReduceExact(child, {0, 1, 2}, 10);
  for (auto c : child) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
  for (auto c : comms) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
}

// Rank 2 never joins an allreduce (as if it died): the others are stuck in it until each one's
// watchdog revokes (NCCL's recipe), then they shrink rank 2 out with NCCL_SHRINK_ABORT and go on.
TEST(Shrink, SurvivorsOfAMissingRankRevokeShrinkAndContinue) {
  auto comms = initAll(4);
  std::vector<float> buf(1 << 16, 1.0f);
  std::vector<std::vector<float>> bufs(4, buf);
  std::atomic<int> stuckResults{0};
  std::vector<std::thread> stuck;
  for (int r : {0, 1, 3})
    stuck.emplace_back([&, r] {
      if (ncclAllReduce(bufs[r].data(), bufs[r].data(), buf.size(), ncclFloat, ncclSum, comms[r], nullptr) !=
          ncclSuccess)
        stuckResults++;
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto t0 = std::chrono::steady_clock::now();
  for (int r : {0, 1, 3}) ASSERT_NCCL_OK(ncclCommRevoke(comms[r], NCCL_REVOKE_DEFAULT));
  for (auto& t : stuck) t.join();
  EXPECT_LT(secondsSince(t0), 2.0);
  EXPECT_EQ(stuckResults.load(), 3) << "every stuck allreduce returns an error";
  std::vector<ncclComm_t> kids(4, nullptr);
  int exclude[] = {2};
  onThreads({0, 1, 3}, [&](int r) {
    EXPECT_EQ(ncclCommShrink(comms[r], exclude, 1, &kids[r], nullptr, NCCL_SHRINK_ABORT), ncclSuccess)
        << ncclGetLastError(nullptr);
  });
  std::vector<ncclComm_t> child = {kids[0], kids[1], kids[3]};
  for (auto c : child) ASSERT_NE(c, nullptr);
  expectAllReduceExact(child, {0, 1, 2}, 10);
  for (auto c : child) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
  for (auto c : comms) EXPECT_EQ(ncclCommAbort(c), ncclSuccess);
}

}  // namespace

namespace {

// ncclCommAbort racing with completion: non-blocking communicators (NCCL's condition for a safe
// abort: no thread inside the library) launch an AllReduce, and after a random delay (before,
// during or after it completes) this thread aborts every rank. Each abort must return, in bounded
// time, whatever state the operation reached.
TEST(Abort, RacingCompletionOnNonBlockingCommsEndsInBoundedTime) {
  constexpr int n = 3;
  std::mt19937 rng(7);
  double slowest = 0;
  int finishedFirst = 0;
  for (int it = 0; it < 40; ++it) {
    ncclUniqueId id;
    ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
    std::vector<ncclComm_t> comms(n, nullptr);
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    ncclGroupStart();
    for (int r = 0; r < n; ++r) ncclCommInitRankConfig(&comms[r], n, id, r, &cfg);
    ncclGroupEnd();
    for (int r = 0; r < n; ++r) {
      ncclResult_t st = ncclInProgress;
      while (st == ncclInProgress) ASSERT_EQ(ncclCommGetAsyncError(comms[r], &st), ncclSuccess);
      ASSERT_EQ(st, ncclSuccess) << ncclGetLastError(comms[r]);
    }
    const size_t count = 1 + rng() % 2000000;
    std::vector<std::vector<float>> bufs(n, std::vector<float>(count, 1.0f));
    ncclGroupStart();
    for (int r = 0; r < n; ++r)
      ncclAllReduce(bufs[r].data(), bufs[r].data(), count, ncclFloat, ncclSum, comms[r], nullptr);
    ncclGroupEnd();
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 1500));
    ncclResult_t st = ncclSuccess;
    ncclCommGetAsyncError(comms[0], &st);
    finishedFirst += st == ncclSuccess;
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < n; ++r) ASSERT_EQ(ncclCommAbort(comms[r]), ncclSuccess) << "iteration " << it;
    slowest = std::max(slowest, secondsSince(t0));
  }
  printf("abort racing completion: 40 runs, %d had finished before the abort; slowest abort of 3 ranks %.3f s\n",
         finishedFirst, slowest);
  EXPECT_LT(slowest, 5.0) << "an abort waited for an operation that could not finish";
}

}  // namespace

namespace {

// NCCL 2.29's grow: 2 ranks become 3; the existing ones keep their numbers, the new one takes 2.
TEST(Grow, TwoRanksAdmitAThirdAndTheGrownCommunicatorIsExact) {
  auto comms = initAll(2);
  ncclUniqueId id;
  ASSERT_NCCL_OK(ncclCommGetUniqueId(comms[1], &id));  // any existing rank may ask
  std::vector<ncclComm_t> grown(3, nullptr);
  onThreads({0, 1, 2}, [&](int r) {
    ncclResult_t res;
    if (r < 2) res = ncclCommGrow(comms[r], 3, r == 1 ? &id : nullptr, -1, &grown[r], nullptr);
    else res = ncclCommGrow(nullptr, 3, &id, 2, &grown[r], nullptr);
    EXPECT_EQ(res, ncclSuccess) << "rank " << r << ": " << ncclGetLastError(nullptr);
  });
  for (int r = 0; r < 3; ++r) {
    int n = 0, me = -1;
    ASSERT_NE(grown[r], nullptr);
    ASSERT_NCCL_OK(ncclCommCount(grown[r], &n));
    ASSERT_NCCL_OK(ncclCommUserRank(grown[r], &me));
    EXPECT_EQ(n, 3);
    EXPECT_EQ(me, r) << "existing ranks keep their numbers, the new one is 2";
  }
  expectAllReduceExact(grown, {0, 1, 2}, 10);
  // The id was used: a second grow with it is refused, and the old communicator is unchanged.
  ncclComm_t again = nullptr;
  EXPECT_NCCL_ERR(ncclCommGrow(comms[1], 3, &id, -1, &again, nullptr), ncclInvalidArgument, "already used");
  expectAllReduceExact(comms, {0, 1}, 2);
  for (auto c : grown) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
  for (auto c : comms) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
}

TEST(Grow, BadInputIsRefusedAndLeavesTheCommunicatorWorking) {
  auto comms = initAll(2);
  ncclUniqueId foreign, id;
  ASSERT_NCCL_OK(ncclGetUniqueId(&foreign));
  ncclComm_t out = nullptr;
  EXPECT_NCCL_ERR(ncclCommGrow(comms[0], 3, &foreign, -1, &out, nullptr), ncclInvalidArgument, "foreign id");
  EXPECT_NCCL_ERR(ncclCommGrow(nullptr, 3, &foreign, 2, &out, nullptr), ncclInvalidArgument, "foreign id");
  ASSERT_NCCL_OK(ncclCommGetUniqueId(comms[0], &id));
  EXPECT_NCCL_ERR(ncclCommGetUniqueId(comms[0], &foreign), ncclInvalidUsage, "one at a time");
  EXPECT_NCCL_ERR(ncclCommGrow(comms[1], 3, &id, -1, &out, nullptr), ncclInvalidArgument,
                  "not the id ncclCommGetUniqueId returned for this communicator");
  EXPECT_NCCL_ERR(ncclCommGrow(comms[0], 2, &id, -1, &out, nullptr), ncclInvalidArgument, "nRanks 2 must be larger");
  EXPECT_NCCL_ERR(ncclCommGrow(comms[0], 3, &id, 1, &out, nullptr), ncclInvalidArgument, "keep their numbers");
  EXPECT_NCCL_ERR(ncclCommGrow(nullptr, 3, &id, 3, &out, nullptr), ncclInvalidArgument, "rank 3, nRanks 3");
  EXPECT_NCCL_ERR(ncclCommGrow(nullptr, 3, nullptr, 2, &out, nullptr), ncclInvalidArgument, "must pass the id");
  EXPECT_NCCL_ERR(ncclCommGrow(comms[0], 3, &id, -1, nullptr, nullptr), ncclInvalidArgument, "newcomm is NULL");
  EXPECT_NCCL_ERR(ncclCommInitRank(&out, 3, id, 2), ncclInvalidArgument, "not a valid ncclUniqueId");
  EXPECT_NCCL_ERR(ncclCommGetUniqueId(comms[0], nullptr), ncclInvalidArgument, "uniqueId is NULL");
  EXPECT_EQ(out, nullptr);
  expectAllReduceExact(comms, {0, 1}, 2);  // state unchanged
  ASSERT_NCCL_OK(ncclCommRevoke(comms[0], NCCL_REVOKE_DEFAULT));
  EXPECT_NCCL_ERR(ncclCommGrow(comms[0], 3, &id, -1, &out, nullptr), ncclInvalidUsage, "was revoked");
  for (auto c : comms) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
}

// Non-blocking communicators (NCCL's semantics): shrink returns ncclInProgress and the child is
// polled with ncclCommGetAsyncError until it is ready.
TEST(Shrink, NonBlockingReturnsInProgressAndTheChildBecomesReady) {
  auto comms = initAll(3);
  std::vector<ncclComm_t> kids(3, nullptr);
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  int exclude[] = {1};
  for (int r : {0, 2})
    EXPECT_EQ(ncclCommShrink(comms[r], exclude, 1, &kids[r], &cfg, NCCL_SHRINK_DEFAULT), ncclInProgress)
        << ncclGetLastError(nullptr);
  std::vector<ncclComm_t> child = {kids[0], kids[2]};
  for (auto c : child) {
    ASSERT_NE(c, nullptr) << "a non-blocking shrink hands out the communicator at once";
    ncclResult_t st = ncclInProgress;
    while (st == ncclInProgress) ASSERT_NCCL_OK(ncclCommGetAsyncError(c, &st));
    ASSERT_EQ(st, ncclSuccess);
  }
  // Non-blocking collectives return ncclInProgress too: wait for each before checking.
  std::vector<std::vector<float>> bufs(2, std::vector<float>(1000));
  for (int i = 0; i < 2; ++i) {
    for (size_t k = 0; k < bufs[i].size(); ++k) bufs[i][k] = float(i * 100 + k % 7);
    const ncclResult_t r = ncclAllReduce(bufs[i].data(), bufs[i].data(), 1000, ncclFloat, ncclSum, child[i], nullptr);
    EXPECT_TRUE(r == ncclSuccess || r == ncclInProgress) << ncclGetLastError(nullptr);
  }
  for (auto c : child) {
    ncclResult_t st = ncclInProgress;
    while (st == ncclInProgress) ASSERT_NCCL_OK(ncclCommGetAsyncError(c, &st));
    ASSERT_EQ(st, ncclSuccess);
  }
  for (int i = 0; i < 2; ++i)
    for (size_t k = 0; k < 1000; k += 97) EXPECT_EQ(bufs[i][k], float(0 * 100 + k % 7) + float(1 * 100 + k % 7));
  for (auto c : child) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
  for (auto c : comms) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
}

}  // namespace

namespace {

// Ranks that are threads of one process share its fate: no watchdog, nothing ever failed alone.
TEST(FailedRanks, ThreadCommunicatorsHaveNoneAndBadArgumentsAreNamed) {
  auto comms = initAll(2);
  int ranks[4] = {-1, -1, -1, -1}, n = -1;
  ASSERT_NCCL_OK(batonCommGetFailedRanks(comms[0], ranks, 4, &n));
  EXPECT_EQ(n, 0);
  ASSERT_NCCL_OK(batonCommGetFailedRanks(comms[0], nullptr, 0, &n));  // a count query
  EXPECT_NCCL_ERR(batonCommGetFailedRanks(comms[0], ranks, 4, nullptr), ncclInvalidArgument, "nFailed is NULL");
  EXPECT_NCCL_ERR(batonCommGetFailedRanks(comms[0], ranks, -1, &n), ncclInvalidArgument, "maxRanks -1");
  EXPECT_NCCL_ERR(batonCommGetFailedRanks(comms[0], nullptr, 2, &n), ncclInvalidArgument,
                  "ranks is NULL with maxRanks 2");
  EXPECT_NCCL_ERR(batonCommGetFailedRanks(nullptr, ranks, 4, &n), ncclInvalidArgument, "comm is NULL");
  for (auto c : comms) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
}

}  // namespace

// Groups: every collective in one group (one thread driving all ranks, and one thread per rank),
// several communicators in one group, non-blocking communicators (config.blocking = 0:
// ncclInProgress, then ncclCommGetAsyncError reaches ncclSuccess), and ncclCommSplit by color and
// key (NCCL_SPLIT_NOCOLOR included) driven from one thread inside a group, then collectives on the
// children.
#include <algorithm>
#include <map>
#include <memory>
#include <thread>

#include "collectives/harness.h"

namespace bt {
namespace {

// One of each collective (and p2p pattern), mixed types, ops, roots and placements.
std::vector<GroupItem> everyCollective(const Comms& comms, uint64_t seed) {
  const int n = (int)comms.size();
  std::vector<CollCase> cases = {
      {Coll::AllReduce, ncclFloat32, Op::Sum, 1023},        {Coll::AllReduce, ncclInt8, Op::Prod, 7, 0, true},
      {Coll::AllReduce, ncclFloat64, Op::Avg, 300001},  // several channels
      {Coll::Reduce, ncclFloat16, Op::Max, 5000, n - 1},    {Coll::ReduceScatter, ncclBfloat16, Op::Avg, 1023, 0, true},
      {Coll::ReduceScatter, ncclUint32, Op::PreMulSum, 77}, {Coll::AllGather, ncclUint8, Op::Sum, 70001},
      {Coll::AllGather, ncclInt64, Op::Sum, 9, 0, true},    {Coll::Broadcast, ncclFloat64, Op::Sum, 1023, n / 2},
      {Coll::SendRecv, ncclFloat8e4m3, Op::Sum, 1000},      {Coll::AlltoAll, ncclInt32, Op::Sum, 333},
      {Coll::Gather, ncclUint64, Op::Sum, 100, 0, true},    {Coll::Scatter, ncclFloat8e5m2, Op::Sum, 4097, n - 1},
  };
  std::vector<GroupItem> items;
  for (CollCase& c : cases) {
    c.seed = seed++;
    items.push_back({&comms, c, {}});
  }
  return items;
}

TEST(Group, EveryCollectiveInOneGroup) {
  for (int n : {1, 2, 3, 5, 8}) {
    for (Drive d : {Drive::Group, Drive::Threads}) {
      SCOPED_TRACE(std::to_string(n) + " ranks, " + driveName(d));
      std::vector<GroupItem> items = everyCollective(cachedComms(n), 100 * n);
      runGrouped(items, d);
    }
  }
}

TEST(Group, SeveralCommunicatorsInOneGroup) {
  std::vector<GroupItem> items;
  for (int n : {2, 3, 5}) {
    std::vector<GroupItem> some = everyCollective(cachedComms(n), 7 * n);
    for (GroupItem& it : some) items.push_back(std::move(it));
  }
  runGrouped(items, Drive::Group);
}

// NCCL's rule: one thread driving several ranks must group their calls. Without the group the first
// call waits for a rank nobody drives; the timeout's message says what is likely wrong.
TEST(Group, OneThreadTwoRanksWithoutGroupTimesOutNamingTheCause) {
  ScopedEnv env(ScopedEnv::Vars{{"BATON_WAIT_TIMEOUT", "0.3"}});
  ncclComm_t comms[2];
  ASSERT_EQ(ncclCommInitAll(comms, 2, nullptr), ncclSuccess);
  std::vector<float> send(1024, 1.0f), recv(1024);
  EXPECT_NE(ncclAllReduce(send.data(), recv.data(), 1024, ncclFloat, ncclSum, comms[0], nullptr), ncclSuccess);
  const std::string msg = ncclGetLastError(comms[0]);
  EXPECT_NE(msg.find("timed out (BATON_WAIT_TIMEOUT)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("between ncclGroupStart and ncclGroupEnd"), std::string::npos) << msg;
  for (ncclComm_t c : comms) ncclCommAbort(c);
}

ncclConfig_t nonBlockingConfig() {
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  return cfg;
}

// Non-blocking init inside a group: every call and the group end say ncclInProgress.
TEST(Group, NonBlockingCommunicators) {
  const int n = 4;
  ncclUniqueId id;
  NCCL_ASSERT(ncclGetUniqueId(&id));
  ncclConfig_t cfg = nonBlockingConfig();
  Comms comms(n, nullptr);
  NCCL_ASSERT(ncclGroupStart());
  for (int r = 0; r < n; ++r) EXPECT_EQ(ncclCommInitRankConfig(&comms[r], n, id, r, &cfg), ncclInProgress);
  EXPECT_EQ(ncclGroupEnd(), ncclInProgress);
  for (ncclComm_t c : comms) ASSERT_EQ(waitReady(c), ncclSuccess) << ncclGetLastError(nullptr);

  // One thread, one group: ncclInProgress, then every comm reaches ncclSuccess with the data right.
  std::vector<GroupItem> items = everyCollective(comms, 900);
  runGrouped(items, Drive::Group, ncclInProgress);
  // One thread per rank, each call outside a group returns ncclInProgress.
  for (Op op : {Op::Sum, Op::Min}) {
    CollCase c{Coll::AllReduce, ncclFloat32, op, 100003};
    std::vector<RankBuffers> bufs(n);
    for (int r = 0; r < n; ++r) NCCL_ASSERT(prepareRank(c, n, r, comms[r], bufs[r]));
    std::vector<ncclResult_t> res(n);
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) threads.emplace_back([&, r] { res[r] = issueRank(c, n, r, comms[r], bufs[r]); });
    for (auto& t : threads) t.join();
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(res[r], ncclInProgress) << "rank " << r;
      EXPECT_EQ(waitReady(comms[r]), ncclSuccess);
      EXPECT_EQ(checkRank(c, n, r, comms[r], bufs[r]), "") << describe(c, n) << " rank " << r;
    }
  }
  destroyComms(comms);
}

// Non-blocking init outside a group: each call returns at once, so one thread can start every rank.
TEST(Group, NonBlockingInitWithoutGroup) {
  const int n = 3;
  ncclUniqueId id;
  NCCL_ASSERT(ncclGetUniqueId(&id));
  ncclConfig_t cfg = nonBlockingConfig();
  Comms comms(n, nullptr);
  for (int r = 0; r < n; ++r) EXPECT_EQ(ncclCommInitRankConfig(&comms[r], n, id, r, &cfg), ncclInProgress);
  for (ncclComm_t c : comms) ASSERT_EQ(waitReady(c), ncclSuccess) << ncclGetLastError(nullptr);
  std::vector<GroupItem> items = everyCollective(comms, 950);
  runGrouped(items, Drive::Threads, ncclInProgress);
  destroyComms(comms);
}

// Splits `parent` with (color, key) per rank from one thread inside a group; returns the children
// grouped by color, each ordered by child rank, after checking count, rank and NOCOLOR.
std::vector<Comms> split(const Comms& parent, const std::vector<int>& color, const std::vector<int>& key, Drive d) {
  const int n = (int)parent.size();
  Comms child(n, nullptr);
  EXPECT_EQ(runRanks(n, d, [&](int r) { return ncclCommSplit(parent[r], color[r], key[r], &child[r], nullptr); }), "");
  std::map<int, std::vector<int>> members;  // color -> parent ranks in (key, rank) order
  for (int r = 0; r < n; ++r)
    if (color[r] != NCCL_SPLIT_NOCOLOR) members[color[r]].push_back(r);
  std::vector<Comms> groups;
  for (int r = 0; r < n; ++r) {
    if (color[r] == NCCL_SPLIT_NOCOLOR) {
      EXPECT_EQ(child[r], nullptr) << "NOCOLOR rank " << r << " got a comm";
    }
  }
  for (auto& [c, ranks] : members) {
    std::stable_sort(ranks.begin(), ranks.end(), [&](int a, int b) { return key[a] < key[b]; });
    Comms g;
    for (size_t i = 0; i < ranks.size(); ++i) {
      ncclComm_t cc = child[ranks[i]];
      if (!cc) {
        ADD_FAILURE() << "parent rank " << ranks[i] << " (color " << c << ") got no child";
        continue;
      }
      int count = -1, rank = -1;
      NCCL_EXPECT(ncclCommCount(cc, &count));
      NCCL_EXPECT(ncclCommUserRank(cc, &rank));
      EXPECT_EQ(count, (int)ranks.size()) << "color " << c;
      EXPECT_EQ(rank, (int)i) << "parent rank " << ranks[i] << " color " << c;
      g.push_back(cc);
    }
    groups.push_back(g);
  }
  return groups;
}

TEST(Group, SplitByColorAndKeyFromOneThread) {
  const Comms& parent = cachedComms(8);
  std::vector<int> color(8), key(8);
  for (int r = 0; r < 8; ++r) color[r] = r == 3 ? NCCL_SPLIT_NOCOLOR : r % 3, key[r] = 7 - r;  // reversed order
  std::vector<Comms> groups = split(parent, color, key, Drive::Group);
  ASSERT_EQ(groups.size(), 3u);
  // Every child communicator's collectives, all from this thread inside one group.
  std::vector<GroupItem> items;
  uint64_t seed = 500;
  for (const Comms& g : groups)
    for (CollCase c :
         {CollCase{Coll::AllReduce, ncclInt32, Op::Sum, 10007}, CollCase{Coll::AllGather, ncclFloat16, Op::Sum, 1023},
          CollCase{Coll::Broadcast, ncclUint8, Op::Sum, 999, (int)g.size() - 1}}) {
      c.seed = seed++;
      items.push_back({&g, c, {}});
    }
  runGrouped(items, Drive::Group);
  for (Comms& g : groups) destroyComms(g);
  // The parent's ranks still agree on their bootstrap sequence: the NOCOLOR rank once skipped the
  // child's tag, and the parent's next bootstrap collective (a window registration) hung.
  std::vector<void*> mem(8, nullptr);
  std::vector<ncclWindow_t> win(8, nullptr);
  EXPECT_EQ(runRanks(8, Drive::Threads,
                     [&](int r) {
                       ncclResult_t res = ncclMemAlloc(&mem[r], 4096);
                       return res != ncclSuccess
                                  ? res
                                  : ncclCommWindowRegister(parent[r], mem[r], 4096, &win[r], NCCL_WIN_COLL_SYMMETRIC);
                     }),
            "");
  EXPECT_EQ(runRanks(8, Drive::Threads, [&](int r) { return ncclCommWindowDeregister(parent[r], win[r]); }), "");
  for (void* m : mem) ncclMemFree(m);
}

TEST(Group, SplitFromThreadsThenMatrix) {
  const Comms& parent = cachedComms(6);
  std::vector<int> color{0, 1, 0, 1, 0, 1}, key{0, 0, 0, 0, 0, 0};  // equal keys: parent order
  std::vector<Comms> groups = split(parent, color, key, Drive::Threads);
  ASSERT_EQ(groups.size(), 2u);
  for (const Comms& g : groups)
    for (Coll c : {Coll::AllReduce, Coll::ReduceScatter, Coll::SendRecv}) {
      Matrix m;
      m.ops = {Op::Sum, Op::Avg};
      runMatrix(g, c, ncclFloat32, m);
    }
  for (Comms& g : groups) destroyComms(g);
}

}  // namespace
}  // namespace bt

// The agreement of lesson 10 (src/fault/agreement.h) under simulated crashes: n ranks exchange messages
// over FIFO links delivered in random order; a crashing rank stops after a random number of sends
// (the rest are lost), and each survivor learns of the crash only after everything the dead rank
// had already sent it (TCP's EOF comes after the data). Some ranks leave properly instead (their
// goodbye also comes after their data). Every survivor must decide, all on the same value, and no
// value may name a rank that did not crash, nor one that left.
#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <random>

#include "fault/agreement.h"

namespace baton {
namespace {

struct Sim {
  struct Item {
    bool eof = false;
    bool bye = false;  // the rank left properly (ncclCommDestroy) rather than crashed
    AgreeMsg msg;
  };
  int n;
  std::mt19937 rng;
  std::vector<std::unique_ptr<Agreement>> ranks;
  std::vector<std::deque<Item>> links;  // from * n + to
  std::vector<int> sendsLeft;           // -1: never crashes
  std::vector<bool> crashed, leaves;    // leaves: it says goodbye instead of crashing

  Sim(int n, unsigned seed) : n(n), rng(seed), links(n * n), sendsLeft(n, -1), crashed(n, false), leaves(n, false) {
    for (int r = 0; r < n; ++r)
      ranks.push_back(std::make_unique<Agreement>(r, n, [this, r](int to, const AgreeMsg& m) { send(r, to, m); }));
  }
  void send(int from, int to, const AgreeMsg& m) {
    if (crashed[from]) return;
    if (sendsLeft[from] == 0) {
      crash(from);
      return;
    }
    if (sendsLeft[from] > 0) --sendsLeft[from];
    links[from * n + to].push_back({false, false, m});
  }
  void crash(int r) {
    crashed[r] = true;
    for (int to = 0; to < n; ++to)
      if (to != r) links[r * n + to].push_back({true, leaves[r], {}});
  }
  // Delivers one item of a random non-empty link; false when nothing is left.
  bool step() {
    std::vector<int> ready;
    for (int l = 0; l < n * n; ++l)
      if (!links[l].empty()) ready.push_back(l);
    if (ready.empty()) return false;
    const int l = ready[rng() % ready.size()];
    const Item it = links[l].front();
    links[l].pop_front();
    const int from = l / n, to = l % n;
    if (crashed[to]) return true;
    if (it.eof && it.bye) ranks[to]->onGone(from);
    else if (it.eof) ranks[to]->onSuspect(from);
    else ranks[to]->onMessage(from, it.msg);
    return true;
  }
};

TEST(Agreement, SurvivorsDecideTheSameValueUnderRandomCrashes) {
  int decidedRuns = 0, runsWithCrash = 0;
  for (unsigned seed = 1; seed <= 3000; ++seed) {
    std::mt19937 pick(seed);
    const int n = 2 + pick() % 7;
    Sim sim(n, seed);
    const int nCrash = pick() % std::min(n, 3);  // at least one rank survives
    std::vector<int> order(n);
    for (int r = 0; r < n; ++r) order[r] = r;
    std::shuffle(order.begin(), order.end(), pick);
    for (int i = 0; i < nCrash; ++i) {
      sim.sendsLeft[order[i]] = pick() % (3 * n);
      sim.leaves[order[i]] = pick() % 3 == 0;
    }
    runsWithCrash += nCrash > 0;
    const uint64_t key = 7;
    for (int r = 0; r < n; ++r) {
      RankSet p(n + 1);
      if (pick() % 4 == 0) p.add(n);  // some rank's operation failed: the nack bit
      sim.ranks[r]->join(key, p);
    }
    int guard = 0;
    while (sim.step()) ASSERT_LT(++guard, 1000000) << "seed " << seed << ": messages never stop";
    RankSet first;
    bool have = false;
    for (int r = 0; r < n; ++r) {
      if (sim.crashed[r]) continue;
      RankSet v;
      ASSERT_TRUE(sim.ranks[r]->decided(key, &v))
          << "seed " << seed << ": survivor " << r << " of " << n << " never decided";
      for (int q = 0; q < n; ++q) {
        ASSERT_FALSE(v.has(q) && !sim.crashed[q]) << "seed " << seed << ": rank " << q << " is alive";
        ASSERT_FALSE(v.has(q) && sim.leaves[q]) << "seed " << seed << ": rank " << q << " left, it did not fail";
      }
      if (!have) first = v, have = true;
      ASSERT_TRUE(v == first) << "seed " << seed << ": survivors " << r << " and another decided differently";
    }
    ++decidedRuns;
  }
  EXPECT_EQ(decidedRuns, 3000);
  EXPECT_GT(runsWithCrash, 1000);
}

TEST(Agreement, NoFailureDecidesTheUnionOfProposals) {
  Sim sim(4, 42);
  for (int r = 0; r < 4; ++r) {
    RankSet p(5);
    if (r == 2) p.add(4);
    sim.ranks[r]->join(1, p);
  }
  while (sim.step()) {}
  for (int r = 0; r < 4; ++r) {
    RankSet v;
    ASSERT_TRUE(sim.ranks[r]->decided(1, &v));
    EXPECT_TRUE(v.has(4)) << "rank 2's nack reaches rank " << r;
    EXPECT_EQ(v.count(), 1);
  }
}

TEST(Agreement, AnExcludedRankDecidesAtOnce) {
  Agreement a(1, 3, [](int, const AgreeMsg&) {});
  RankSet p(4);
  p.add(1);  // the others declared this rank dead
  a.join(9, p);
  RankSet v;
  ASSERT_TRUE(a.decided(9, &v));
  EXPECT_TRUE(v.has(1));
}

}  // namespace
}  // namespace baton

namespace baton {
namespace {

// A rank votes "my part failed" and then leaves properly (its application aborted at once): the
// others must still roll back, since that rank already rolled back.
TEST(Agreement, ANackFromARankThatLeftStillRollsBack) {
  Sim sim(3, 5);
  RankSet nack(4);
  nack.add(3);
  sim.ranks[0]->join(1, nack);
  for (int to : {1, 2}) {  // rank 0's value arrives, then its goodbye
    auto& link = sim.links[0 * 3 + to];
    while (!link.empty()) {
      sim.ranks[to]->onMessage(0, link.front().msg);
      link.pop_front();
    }
  }
  sim.crashed[0] = true;
  for (int to : {1, 2}) sim.ranks[to]->onGone(0);
  for (int r : {1, 2}) sim.ranks[r]->join(1, RankSet(4));
  while (sim.step()) {}
  for (int r : {1, 2}) {
    RankSet v;
    ASSERT_TRUE(sim.ranks[r]->decided(1, &v)) << "rank " << r;
    EXPECT_TRUE(v.has(3)) << "rank " << r << " would commit what rank 0 rolled back";
    EXPECT_FALSE(v.has(0)) << "leaving is not failing";
  }
}

}  // namespace
}  // namespace baton

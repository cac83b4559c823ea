// AlltoAll as copies and exchanges (src/alltoall/alltoall_steps.h), the form the CUDA backend runs pairwise,
// Bruck and in-place AlltoAlls in, checked on the CPU without a GPU: every rank's steps run
// together as the device would run them (an exchange ends when each of its receives has matched
// the next message its peer sent on that connector), and each step is checked for what a kernel
// moving its transfers in any order would trip over: a receive that writes what a send of the same
// exchange reads, overlapping receives or copies, a byte written outside recvbuff's blocks or the
// scratch, a message of the wrong size, ranks that wait for each other.
#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "alltoall.h"
#include "alltoall/alltoall_steps.h"

namespace {

using namespace baton;

struct Region {
  const char* base;
  size_t bytes;
  bool holds(const char* p, size_t n) const { return p >= base && n <= bytes && p - base <= (ptrdiff_t)(bytes - n); }
};

bool overlap(const char* a, size_t an, const char* b, size_t bn) { return an && bn && a < b + bn && b < a + an; }

// What one exchange would trip over on a device, or "".
std::string exchangeHazard(const AlltoAllStep& s) {
  for (size_t i = 0; i < s.xfers.size(); ++i)
    for (size_t j = 0; j < s.xfers.size(); ++j) {
      const auto &a = s.xfers[i], &b = s.xfers[j];
      if (i == j || a.isSend || !overlap(a.buf, a.bytes, b.buf, b.bytes)) continue;
      if (b.isSend) return "a receive from " + std::to_string(a.peer) + " writes what a send reads";
      return "two receives overlap";
    }
  return "";
}

struct Rank {
  std::vector<char> send, recv, scratch, expect;
  std::vector<size_t> layout;
  std::vector<AlltoAllStep> steps;
  size_t pc = 0;
};

constexpr size_t kGuard = 64;
constexpr char kUntouched = (char)0xEE;

char byteOf(int from, int to, size_t j) { return (char)(from * 37 + to * 11 + j * 3 + 1); }

// n ranks; bytes[from][to]: what `from` sends `to`. Offsets leave gaps that must stay untouched.
void runAll(int algo, int n, const std::vector<std::vector<size_t>>& bytes, bool uniform, bool inPlace,
            const std::string& what) {
  SCOPED_TRACE(what);
  std::vector<Rank> r(n);
  for (int me = 0; me < n; ++me) {
    Rank& k = r[me];
    k.layout.assign(4 * (size_t)n, 0);
    size_t s = 0, v = 0;
    for (int p = 0; p < n; ++p) {
      const size_t gap = uniform ? 0 : 5;
      k.layout[p] = bytes[me][p], k.layout[n + p] = s, s += bytes[me][p] + gap;
      k.layout[2 * n + p] = bytes[p][me], k.layout[3 * n + p] = v, v += bytes[p][me] + gap;
    }
    if (inPlace) {
      ASSERT_EQ(s, v) << "in place needs one layout";
    }
    k.send.assign(s + kGuard, kUntouched);
    k.recv.assign(v + kGuard, kUntouched);
    k.expect = k.recv;
    for (int p = 0; p < n; ++p)
      for (size_t j = 0; j < bytes[me][p]; ++j) k.send[k.layout[n + p] + j] = byteOf(me, p, j);
    for (int p = 0; p < n; ++p)
      for (size_t j = 0; j < bytes[p][me]; ++j) k.expect[k.layout[3 * n + p] + j] = byteOf(p, me, j);
    if (inPlace) k.recv = k.send;
    AlltoAllStepsIn in;
    in.algo = algo, in.rank = me, in.nRanks = n, in.uniform = uniform, in.layout = k.layout.data();
    in.sendbuff = inPlace ? k.recv.data() : k.send.data();
    in.recvbuff = k.recv.data();
    k.scratch.assign(alltoallStepsScratch(in) + kGuard, kUntouched);
    ASSERT_EQ(alltoallSteps(in, k.scratch.data(), &k.steps), ncclSuccess) << "rank " << me;
  }
  // Messages in flight per (from, to), each the bytes as the sender read them.
  std::vector<std::deque<std::vector<char>>> wire((size_t)n * n);
  std::vector<bool> posted(n, false);
  for (bool moved = true; moved;) {
    moved = false;
    for (int me = 0; me < n; ++me) {
      Rank& k = r[me];
      const Region sendR{inPlace ? k.recv.data() : k.send.data(), k.send.size() - kGuard};
      const Region recvR{k.recv.data(), k.recv.size() - kGuard};
      const Region scratchR{k.scratch.data(), k.scratch.size() - kGuard};
      while (k.pc < k.steps.size()) {
        const AlltoAllStep& s = k.steps[k.pc];
        if (s.kind == AlltoAllStep::kCopy) {
          ASSERT_TRUE(sendR.holds(s.src, s.bytes) || scratchR.holds(s.src, s.bytes)) << "rank " << me;
          ASSERT_TRUE(recvR.holds(s.dst, s.bytes) || scratchR.holds(s.dst, s.bytes)) << "rank " << me;
          ASSERT_FALSE(overlap(s.dst, s.bytes, s.src, s.bytes)) << "rank " << me;
          memcpy(s.dst, s.src, s.bytes);
          ++k.pc, moved = true;
          continue;
        }
        ASSERT_EQ(exchangeHazard(s), "") << "rank " << me << " step " << k.pc;
        if (!posted[me]) {
          for (const auto& x : s.xfers) {
            if (!x.isSend) continue;
            ASSERT_NE(x.peer, me);
            ASSERT_TRUE(sendR.holds(x.buf, x.bytes) || scratchR.holds(x.buf, x.bytes)) << "rank " << me;
            wire[(size_t)me * n + x.peer].emplace_back(x.buf, x.buf + x.bytes);
          }
          posted[me] = true, moved = true;
        }
        // Done once every receive has its message: take them all, in the step's order per peer.
        std::vector<size_t> need(n, 0);
        bool ready = true;
        for (const auto& x : s.xfers)
          if (!x.isSend && wire[(size_t)x.peer * n + me].size() < ++need[x.peer]) ready = false;
        if (!ready) break;
        for (const auto& x : s.xfers) {
          if (x.isSend) continue;
          ASSERT_TRUE(recvR.holds(x.buf, x.bytes) || scratchR.holds(x.buf, x.bytes)) << "rank " << me;
          auto& q = wire[(size_t)x.peer * n + me];
          ASSERT_EQ(q.front().size(), x.bytes) << "rank " << me << " from " << x.peer;
          memcpy(x.buf, q.front().data(), x.bytes);
          q.pop_front();
        }
        posted[me] = false, ++k.pc, moved = true;
      }
    }
  }
  for (int me = 0; me < n; ++me) {
    ASSERT_EQ(r[me].pc, r[me].steps.size()) << "rank " << me << " waits forever at step " << r[me].pc;
    EXPECT_EQ(r[me].recv, r[me].expect) << "rank " << me;
    for (size_t j = r[me].scratch.size() - kGuard; j < r[me].scratch.size(); ++j)
      ASSERT_EQ(r[me].scratch[j], kUntouched) << "rank " << me << " wrote past its scratch";
  }
  for (const auto& q : wire) EXPECT_TRUE(q.empty()) << "a message nobody received";
}

std::vector<std::vector<size_t>> uniformBytes(int n, size_t block) {
  return std::vector<std::vector<size_t>>(n, std::vector<size_t>(n, block));
}

TEST(AlltoAllSteps, EveryAlgorithmMovesEveryBlockWithoutHazards) {
  for (int algo : {kAlltoAllDirect, kAlltoAllPairwise, kAlltoAllBruck})
    for (int n = 1; n <= 9; ++n)
      for (size_t block : {0, 1, 12, 100})
        for (bool inPlace : {false, true})
          runAll(algo, n, uniformBytes(n, block), true, inPlace,
                 std::string(alltoallAlgoName(algo)) + " n=" + std::to_string(n) + " block=" + std::to_string(block) +
                     (inPlace ? " in place" : ""));
}

TEST(AlltoAllSteps, BlocksOfDifferentSizesDirectAndPairwise) {
  std::mt19937 rng(7);
  for (int algo : {kAlltoAllDirect, kAlltoAllPairwise})
    for (int n = 2; n <= 7; ++n) {
      std::vector<std::vector<size_t>> bytes(n, std::vector<size_t>(n));
      for (auto& row : bytes)
        for (auto& b : row) b = rng() % 4 == 0 ? 0 : rng() % 200;
      runAll(algo, n, bytes, false, false, std::string(alltoallAlgoName(algo)) + " v n=" + std::to_string(n));
    }
}

TEST(AlltoAllSteps, StepCountsAreTheAlgorithms) {
  const int n = 8;
  std::vector<size_t> layout(4 * n);
  for (int p = 0; p < n; ++p) layout[p] = layout[2 * n + p] = 16, layout[n + p] = layout[3 * n + p] = 16 * p;
  std::vector<char> send(16 * n), recv(16 * n), scratch(4096);
  auto exchanges = [&](int algo, bool inPlace, size_t* copies) {
    AlltoAllStepsIn in;
    in.algo = algo, in.rank = 3, in.nRanks = n, in.uniform = true, in.layout = layout.data();
    in.sendbuff = inPlace ? recv.data() : send.data(), in.recvbuff = recv.data();
    std::vector<AlltoAllStep> steps;
    EXPECT_EQ(alltoallSteps(in, scratch.data(), &steps), ncclSuccess);
    size_t x = 0;
    *copies = 0;
    for (const auto& s : steps) (s.kind == AlltoAllStep::kExchange ? x : *copies) += 1;
    return x;
  };
  size_t copies = 0;
  EXPECT_EQ(exchanges(kAlltoAllDirect, false, &copies), 1u);
  EXPECT_EQ(copies, 1u);  // its own block
  EXPECT_EQ(exchanges(kAlltoAllPairwise, false, &copies), (size_t)n - 1);
  EXPECT_EQ(exchanges(kAlltoAllBruck, false, &copies), 3u);  // log2 8
  EXPECT_EQ(copies, 1u);                                     // the FIFO packs; the last round lands in place
  EXPECT_EQ(exchanges(kAlltoAllBruck, true, &copies), 3u);
  EXPECT_EQ(copies, 2u);  // and the send extent set aside first
}

TEST(AlltoAllSteps, BruckNeedsBlocksOfOneSize) {
  const int n = 4;
  std::vector<size_t> layout(4 * n, 8);
  char buf[64];
  AlltoAllStepsIn in;
  in.algo = kAlltoAllBruck, in.nRanks = n, in.layout = layout.data(), in.sendbuff = buf, in.recvbuff = buf + 32;
  std::vector<AlltoAllStep> steps;
  EXPECT_EQ(alltoallSteps(in, nullptr, &steps), ncclInvalidUsage);
}

TEST(AlltoAllSteps, TheCheckerSeesAReceiveOverwritingASend) {
  // Bruck with one home per slot would receive slot 3 where it is being sent from.
  char buf[32];
  AlltoAllStep s;
  s.kind = AlltoAllStep::kExchange;
  s.xfers = {{true, 1, buf, 16}, {false, 2, buf + 8, 16}};
  EXPECT_NE(exchangeHazard(s), "");
  s.xfers[1].buf = buf + 16;
  EXPECT_EQ(exchangeHazard(s), "");
}

}  // namespace

// buildSchedule + simulate end to end, timed by hand: two GPUs joined by one NVLink each way
// (G GB/s, latency L; paths from topoComputePaths), a ring 0 1 and a chain tree 0 -> 1, one
// channel. Ring AllReduce in Simple (one step per chunk, then two), LL (16-byte lines: twice the
// wire bytes) and LL128 (128-byte lines per 120 payload bytes): each rank sends its chunk,
// recvReduceCopySends the other, receives the result, so the time is k steps of P = L + wire/G
// twice plus the overheads. Tree AllReduce with one chunk (the root turns it around; the same time
// with and without split streams) and with three chunks and a lag of one, where the CPU order
// (splitTree=false: the leaf's third reduce waits behind its first broadcast, which holds the
// root's FIFO credit) costs 33 steps against 25 for the GPU's two concurrent streams.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "sim/schedule.h"
#include "sim/sim.h"
#include "topo/graph.h"
#include "topo/topo.h"

namespace {

using namespace baton;

constexpr double G = 20.0;  // GB/s each way
constexpr double L = 0.6;   // µs per NVLink hop
constexpr double O = 0.25;  // µs per step

// Two GPU nodes, one NVLink each way; ranks 0 and 1.
TopoSystem twoGpus() {
  TopoSystem sys;
  sys.nodes.resize(2);
  for (int i = 0; i < 2; ++i) {
    sys.nodes[i].type = NodeType::GPU;
    sys.nodes[i].dev = sys.nodes[i].rank = i;
    sys.nodes[i].links.push_back({LinkType::NVL, G, 1 - i});
    sys.rankNode.push_back(i);
  }
  topoComputePaths(&sys);
  return sys;
}

CommGraph twoRankGraph() {
  CommGraph g;
  ChannelGraph& c = g.channels.emplace_back();
  c.ring = {0, 1};
  c.tree.resize(2);
  c.tree[0].down[0] = 1;  // root 0, its child 1
  c.tree[1].up = 0;
  return g;
}

ScheduleSpec spec(CollAlgo algo, Proto proto, size_t bytes) {
  ScheduleSpec s;
  s.algo = algo, s.proto = proto, s.bytes = bytes, s.splitTree = false;
  s.layout.stepBytes[kProtoSimple] = 512 << 10;
  s.layout.stepBytes[kProtoLL] = 64 << 10;
  s.layout.stepBytes[kProtoLL128] = 614400;
  return s;
}

// A stream's steps, runs of equal steps folded: "2x[send 0->1 524288] 1x[recv 1->0]".
std::string describe(const SimSchedule& s, const SimStream& st) {
  auto one = [&](const SimStep& x) {
    std::string d;
    if (x.recvConn >= 0)
      d += "recv " + std::to_string(s.conns[x.recvConn].srcRank) + "->" + std::to_string(s.conns[x.recvConn].dstRank);
    if (x.sendConn >= 0)
      d += std::string(d.empty() ? "" : " + ") + "send " + std::to_string(s.conns[x.sendConn].srcRank) + "->" +
           std::to_string(s.conns[x.sendConn].dstRank) + " " + std::to_string(x.wireBytes);
    return d;
  };
  std::string out;
  for (size_t i = 0; i < st.steps.size();) {
    size_t j = i;
    while (j < st.steps.size() && one(st.steps[j]) == one(st.steps[i])) ++j;
    out += std::string(out.empty() ? "" : " ") + std::to_string(j - i) + "x[" + one(st.steps[i]) + "]";
    i = j;
  }
  return out;
}

SimSchedule build(const ScheduleSpec& sp) {
  SimSchedule s;
  EXPECT_EQ(buildSchedule(twoRankGraph(), 2, sp, &s), ncclSuccess);
  return s;
}

SimResult run(const SimSchedule& s, double overhead) {
  SimParams p;
  p.stepOverheadUs = overhead;
  p.linkLatencyUs[(int)LinkType::NVL] = L;
  SimResult r = simulate(twoGpus(), s, p);
  EXPECT_EQ(r.error, "");
  return r;
}

double stepUs(uint64_t wireBytes) { return L + wireBytes / (G * 1e3); }

#define EXPECT_TIME(actual, expected) EXPECT_NEAR((actual), (expected), 1e-9 * (expected))

TEST(SimSchedule, PathsAreOneNvlHop) {
  TopoSystem sys = twoGpus();
  for (auto [a, b] : {std::pair{0, 1}, std::pair{1, 0}}) {
    EXPECT_EQ(sys.rankPath(a, b).type, PathType::NVL);
    EXPECT_EQ(sys.rankPath(a, b).bw, G);
    ASSERT_EQ(sys.rankPath(a, b).hops.size(), 1u);
    EXPECT_EQ(sys.rankPath(a, b).hops[0].node, a);
  }
}

// Ring AllReduce of `bytes` floats in `proto`: both ranks run k steps of each primitive on
// `wire`-byte steps; time 2k P + k o (P > o: a send step ends at delivery, P after it starts;
// the k receives of the result then take o each after the last arrival at 2k P).
void ringCase(Proto proto, size_t bytes, int k, uint64_t wire) {
  SCOPED_TRACE(std::string("proto ") + std::to_string(proto) + ", " + std::to_string(bytes) + " bytes");
  const SimSchedule s = build(spec(kAlgoRing, proto, bytes));
  ASSERT_EQ(s.streams.size(), 2u);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(s.streams[r].rank, r);
    EXPECT_EQ(s.streams[r].channel, 0);
    const std::string out = std::to_string(r) + "->" + std::to_string(1 - r),
                      in = std::to_string(1 - r) + "->" + std::to_string(r);
    const std::string n = std::to_string(k) + "x[";
    EXPECT_EQ(describe(s, s.streams[r]), n + "send " + out + " " + std::to_string(wire) + "] " + n + "recv " + in +
                                             " + send " + out + " " + std::to_string(wire) + "] " + n + "recv " + in +
                                             "]");
  }
  const double P = stepUs(wire);
  ASSERT_GT(P, O);
  const SimResult r = run(s, O);
  EXPECT_EQ(r.events, 6u * k);
  EXPECT_TIME(r.timeUs, 2 * k * P + k * O);
  for (double f : r.streamFinishUs) EXPECT_TIME(f, 2 * k * P + k * O);
}

TEST(SimSchedule, RingAllReduceSimple) {
  // 64 KiB: chunks of 32 KiB (half each), one 512 KiB step each.
  ringCase(kProtoSimple, 64 << 10, 1, 32 << 10);
  // 2 MiB: chunks of 1 MiB, two 512 KiB steps each.
  ringCase(kProtoSimple, 2 << 20, 2, 512 << 10);
}

TEST(SimSchedule, RingAllReduceLL) {
  // A 64 KiB LL step holds 32 KiB of payload: chunks of 32 KiB, one step, 64 KiB on the wire.
  ringCase(kProtoLL, 64 << 10, 1, 64 << 10);
}

TEST(SimSchedule, RingAllReduceLL128) {
  // 32 KiB of payload = 273.07 lines of 120 bytes: 274 lines of 128 bytes on the wire.
  ringCase(kProtoLL128, 64 << 10, 1, 274 * 128);
}

// One 64 KiB chunk (a 2 MiB Simple chunk holds it): the leaf sends it up, the root
// recvReduceCopySends it down, the leaf receives it. Both split settings take 2P + o.
TEST(SimSchedule, TreeAllReduceOneChunk) {
  const double P = stepUs(64 << 10);
  for (bool split : {false, true}) {
    SCOPED_TRACE(split ? "split" : "one stream per rank");
    ScheduleSpec sp = spec(kAlgoTree, kProtoSimple, 64 << 10);
    sp.splitTree = split;
    const SimSchedule s = build(sp);
    ASSERT_EQ(s.streams.size(), split ? 3u : 2u);
    EXPECT_EQ(describe(s, s.streams[0]), "1x[recv 1->0 + send 0->1 65536]");
    if (split) {
      EXPECT_EQ(describe(s, s.streams[1]), "1x[send 1->0 65536]");
      EXPECT_EQ(describe(s, s.streams[2]), "1x[recv 0->1]");
      EXPECT_EQ(s.streams[2].rank, 1);
    } else {
      EXPECT_EQ(describe(s, s.streams[1]), "1x[send 1->0 65536] 1x[recv 0->1]");
    }
    const SimResult r = run(s, O);
    EXPECT_EQ(r.events, 3u);
    EXPECT_TIME(r.timeUs, 2 * P + O);
    EXPECT_TIME(r.streamFinishUs[0], 2 * P);
    EXPECT_TIME(r.streamFinishUs[1], split ? P : 2 * P + O);
  }
}

// Three chunks of 8 steps (4 KiB Simple steps, chunkSteps 8: one chunk fills the 8-slot FIFO, so
// the CPU order's lag is 1), no step overhead. Message j (0..23): the leaf's U_j up, the root's
// R_j (receive U_j, send D_j down), the leaf's D_j. Depth 8 on both connections.
// Split (the GPU): U_j ends at (j+1)P, R_j at (j+2)P, D_j at (j+2)P: 25P.
// One stream (the CPU), leaf order U0-15 D0-7 U16-23 D8-23: U0-15 end at 16P, R0-7 at (j+2)P;
// R8 needs D0's slot back, taken at 16P: R8-15 end at (j+9)P (24P); U16 needs R8: U16-23 end at
// (j+2)P (25P); D8-15 at 25P; R16 needs D8: R16-23 end at (j+10)P; D16-23 with them: 33P.
TEST(SimSchedule, TreeAllReduceThreeChunksSplitAndNot) {
  const double P = stepUs(4096);
  for (bool split : {false, true}) {
    SCOPED_TRACE(split ? "split" : "one stream per rank");
    ScheduleSpec sp = spec(kAlgoTree, kProtoSimple, 3 * 8 * 4096);
    sp.layout.stepBytes[kProtoSimple] = 4096;
    sp.chunkSteps = 8;
    sp.splitTree = split;
    const SimSchedule s = build(sp);
    ASSERT_EQ(s.streams.size(), split ? 3u : 2u);
    EXPECT_EQ(describe(s, s.streams[0]), "24x[recv 1->0 + send 0->1 4096]");
    if (split) {
      EXPECT_EQ(describe(s, s.streams[1]), "24x[send 1->0 4096]");
      EXPECT_EQ(describe(s, s.streams[2]), "24x[recv 0->1]");
    } else {
      EXPECT_EQ(describe(s, s.streams[1]), "16x[send 1->0 4096] 8x[recv 0->1] 8x[send 1->0 4096] 16x[recv 0->1]");
    }
    const SimResult r = run(s, 0);
    EXPECT_EQ(r.events, 72u);
    EXPECT_TIME(r.timeUs, split ? 25 * P : 33 * P);
    EXPECT_TIME(r.streamFinishUs[0], split ? 25 * P : 33 * P);
    if (split) {
      EXPECT_TIME(r.streamFinishUs[1], 24 * P);
    }
  }
}

}  // namespace

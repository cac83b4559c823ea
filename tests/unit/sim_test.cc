// The discrete-event simulator (src/sim/): schedules small enough to time by hand on hand-built
// topologies (one link; a 3-rank pipeline; two channels sharing or not sharing a link; depth-1
// stop-and-wait; a 2-rank ring), errors that name the stream, step and connection (deadlock, a
// missing or extra sender, wrong ranks), and the speed of a 64-rank, 32-channel schedule.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "sim/sim.h"

namespace {

using namespace baton;

// Builds a TopoSystem by hand: nodes, one-way links and paths as (node, link index) hops.
struct TopoBuilder {
  TopoSystem sys;
  int node(NodeType t) {
    sys.nodes.emplace_back().type = t;
    return static_cast<int>(sys.nodes.size()) - 1;
  }
  int gpu() {  // a GPU node that is the next rank
    int n = node(NodeType::GPU);
    sys.nodes[n].rank = static_cast<int>(sys.rankNode.size());
    sys.rankNode.push_back(n);
    return n;
  }
  int link(int from, int to, LinkType t, double bw) {  // returns the index in nodes[from].links
    sys.nodes[from].links.push_back(TopoLink{t, bw, to});
    return static_cast<int>(sys.nodes[from].links.size()) - 1;
  }
  void path(int a, int b, std::initializer_list<std::pair<int, int>> hops) {  // type, bw unused
    sys.paths.resize(sys.nodes.size());
    for (auto& row : sys.paths) row.resize(sys.nodes.size());
    sys.paths[a][b].hops.clear();
    for (auto [n, l] : hops) sys.paths[a][b].hops.push_back(TopoPath::Hop{n, l});
  }
};

SimStep send(int conn, uint64_t bytes) { return SimStep{-1, conn, bytes}; }
SimStep recv(int conn) { return SimStep{conn, -1, 0}; }
SimStep recvSend(int in, int out, uint64_t bytes) { return SimStep{in, out, bytes}; }

SimParams params(double overhead) {
  SimParams p;
  p.stepOverheadUs = overhead;
  p.linkLatencyUs[static_cast<int>(LinkType::NVL)] = 0.6;
  p.linkLatencyUs[static_cast<int>(LinkType::PCI)] = 1.0;
  p.linkLatencyUs[static_cast<int>(LinkType::NET)] = 5.0;
  return p;
}

#define EXPECT_TIME(actual, expected) EXPECT_NEAR((actual), (expected), 1e-9 * (expected))

SimResult run(const TopoBuilder& tb, const SimSchedule& s, const SimParams& p) {
  SimResult r = simulate(tb.sys, s, p);
  EXPECT_EQ(r.error, "");
  return r;
}

// Two GPUs joined by one NVLink each way.
TopoBuilder twoGpus(double bw01, double bw10) {
  TopoBuilder tb;
  int a = tb.gpu(), b = tb.gpu();
  tb.path(a, b, {{a, tb.link(a, b, LinkType::NVL, bw01)}});
  tb.path(b, a, {{b, tb.link(b, a, LinkType::NVL, bw10)}});
  return tb;
}

TEST(Sim, OneSendOverOneLink) {
  TopoBuilder tb = twoGpus(20, 20);
  SimSchedule s;
  s.conns = {{0, 1, 8}};
  s.streams = {{0, 0, {send(0, 1000000)}}, {1, 0, {recv(0)}}};
  const double L = 0.6, t = 1e6 / (20 * 1e3);  // 50 µs
  SimResult r = run(tb, s, params(0));
  EXPECT_TIME(r.timeUs, L + t);
  EXPECT_EQ(r.events, 2u);
  ASSERT_EQ(r.streamFinishUs.size(), 2u);
  EXPECT_TIME(r.streamFinishUs[0], L + t);  // the sender's step ends at delivery
  // With an overhead the receive ends that much after arrival; the sender's overhead overlaps.
  r = run(tb, s, params(2));
  EXPECT_TIME(r.streamFinishUs[0], L + t);
  EXPECT_TIME(r.timeUs, L + t + 2);
  // Same node: LOC, bytes / kLocBw and no latency.
  tb.sys.rankNode[1] = tb.sys.rankNode[0];
  r = run(tb, s, params(0));
  EXPECT_TIME(r.timeUs, 1e6 / (kLocBw * 1e3));
}

// rank0 sends k steps to rank1 (NVL, bw g1), which forwards each to rank2 (PCI, bw g2).
double chain(double g1, double g2, double overhead, int k, std::vector<double>* finish) {
  TopoBuilder tb;
  int a = tb.gpu(), b = tb.gpu(), c = tb.gpu();
  tb.path(a, b, {{a, tb.link(a, b, LinkType::NVL, g1)}});
  tb.path(b, c, {{b, tb.link(b, c, LinkType::PCI, g2)}});
  SimSchedule s;
  s.conns = {{0, 1, 8}, {1, 2, 8}};
  s.streams = {{0, 0, std::vector<SimStep>(k, send(0, 1000000))},
               {1, 0, std::vector<SimStep>(k, recvSend(0, 1, 1000000))},
               {2, 0, std::vector<SimStep>(k, recv(1))}};
  SimResult r = run(tb, s, params(overhead));
  EXPECT_EQ(r.events, 3u * k);
  *finish = r.streamFinishUs;
  return r.timeUs;
}

TEST(Sim, ChainPipeline) {
  // Per-hop step times P = latency + B / bw. rank0's step j starts at j*P1 (it ends at delivery);
  // rank1's step j ends at max(its step j-1, arrival (j+1)*P1) + P2; rank2 adds the overhead o.
  // So time = fill (P1 + P2) + (k-1) * max(P1, P2) + o. Credit never binds (depth 8, k = 6).
  const double o = 0.5, B = 1e6;
  const int k = 6;
  std::vector<double> f;
  {  // second hop slower: 20 then 12 GB/s
    const double P1 = 0.6 + B / 20e3, P2 = 1.0 + B / 12e3;
    EXPECT_TIME(chain(20, 12, o, k, &f), P1 + P2 + (k - 1) * P2 + o);
    EXPECT_TIME(f[0], k * P1);
    EXPECT_TIME(f[1], P1 + k * P2);
  }
  {  // first hop slower: 10 then 40 GB/s
    const double P1 = 0.6 + B / 10e3, P2 = 1.0 + B / 40e3;
    EXPECT_TIME(chain(10, 40, o, k, &f), P1 + P2 + (k - 1) * P1 + o);
    EXPECT_TIME(f[1], k * P1 + P2);
  }
}

// Ranks 0,1 -> ranks 2,3 through PCI switches A -> B. Channel 0 sends rank0 -> rank2, channel 1
// rank1 -> rank3, k steps each. shared: both cross the same A -> B link; else each has its own.
SimResult twoChannels(bool shared, bool both, int k) {
  TopoBuilder tb;
  int g0 = tb.gpu(), g1 = tb.gpu(), g2 = tb.gpu(), g3 = tb.gpu();
  int A = tb.node(NodeType::PCI), B = tb.node(NodeType::PCI);
  int l0 = tb.link(g0, A, LinkType::PCI, 40), l1 = tb.link(g1, A, LinkType::PCI, 40);
  int ab0 = tb.link(A, B, LinkType::PCI, 10), ab1 = tb.link(A, B, LinkType::PCI, 10);
  int l2 = tb.link(B, g2, LinkType::PCI, 40), l3 = tb.link(B, g3, LinkType::PCI, 40);
  tb.path(g0, g2, {{g0, l0}, {A, ab0}, {B, l2}});
  tb.path(g1, g3, {{g1, l1}, {A, shared ? ab0 : ab1}, {B, l3}});
  SimSchedule s;
  s.conns = {{0, 2, 8}, {1, 3, 8}};
  const int k1 = both ? k : 0;
  s.streams = {{0, 0, std::vector<SimStep>(k, send(0, 1000000))},
               {2, 0, std::vector<SimStep>(k, recv(0))},
               {1, 1, std::vector<SimStep>(k1, send(1, 1000000))},
               {3, 1, std::vector<SimStep>(k1, recv(1))}};
  return run(tb, s, SimParams{});  // no latency, no overhead
}

TEST(Sim, SharedLinkContention) {
  const double t = 1e6 / 10e3;  // 100 µs on the 10 GB/s A -> B link (the path's bandwidth)
  const int k = 5;
  // No latency: alone, k back-to-back transfers; two channels on the shared link alternate on it
  // (ch0 [0,t], ch1 [t,2t], ch0 [2t,3t], ...): twice as long. With their own links: as alone.
  EXPECT_TIME(twoChannels(true, false, k).timeUs, k * t);
  SimResult r = twoChannels(true, true, k);
  EXPECT_TIME(r.timeUs, 2 * k * t);
  EXPECT_TIME(r.streamFinishUs[0], (2 * k - 1) * t);  // stream index 0 wins the tie at time 0
  EXPECT_TIME(twoChannels(false, true, k).timeUs, k * t);
  // One step: the second transfer waits for the shared link, then takes as long as the first.
  EXPECT_TIME(twoChannels(true, false, 1).timeUs, t);
  EXPECT_TIME(twoChannels(true, true, 1).timeUs, 2 * t);
  EXPECT_TIME(twoChannels(false, true, 1).timeUs, t);
}

// rank0 sends k steps to rank1 on a connection of the given depth; rank1 only receives.
SimResult stopAndWait(int depth, int k, double overhead) {
  TopoBuilder tb = twoGpus(20, 20);
  SimSchedule s;
  s.conns = {{0, 1, depth}};
  s.streams = {{0, 0, std::vector<SimStep>(k, send(0, 1000000))}, {1, 0, std::vector<SimStep>(k, recv(0))}};
  return run(tb, s, params(overhead));
}

TEST(Sim, FifoCreditThrottlesSender) {
  // P = 0.6 + 50 µs per transfer, overhead o = 80 > P: the receiver is the bottleneck.
  const double P = 0.6 + 1e6 / 20e3, o = 80;
  const int k = 7;
  // Deep FIFO: send j starts at j*o (its step lasts max(P, o)); receive j ends at j*o + P + o.
  SimResult r = stopAndWait(8, k, o);
  EXPECT_TIME(r.timeUs, P + k * o);
  EXPECT_TIME(r.streamFinishUs[0], k * o);
  // Depth 1: send j waits for receive j-1 to finish: one message in flight, period P + o.
  r = stopAndWait(1, k, o);
  EXPECT_TIME(r.timeUs, k * (P + o));
  EXPECT_TIME(r.streamFinishUs[0], (k - 1) * (P + o) + o);  // last send starts at (k-1)(P+o)
  // Depth 2: send j waits for receive j-2, which ends at (j-2)o + P + o < j*o since P < o:
  // credit never binds, same as deep.
  r = stopAndWait(2, k, o);
  EXPECT_TIME(r.timeUs, P + k * o);
}

TEST(Sim, TwoRankRing) {
  // Each rank: send, then recv+send, then recv, around a ring of 2 (conn 0: 0->1, conn 1: 1->0).
  for (auto [g01, g10] : {std::pair{20.0, 20.0}, std::pair{20.0, 8.0}}) {
    TopoBuilder tb = twoGpus(g01, g10);
    SimSchedule s;
    s.conns = {{0, 1, 8}, {1, 0, 8}};
    s.streams = {{0, 0, {send(0, 1000000), recvSend(1, 0, 1000000), recv(1)}},
                 {1, 0, {send(1, 1000000), recvSend(0, 1, 1000000), recv(0)}}};
    const double o = 0.25, P1 = 0.6 + 1e6 / (g01 * 1e3), P2 = 0.6 + 1e6 / (g10 * 1e3);
    const double M = std::max(P1, P2);
    // Step 0 ends at P1 / P2; step 1 starts at M (both need the other's first message) and ends at
    // M + own P; step 2 starts when the second message arrives, M + M at the latest.
    SimResult r = run(tb, s, params(o));
    EXPECT_EQ(r.events, 6u);
    EXPECT_TIME(r.timeUs, 2 * M + o);
    for (double f : r.streamFinishUs) EXPECT_TIME(f, 2 * M + o);
  }
}

#define EXPECT_HAS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

TEST(Sim, ErrorsNameStreamStepAndConnection) {
  TopoBuilder tb = twoGpus(20, 20);
  SimSchedule s;
  s.conns = {{0, 1, 8}, {1, 0, 8}};
  auto error = [&] { return simulate(tb.sys, s, params(0)).error; };
  // Both ranks receive first: nothing can start.
  s.streams = {{0, 3, {recv(1), send(0, 100)}}, {1, 3, {recv(0), send(1, 100)}}};
  EXPECT_HAS(error(),
             "deadlock: 2 stream(s) cannot progress: stream 0 (rank 0, channel 3) step 0 "
             "waits for message 0 on conn 1 (rank 1 -> rank 0)");
  EXPECT_HAS(error(), "stream 1 (rank 1, channel 3) step 0 waits for message 0 on conn 0");
  // A receive nobody sends; one receive more than the sends; a send nobody receives.
  s.streams = {{0, 2, {}}, {1, 2, {recv(0)}}};
  EXPECT_HAS(error(),
             "stream 1 (rank 1, channel 2) step 0 receives message 0 on conn 0 "
             "(rank 0 -> rank 1), but no stream sends on it");
  s.streams = {{0, 2, {send(0, 1), send(0, 1)}}, {1, 2, {recv(0), recv(0), recv(0)}}};
  EXPECT_HAS(error(),
             "stream 1 (rank 1, channel 2) step 2 receives message 2 on conn 0 (rank 0 "
             "-> rank 1), but its sender stream 0 (rank 0, channel 2) sends only 2");
  s.streams = {{0, 2, {send(0, 1)}}, {1, 2, {}}};
  EXPECT_HAS(error(), "stream 0 (rank 0, channel 2) step 0 sends message 0 on conn 0");
  // The wrong rank on a connection; a connection that does not exist.
  s.streams = {{1, 2, {send(0, 1)}}, {1, 2, {recv(0)}}};
  EXPECT_HAS(error(),
             "stream 0 (rank 1, channel 2) step 0 sends on conn 0 (rank 0 -> rank 1), "
             "but its sender is rank 0");
  s.streams = {{0, 2, {send(5, 1)}}};
  EXPECT_HAS(error(), "stream 0 (rank 0, channel 2) step 0: sendConn 5 is not a connection");
  // A path that was never computed.
  s.streams = {{0, 2, {send(0, 1)}}, {1, 2, {recv(0)}}};
  EXPECT_EQ(error(), "");
  tb.sys.paths[0][1].hops.clear();
  EXPECT_HAS(error(), "conn 0 (rank 0 -> rank 1): path from node 0 to node 1 has no hops");
}

TEST(Sim, CreditDeadlockNamesConnection) {
  TopoBuilder tb = twoGpus(20, 20);
  SimSchedule s;
  // rank0 sends two messages on conn 0 and then one on conn 2; rank1 takes the one on conn 2
  // first. With depth 1 the second send needs rank1 to have finished its first receive on conn 0,
  // which comes after the message rank0 has not sent yet: a credit deadlock. Depth 2 is fine.
  s.conns = {{0, 1, 1}, {1, 0, 8}, {0, 1, 8}};
  s.streams = {{0, 0, {send(0, 1), send(0, 1), send(2, 1)}}, {1, 0, {recv(2), recv(0), recv(0)}}};
  SimResult r = simulate(tb.sys, s, params(0));
  EXPECT_HAS(r.error, "deadlock: 2 stream(s) cannot progress");
  EXPECT_HAS(r.error,
             "stream 0 (rank 0, channel 0) step 1 waits for credit to send message 1 on "
             "conn 0 (rank 0 -> rank 1) (depth 1): stream 1 (rank 1, channel 0) has "
             "taken 0 messages");
  EXPECT_HAS(r.error, "stream 1 (rank 1, channel 0) step 0 waits for message 0 on conn 2");
  s.conns[0].depth = 2;
  r = simulate(tb.sys, s, params(0));
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.events, 6u);
}

TEST(Sim, LargeScheduleIsFast) {
  // 8 hosts x 8 ranks, 32 channels of a 2000-step ring each; ring neighbours joined by NVLink
  // within a host and by a NET link between hosts. All channels contend for the same links.
  const int hosts = 8, perHost = 8, nRanks = hosts * perHost, channels = 32, steps = 2000;
  TopoBuilder tb;
  for (int r = 0; r < nRanks; ++r) tb.gpu();
  for (int r = 0, next = 1; r < nRanks; ++r, next = (r + 1) % nRanks) {
    bool net = (r / perHost) != (next / perHost);
    tb.path(r, next, {{r, tb.link(r, next, net ? LinkType::NET : LinkType::NVL, net ? 25 : 150)}});
  }
  SimSchedule s;
  for (int c = 0; c < channels; ++c) {
    for (int r = 0; r < nRanks; ++r) s.conns.push_back({r, (r + 1) % nRanks, 8});
    for (int r = 0; r < nRanks; ++r) {
      int out = c * nRanks + r, in = c * nRanks + (r + nRanks - 1) % nRanks;
      SimStream& st = s.streams.emplace_back(SimStream{r, c, {send(out, 65536)}});
      st.steps.resize(steps - 1, recvSend(in, out, 65536));
      st.steps.push_back(recv(in));
    }
  }
  auto t0 = std::chrono::steady_clock::now();
  SimResult r = simulate(tb.sys, s, params(0.5));
  double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.events, uint64_t(nRanks) * channels * steps);
  // Every step of every channel crosses the 25 GB/s NET links one after another: at least
  // channels * (steps - 1) transfers of 65536 bytes each on one of them.
  EXPECT_GE(r.timeUs, double(channels) * (steps - 1) * 65536 / 25e3);
  EXPECT_LT(sec, 5.0);  // well under a second optimised; loose for sanitizer / -O0 builds
  printf("simulated %llu steps in %.3f s, predicted %.1f us\n", static_cast<unsigned long long>(r.events), sec,
         r.timeUs);
}

}  // namespace

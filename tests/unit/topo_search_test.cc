// Graph search and trees (src/topo/search*.cc, trees.cc): NCCL's binary and double binary trees for
// small sizes, per-channel trees (chains + dbtree over hosts), and rings on systems built in code:
// a two-socket PCIe box, an NVSwitch node, two hosts with two NICs each, CPU-only ranks, and a
// 16-host cluster for speed. Systems are built in code with a small path BFS (NCCL's path-type
// rules, no routing through GPUs), independent of the XML loader.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "topo/graph.h"

namespace {

using namespace baton;

// A system built node by node; finish() fills paths, maxBw and totalBw.
struct TestTopo {
  TopoSystem sys;

  int add(NodeType type, int host = 0) {
    TopoNode n;
    n.type = type;
    n.host = host;
    n.id = (uint64_t)host << 56 | sys.nodes.size();
    sys.nodes.push_back(n);
    return (int)sys.nodes.size() - 1;
  }
  void link(int a, int b, LinkType type, double bw) {
    sys.nodes[a].links.push_back(TopoLink{type, bw, b});
    sys.nodes[b].links.push_back(TopoLink{type, bw, a});
  }
  int gpu(int parent, double pciBw) {
    int g = add(NodeType::GPU, sys.nodes[parent].host);
    sys.nodes[g].rank = (int)sys.rankNode.size();
    sys.rankNode.push_back(g);
    link(parent, g, LinkType::PCI, pciBw);
    return g;
  }
  void finish();
};

// NCCL's hop types: NIC-NET links do not count (only NET-NET does), a PCI link touching a CPU is
// PHB, PCI switch to PCI switch is PXB.
PathType hopType(const TopoSystem& s, int from, const TopoLink& l) {
  NodeType a = s.nodes[from].type, b = s.nodes[l.remote].type;
  if (l.type == LinkType::NET) return a == NodeType::NET && b == NodeType::NET ? PathType::NET : PathType::LOC;
  if (l.type == LinkType::PCI) {
    if (a == NodeType::CPU || b == NodeType::CPU) return PathType::PHB;
    return a == NodeType::PCI && b == NodeType::PCI ? PathType::PXB : PathType::PIX;
  }
  return (PathType)(int)l.type;
}

void TestTopo::finish() {
  const int n = (int)sys.nodes.size();
  sys.paths.assign(n, std::vector<TopoPath>(n));
  for (int a = 0; a < n; ++a) {
    std::vector<TopoPath>& row = sys.paths[a];
    row[a].type = PathType::LOC;
    row[a].bw = kLocBw;
    std::vector<int> frontier{a};
    while (!frontier.empty()) {  // BFS by hops, a wider path replacing a narrower one
      std::vector<int> next;
      for (int u : frontier) {
        if (u != a && sys.nodes[u].type == NodeType::GPU) continue;
        for (int li = 0; li < (int)sys.nodes[u].links.size(); ++li) {
          const TopoLink& l = sys.nodes[u].links[li];
          if (l.remote == a) continue;
          double bw = std::min(row[u].bw, l.bw);
          TopoPath& p = row[l.remote];
          if (p.type != PathType::DIS && bw <= p.bw) continue;
          p.hops = row[u].hops;
          p.hops.push_back({u, li});
          p.bw = bw;
          p.type = PathType::LOC;
          next.push_back(l.remote);
        }
      }
      frontier.swap(next);
    }
    for (int b = 0; b < n; ++b) {
      if (b == a || row[b].hops.empty()) continue;
      for (const TopoPath::Hop& h : row[b].hops)
        row[b].type = std::max(row[b].type, hopType(sys, h.node, sys.nodes[h.node].links[h.link]));
    }
  }
  for (int ra : sys.rankNode) {
    double out = 0;
    for (const TopoLink& l : sys.nodes[ra].links) out += l.bw;
    sys.totalBw = std::max(sys.totalBw, out);
    for (int rb : sys.rankNode)
      if (ra != rb) sys.maxBw = std::max(sys.maxBw, sys.paths[ra][rb].bw);
  }
}

// Ring checks shared by the tests: a permutation of the ranks, each host's ranks contiguous.
void expectRing(const TopoSystem& sys, const ChannelGraph& ch) {
  const int n = (int)sys.rankNode.size();
  ASSERT_EQ((int)ch.ring.size(), n);
  std::vector<int> seen(n, 0);
  for (int r : ch.ring) {
    ASSERT_TRUE(r >= 0 && r < n);
    ++seen[r];
  }
  for (int r = 0; r < n; ++r) EXPECT_EQ(seen[r], 1) << "rank " << r;
  int changes = 0, hosts = 0;
  std::vector<int> hostSeen;
  for (int i = 0; i < n; ++i) {
    changes += sys.hostOfRank(ch.ring[i]) != sys.hostOfRank(ch.ring[(i + 1) % n]);
    int h = sys.hostOfRank(ch.ring[i]);
    if (std::find(hostSeen.begin(), hostSeen.end(), h) == hostSeen.end()) hostSeen.push_back(h), ++hosts;
  }
  EXPECT_EQ(changes, hosts > 1 ? hosts : 0) << "a host's ranks are not contiguous";
  EXPECT_GT(ch.bw, 0);
}

void expectTree(const TopoSystem& sys, const ChannelGraph& ch) {
  const int n = (int)sys.rankNode.size();
  ASSERT_EQ((int)ch.tree.size(), n);
  int roots = 0;
  for (int r = 0; r < n; ++r) {
    const TreeLinks& t = ch.tree[r];
    roots += t.up < 0;
    if (t.up >= 0) {
      const TreeLinks& p = ch.tree[t.up];
      EXPECT_TRUE(p.down[0] == r || p.down[1] == r || p.down[2] == r) << "rank " << r;
    }
    for (int d : t.down) {
      if (d >= 0) {
        EXPECT_EQ(ch.tree[d].up, r);
      }
    }
  }
  EXPECT_EQ(roots, 1);
}

int ringNext(const ChannelGraph& ch, int r, int step) {
  int n = (int)ch.ring.size();
  int i = (int)(std::find(ch.ring.begin(), ch.ring.end(), r) - ch.ring.begin());
  return ch.ring[(i + step + n) % n];
}

// Two AMD sockets (16 GB/s between them), two PCIe Gen4 switches per socket, two GPUs per switch.
TestTopo twoSocket() {
  TestTopo t;
  int cpu[2] = {t.add(NodeType::CPU), t.add(NodeType::CPU)};
  for (int c : cpu) t.sys.nodes[c].vendor = "AuthenticAMD";
  t.link(cpu[0], cpu[1], LinkType::SYS, 16);
  for (int s = 0; s < 4; ++s) {
    int sw = t.add(NodeType::PCI);
    t.link(cpu[s / 2], sw, LinkType::PCI, 24);
    t.gpu(sw, 24);
    t.gpu(sw, 24);
  }
  t.finish();
  return t;
}

TEST(TopoSearch, TwoSocketRingsCrossTheSocketLinkTwiceAndKeepSwitchPairsAdjacent) {
  TestTopo t = twoSocket();
  CommGraph g;
  ASSERT_EQ(searchGraph(t.sys, 1, 16, &g), ncclSuccess);
  ASSERT_GE(g.channels.size(), 2u);
  EXPECT_EQ(g.pattern, "ring+chain");
  for (const ChannelGraph& ch : g.channels) {
    expectRing(t.sys, ch);
    expectTree(t.sys, ch);
    int crossings = 0;
    for (int i = 0; i < 8; ++i) crossings += (ch.ring[i] / 4) != (ch.ring[(i + 1) % 8] / 4);
    EXPECT_EQ(crossings, 2);
    for (int r = 0; r < 8; ++r) {
      int mate = r ^ 1;  // the GPU under the same switch
      EXPECT_TRUE(ringNext(ch, r, 1) == mate || ringNext(ch, r, -1) == mate) << "rank " << r;
    }
    EXPECT_EQ(ch.worstPath, PathType::SYS);
    EXPECT_LE(ch.bw, 16);
  }
}

TEST(TopoSearch, NvSwitchNodeRingsCoverAllGpusOverNvLink) {
  TestTopo t;
  int cpu = t.add(NodeType::CPU), nvs = t.add(NodeType::NVS);
  for (int s = 0; s < 4; ++s) {
    int sw = t.add(NodeType::PCI);
    t.link(cpu, sw, LinkType::PCI, 24);
    for (int k = 0; k < 2; ++k) t.link(t.gpu(sw, 24), nvs, LinkType::NVL, 18 * 20.6);
  }
  t.finish();
  CommGraph g;
  ASSERT_EQ(searchGraph(t.sys, 1, 16, &g), ncclSuccess);
  ASSERT_GE(g.channels.size(), 4u);
  EXPECT_EQ(g.channels.size() % 2, 0u);
  const size_t half = g.channels.size() / 2;
  for (size_t c = 0; c < g.channels.size(); ++c) {
    const ChannelGraph& ch = g.channels[c];
    expectRing(t.sys, ch);
    expectTree(t.sys, ch);
    EXPECT_EQ(ch.worstPath, PathType::NVL);
    EXPECT_EQ(ch.treeIndex, c < half ? 0 : 1);
    EXPECT_EQ(ch.ring, g.channels[c % half].ring);  // the second half duplicates the first
  }
  // All NVSwitch paths are equal: rank order, as NCCL tries the PCI order first.
  EXPECT_EQ(g.channels[0].ring, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  // Link accounting: the channels together never ask more of a GPU's NVLinks than they carry.
  EXPECT_LE(half * g.channels[0].bw, 18 * 20.6 + 1e-6);
}

// Two hosts: two PCIe switches, each with two GPUs and a 100 Gb/s NIC; NICs joined rail by rail.
TestTopo twoHosts(int nets[2][2]) {
  TestTopo t;
  for (int h = 0; h < 2; ++h) {
    int cpu = t.add(NodeType::CPU, h);
    for (int s = 0; s < 2; ++s) {
      int sw = t.add(NodeType::PCI, h);
      t.link(cpu, sw, LinkType::PCI, 24);
      t.gpu(sw, 24);
      t.gpu(sw, 24);
      int nic = t.add(NodeType::NIC, h);
      t.link(sw, nic, LinkType::PCI, 24);
      nets[h][s] = t.add(NodeType::NET, h);
      t.link(nic, nets[h][s], LinkType::NET, 12.5);
    }
  }
  for (int s = 0; s < 2; ++s) t.link(nets[0][s], nets[1][s], LinkType::NET, 12.5);
  t.sys.nHosts = 2;
  t.finish();
  return t;
}

TEST(TopoSearch, TwoHostsRingsStayContiguousUseBothNicsAndTreesSpanHosts) {
  int nets[2][2];
  TestTopo t = twoHosts(nets);
  CommGraph g;
  ASSERT_EQ(searchGraph(t.sys, 1, 8, &g), ncclSuccess);
  EXPECT_EQ(g.pattern, "ring+chain+dbtree");
  ASSERT_EQ(g.channels.size(), 4u);  // two rings (one per NIC), each on tree 0 and tree 1
  for (int c = 0; c < 4; ++c) {
    const ChannelGraph& ch = g.channels[c];
    SCOPED_TRACE("channel " + std::to_string(c));
    expectRing(t.sys, ch);
    expectTree(t.sys, ch);
    EXPECT_EQ(ch.worstPath, PathType::NET);
    int rail = c % 2;
    ASSERT_EQ(ch.nets.size(), 2u);
    EXPECT_EQ(ch.nets[0], nets[0][rail]);
    EXPECT_EQ(ch.nets[1], nets[1][rail]);
    // Each host's part starts at a GPU beside the channel's NIC: ranks 4h + 2*rail + {0,1}.
    EXPECT_EQ(ch.ring[0] / 2, rail);
    EXPECT_EQ(ch.ring[4] / 2, 2 + rail);
    // Trees: a chain in ring order inside each host, the host heads joined by the dbtree.
    int head0 = ch.ring[0], head1 = ch.ring[4];
    for (int i = 1; i < 8; ++i) {
      if (i != 4) {
        EXPECT_EQ(ch.tree[ch.ring[i]].up, ch.ring[i - 1]);
      }
    }
    if (ch.treeIndex == 0) {
      EXPECT_EQ(ch.tree[head0].up, -1);
      EXPECT_EQ(ch.tree[head1].up, head0);
    } else {
      EXPECT_EQ(ch.tree[head1].up, -1);
      EXPECT_EQ(ch.tree[head0].up, head1);
    }
  }
  EXPECT_EQ(g.channels[0].treeIndex, 0);
  EXPECT_EQ(g.channels[2].treeIndex, 1);
  EXPECT_EQ(g.channels[2].ring, g.channels[0].ring);
  EXPECT_NE(g.channels[0].ring, g.channels[1].ring);
}

TEST(TopoSearch, CpuRanksRingInRankOrderGroupedByHost) {
  TestTopo t;
  int cpu[4];
  for (int c = 0; c < 4; ++c) cpu[c] = t.add(NodeType::CPU, c / 2);
  t.link(cpu[0], cpu[1], LinkType::SYS, 16);
  t.link(cpu[2], cpu[3], LinkType::SYS, 16);
  int net[2];
  for (int h = 0; h < 2; ++h) {
    int nic = t.add(NodeType::NIC, h);
    net[h] = t.add(NodeType::NET, h);
    t.link(cpu[2 * h], nic, LinkType::PCI, 24);
    t.link(nic, net[h], LinkType::NET, 12.5);
  }
  t.link(net[0], net[1], LinkType::NET, 12.5);
  t.sys.rankNode = {cpu[0], cpu[2], cpu[0], cpu[1], cpu[3], cpu[2]};
  t.sys.nHosts = 2;
  t.finish();
  CommGraph g;
  ASSERT_EQ(searchGraph(t.sys, 1, 8, &g), ncclSuccess);
  ASSERT_EQ(g.channels.size(), 2u);
  for (const ChannelGraph& ch : g.channels) {
    EXPECT_EQ(ch.ring, (std::vector<int>{0, 2, 3, 1, 4, 5}));
    EXPECT_EQ(ch.worstPath, PathType::NET);
    expectTree(t.sys, ch);
  }
  EXPECT_EQ(g.channels[1].treeIndex, 1);
  ASSERT_EQ(searchGraph(t.sys, 5, 5, &g), ncclSuccess);  // min channels: copies, trees alternating
  ASSERT_EQ(g.channels.size(), 5u);
  for (int c = 0; c < 5; ++c) EXPECT_EQ(g.channels[c].treeIndex, c % 2);
}

TEST(TopoSearch, DisconnectedGpusFallBackToRankOrder) {
  TestTopo t;
  for (int c = 0; c < 3; ++c) t.gpu(t.add(NodeType::CPU), 24);
  t.finish();
  CommGraph g;
  ASSERT_EQ(searchGraph(t.sys, 1, 1, &g), ncclSuccess);
  ASSERT_EQ(g.channels.size(), 1u);
  EXPECT_EQ(g.channels[0].ring, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(g.channels[0].worstPath, PathType::DIS);
  EXPECT_DOUBLE_EQ(g.channels[0].bw, 0.1);
}

TEST(TopoSearch, BadArgumentsAreErrors) {
  TestTopo t = twoSocket();
  CommGraph g;
  EXPECT_EQ(searchGraph(t.sys, 1, 0, &g), ncclInvalidArgument);
  EXPECT_EQ(searchGraph(t.sys, 4, 2, &g), ncclInvalidArgument);
  EXPECT_EQ(searchGraph(t.sys, 1, 2, nullptr), ncclInvalidArgument);
  t.sys.paths.clear();
  EXPECT_EQ(searchGraph(t.sys, 1, 2, &g), ncclInternalError);
}

// 16 hosts like a DGX H100: 8 GPUs on an NVSwitch, each GPU with its own PCIe Gen5 switch and a
// 400 Gb/s NIC, two Intel sockets; rail k of every host joined to rail k of every other.
TestTopo cluster(int nHosts) {
  TestTopo t;
  std::vector<std::vector<int>> rail(8);
  for (int h = 0; h < nHosts; ++h) {
    int cpu[2] = {t.add(NodeType::CPU, h), t.add(NodeType::CPU, h)};
    for (int c : cpu) t.sys.nodes[c].vendor = "GenuineIntel";
    t.link(cpu[0], cpu[1], LinkType::SYS, 40);
    int nvs = t.add(NodeType::NVS, h);
    for (int k = 0; k < 8; ++k) {
      int sw = t.add(NodeType::PCI, h);
      t.link(cpu[k / 4], sw, LinkType::PCI, 48);
      t.link(t.gpu(sw, 48), nvs, LinkType::NVL, 18 * 20.6);
      int nic = t.add(NodeType::NIC, h), net = t.add(NodeType::NET, h);
      t.link(sw, nic, LinkType::PCI, 48);
      t.link(nic, net, LinkType::NET, 50);
      for (int other : rail[k]) t.link(other, net, LinkType::NET, 50);
      rail[k].push_back(net);
    }
  }
  t.sys.nHosts = nHosts;
  t.finish();
  return t;
}

TEST(TopoSearch, SixteenHostsAreFastAndDeterministic) {
  TestTopo t = cluster(16);
  CommGraph g, again;
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(searchGraph(t.sys, 1, 32, &g), ncclSuccess);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[ info ] 16 hosts x 8 GPUs: %zu channels at %.1f GB/s in %.1f ms\n", g.channels.size(), g.channels[0].bw,
              ms);
  EXPECT_LT(ms, 250);  // 50 ms is the aim; the margin is for loaded, sanitized or -O0 builds
  ASSERT_EQ(searchGraph(t.sys, 1, 32, &again), ncclSuccess);
  ASSERT_EQ(g.channels.size(), again.channels.size());
  for (size_t c = 0; c < g.channels.size(); ++c) {
    const ChannelGraph& ch = g.channels[c];
    expectRing(t.sys, ch);
    expectTree(t.sys, ch);
    EXPECT_EQ(ch.ring, again.channels[c].ring);
    EXPECT_EQ(ch.nets, again.channels[c].nets);
    EXPECT_EQ(ch.bw, again.channels[c].bw);
    ASSERT_EQ(ch.nets.size(), 16u);
  }
  // Channels spread over the NICs: the first eight use eight different ones.
  std::vector<int> first;
  for (size_t c = 0; c < std::min<size_t>(8, g.channels.size() / 2); ++c) first.push_back(g.channels[c].nets[0]);
  std::sort(first.begin(), first.end());
  EXPECT_EQ(std::unique(first.begin(), first.end()), first.end());
}

}  // namespace

// Graph search on the topology fixtures (tests/topo/fixtures/*.xml through topoFromXml and
// topoComputePaths): a laptop's single GPU, a two-socket PCIe server, a DGX H100 and a cluster node
// replicated as two hosts. A fixture that is missing is skipped with its path named.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "misc/debug.h"
#include "topo/graph.h"
#include "topo/xml.h"

namespace {

using namespace baton;

std::string fixturePath(const char* name) {
  std::string here = __FILE__;  // tests/unit/<this file>, relative to where the build runs
  return here.substr(0, here.rfind('/') + 1) + "../topo/fixtures/" + name;
}

// Loads a fixture as `nHosts` hosts with paths; false (and a skip) when the file is not there.
bool load(const char* name, int nHosts, TopoSystem* sys) {
  std::string path = fixturePath(name);
  if (FILE* f = std::fopen(path.c_str(), "r")) {
    std::fclose(f);
  } else {
    return false;
  }
  std::unique_ptr<XmlNode> root;
  EXPECT_EQ(xmlLoadFile(path, &root), ncclSuccess) << lastError();
  EXPECT_EQ(topoFromXml(*root, nHosts, sys), ncclSuccess) << lastError();
  topoComputePaths(sys);
  return !sys->rankNode.empty();
}

#define LOAD_OR_SKIP(name, hosts, sys) \
  if (!load(name, hosts, sys)) GTEST_SKIP() << "no fixture " << fixturePath(name)

void expectRingsAndTrees(const TopoSystem& sys, const CommGraph& g) {
  const int n = (int)sys.rankNode.size();
  ASSERT_FALSE(g.channels.empty());
  for (const ChannelGraph& ch : g.channels) {
    std::vector<int> sorted = ch.ring;
    std::sort(sorted.begin(), sorted.end());
    for (int r = 0; r < n; ++r) ASSERT_EQ(sorted[r], r);
    int changes = 0;
    for (int i = 0; i < n; ++i) changes += sys.hostOfRank(ch.ring[i]) != sys.hostOfRank(ch.ring[(i + 1) % n]);
    EXPECT_EQ(changes, sys.nHosts > 1 ? sys.nHosts : 0);
    int roots = 0;
    for (int r = 0; r < n; ++r) {
      roots += ch.tree[r].up < 0;
      for (int d : ch.tree[r].down) {
        if (d >= 0) {
          EXPECT_EQ(ch.tree[d].up, r);
        }
      }
    }
    EXPECT_EQ(roots, 1);
    EXPECT_GT(ch.bw, 0);
  }
}

TEST(TopoSearchFixture, LaptopSingleGpu) {
  TopoSystem sys;
  LOAD_OR_SKIP("laptop.xml", 1, &sys);
  CommGraph g;
  ASSERT_EQ(searchGraph(sys, 2, 2, &g), ncclSuccess);
  ASSERT_EQ(g.channels.size(), 2u);
  expectRingsAndTrees(sys, g);
  EXPECT_EQ(g.channels[0].ring, std::vector<int>{0});
  EXPECT_EQ(g.channels[0].tree[0].nDown(), 0);
  EXPECT_EQ(g.channels[0].worstPath, PathType::LOC);
}

TEST(TopoSearchFixture, TwoSocketCrossesTheSocketsTwiceWithSwitchPairsAdjacent) {
  TopoSystem sys;
  LOAD_OR_SKIP("two-socket.xml", 1, &sys);
  ASSERT_EQ(sys.rankNode.size(), 8u);
  CommGraph g;
  ASSERT_EQ(searchGraph(sys, 1, 16, &g), ncclSuccess);
  expectRingsAndTrees(sys, g);
  for (const ChannelGraph& ch : g.channels) {
    int crossings = 0;
    for (int i = 0; i < 8; ++i) crossings += ch.ring[i] / 4 != ch.ring[(i + 1) % 8] / 4;
    EXPECT_EQ(crossings, 2);
    for (int i = 0; i < 8; ++i) {
      int mate = ch.ring[i] ^ 1;  // GPUs 2k and 2k+1 share a PEX8747
      EXPECT_TRUE(ch.ring[(i + 1) % 8] == mate || ch.ring[(i + 7) % 8] == mate) << "rank " << ch.ring[i];
    }
    EXPECT_EQ(ch.worstPath, PathType::SYS);
  }
}

TEST(TopoSearchFixture, DgxH100RingsRunOverNvLink) {
  TopoSystem sys;
  LOAD_OR_SKIP("dgx-h100.xml", 1, &sys);
  ASSERT_EQ(sys.rankNode.size(), 8u);
  CommGraph g;
  ASSERT_EQ(searchGraph(sys, 1, 32, &g), ncclSuccess);
  expectRingsAndTrees(sys, g);
  EXPECT_GE(g.channels.size(), 4u);
  for (const ChannelGraph& ch : g.channels) EXPECT_EQ(ch.worstPath, PathType::NVL);
}

TEST(TopoSearchFixture, ClusterNodeAsTwoHosts) {
  TopoSystem sys;
  LOAD_OR_SKIP("cluster-node.xml", 2, &sys);
  ASSERT_EQ(sys.nHosts, 2);
  CommGraph g, again;
  ASSERT_EQ(searchGraph(sys, 1, 32, &g), ncclSuccess);
  ASSERT_EQ(searchGraph(sys, 1, 32, &again), ncclSuccess);
  expectRingsAndTrees(sys, g);
  EXPECT_EQ(g.pattern, "ring+chain+dbtree");
  const size_t half = g.channels.size() / 2;
  ASSERT_GE(half, 1u);
  std::vector<int> nets;
  for (size_t c = 0; c < g.channels.size(); ++c) {
    const ChannelGraph& ch = g.channels[c];
    EXPECT_EQ(ch.ring, again.channels[c].ring);
    EXPECT_EQ(ch.worstPath, PathType::NET);
    ASSERT_EQ(ch.nets.size(), 2u);
    if (c < half) nets.push_back(ch.nets[0]);
    // Tree 0 is rooted on host 0, tree 1 (the mirror for two hosts) on host 1.
    int root = (int)(std::find_if(ch.tree.begin(), ch.tree.end(), [](const TreeLinks& t) { return t.up < 0; }) -
                     ch.tree.begin());
    EXPECT_EQ(sys.hostOfRank(root), ch.treeIndex == 0 ? 0 : 1) << "channel " << c;
  }
  // With several NICs, the first channels leave through different ones.
  size_t nNets = 0;
  for (const TopoNode& n : sys.nodes) nNets += n.type == NodeType::NET && n.host == 0;
  std::vector<int> firsts(nets.begin(), nets.begin() + std::min(nets.size(), nNets));
  std::sort(firsts.begin(), firsts.end());
  EXPECT_EQ(std::unique(firsts.begin(), firsts.end()), firsts.end());
}

}  // namespace

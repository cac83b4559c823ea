// Trees (src/topo/trees.cc): NCCL's binary tree and the double binary tree's second tree for
// n = 1..64 (shape, roots, hand-written tables for small n, the leaf-in-one-tree property exactly as
// it holds for mirror and shift) and the per-channel tree: chains inside hosts + dbtree over hosts.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "topo/graph.h"

namespace {

using namespace baton;

// Hosts of CPU ranks: buildChannelTree needs only which host each rank is on.
TopoSystem hostsOf(const std::vector<int>& hostOf) {
  TopoSystem sys;
  for (int h : hostOf) {
    TopoNode n;
    n.type = NodeType::CPU;
    n.host = h;
    sys.nodes.push_back(n);
    sys.rankNode.push_back((int)sys.nodes.size() - 1);
    sys.nHosts = std::max(sys.nHosts, h + 1);
  }
  return sys;
}

struct Rel {
  int parent, c0, c1;
};

std::vector<Rel> treeOf(int n, int tree) {
  std::vector<Rel> t(n);
  for (int v = 0; v < n; ++v) doubleBinaryTree(n, v, tree, &t[v].parent, &t[v].c0, &t[v].c1);
  return t;
}

bool isLeaf(const Rel& r) { return r.c0 < 0 && r.c1 < 0; }

TEST(TopoTrees, EveryTreeIsATreeWithASingleChildRoot) {
  for (int n = 1; n <= 64; ++n) {
    for (int tree = 0; tree < 2; ++tree) {
      std::vector<Rel> t = treeOf(n, tree);
      int root = -1, edges = 0;
      for (int v = 0; v < n; ++v) {
        const Rel& r = t[v];
        if (r.parent < 0) {
          EXPECT_EQ(root, -1) << "n " << n << " tree " << tree << ": two roots";
          root = v;
        } else {
          ASSERT_LT(r.parent, n);
          EXPECT_TRUE(t[r.parent].c0 == v || t[r.parent].c1 == v) << "n " << n << " tree " << tree << " node " << v;
        }
        for (int c : {r.c0, r.c1}) {
          if (c < 0) continue;
          ASSERT_LT(c, n);
          EXPECT_EQ(t[c].parent, v) << "n " << n << " tree " << tree << " child " << c;
          ++edges;
        }
        if (r.c0 >= 0 && r.c1 >= 0) {
          EXPECT_NE(r.c0, r.c1);
        }
      }
      ASSERT_GE(root, 0) << "n " << n << " tree " << tree;
      EXPECT_EQ(edges, n - 1);
      // The root has exactly one child, in the second slot, as ncclGetBtree does.
      EXPECT_EQ(t[root].c0, -1);
      EXPECT_EQ(t[root].c1 >= 0, n > 1);
      EXPECT_EQ(root, tree == 0 ? 0 : (n % 2 == 0 ? n - 1 : 1 % n));
      // Every node reached once from the root.
      std::vector<int> seen(n, 0), stack{root};
      while (!stack.empty()) {
        int v = stack.back();
        stack.pop_back();
        ++seen[v];
        for (int c : {t[v].c0, t[v].c1})
          if (c >= 0) stack.push_back(c);
      }
      for (int v = 0; v < n; ++v) EXPECT_EQ(seen[v], 1) << "n " << n << " tree " << tree << " node " << v;
    }
  }
}

// Even n (mirror): every node is a leaf in at least one tree. Odd n (shift): every node but 0 is;
// node 0 is tree 0's root (one child) and, from n = 3 on, interior in tree 1.
TEST(TopoTrees, NoNodeIsInteriorInBothTrees) {
  for (int n = 1; n <= 64; ++n) {
    std::vector<Rel> t0 = treeOf(n, 0), t1 = treeOf(n, 1);
    for (int v = 0; v < n; ++v) {
      bool leafSomewhere = isLeaf(t0[v]) || isLeaf(t1[v]);
      if (n % 2 == 0 || v != 0) {
        EXPECT_TRUE(leafSomewhere) << "n " << n << " node " << v;
      }
    }
    if (n % 2 == 1 && n >= 3) {
      EXPECT_EQ(t0[0].parent, -1);
      EXPECT_FALSE(isLeaf(t1[0])) << "n " << n;
    }
  }
}

void expectTable(int n, int tree, const std::vector<Rel>& want) {
  std::vector<Rel> got = treeOf(n, tree);
  for (int v = 0; v < n; ++v) {
    EXPECT_EQ(got[v].parent, want[v].parent) << "n " << n << " tree " << tree << " node " << v;
    EXPECT_EQ(got[v].c0, want[v].c0) << "n " << n << " tree " << tree << " node " << v;
    EXPECT_EQ(got[v].c1, want[v].c1) << "n " << n << " tree " << tree << " node " << v;
  }
}

TEST(TopoTrees, HandWrittenTables) {
  expectTable(1, 0, {{-1, -1, -1}});
  expectTable(1, 1, {{-1, -1, -1}});
  expectTable(2, 0, {{-1, -1, 1}, {0, -1, -1}});
  expectTable(2, 1, {{1, -1, -1}, {-1, -1, 0}});
  // n = 4: 0 -> 2 -> {1, 3}; mirror: 3 -> 1 -> {2, 0}
  expectTable(4, 0, {{-1, -1, 2}, {2, -1, -1}, {0, 1, 3}, {2, -1, -1}});
  expectTable(4, 1, {{1, -1, -1}, {3, 2, 0}, {1, -1, -1}, {-1, -1, 1}});
  // n = 5: 0 -> 4 -> 2 -> {1, 3}; shift: 1 -> 0 -> 3 -> {2, 4}
  expectTable(5, 0, {{-1, -1, 4}, {2, -1, -1}, {4, 1, 3}, {2, -1, -1}, {0, 2, -1}});
  expectTable(5, 1, {{1, 3, -1}, {-1, -1, 0}, {3, -1, -1}, {0, 2, 4}, {3, -1, -1}});
  // n = 8: 0 -> 4 -> {2 -> {1, 3}, 6 -> {5, 7}}
  expectTable(8, 0, {{-1, -1, 4}, {2, -1, -1}, {4, 1, 3}, {2, -1, -1}, {0, 2, 6}, {6, -1, -1}, {4, 5, 7}, {6, -1, -1}});
}

// Per-rank tree checks shared by the search tests: one root, up/down agree, every rank reached.
void expectTreeShape(const TopoSystem& sys, const ChannelGraph& ch) {
  const int n = (int)sys.rankNode.size();
  ASSERT_EQ((int)ch.tree.size(), n);
  int root = -1;
  for (int r = 0; r < n; ++r) {
    const TreeLinks& t = ch.tree[r];
    if (t.up < 0) {
      EXPECT_EQ(root, -1) << "two roots";
      root = r;
    } else {
      const TreeLinks& p = ch.tree[t.up];
      EXPECT_TRUE(p.down[0] == r || p.down[1] == r || p.down[2] == r) << "rank " << r;
    }
    for (int d : t.down) {
      if (d >= 0) {
        EXPECT_EQ(ch.tree[d].up, r) << "rank " << r << " child " << d;
      }
    }
  }
  ASSERT_GE(root, 0);
  std::vector<int> seen(n, 0), stack{root};
  while (!stack.empty()) {
    int v = stack.back();
    stack.pop_back();
    ++seen[v];
    for (int d : ch.tree[v].down)
      if (d >= 0) stack.push_back(d);
  }
  for (int r = 0; r < n; ++r) EXPECT_EQ(seen[r], 1) << "rank " << r;
}

TEST(TopoTrees, ChannelTreeChainsHostsAndLinksTheirHeads) {
  TopoSystem sys = hostsOf({0, 0, 0, 1, 1, 1, 2, 2, 2});
  ChannelGraph ch;
  ch.ring = {1, 2, 3, 4, 5, 6, 7, 8, 0};  // host 0 entered at rank 0 (after 8)
  ch.treeIndex = 0;
  buildChannelTree(sys, &ch);
  expectTreeShape(sys, ch);
  // Hosts 0 -> 2 -> 1 (btree of 3); heads 0, 6, 3; down[0] is the chain child.
  EXPECT_EQ(ch.tree[0].up, -1);
  EXPECT_EQ(ch.tree[0].down[0], 1);
  EXPECT_EQ(ch.tree[0].down[1], 6);
  EXPECT_EQ(ch.tree[1].up, 0);
  EXPECT_EQ(ch.tree[2].up, 1);
  EXPECT_EQ(ch.tree[2].nDown(), 0);
  EXPECT_EQ(ch.tree[6].up, 0);
  EXPECT_EQ(ch.tree[6].down[0], 7);
  EXPECT_EQ(ch.tree[6].down[1], 3);
  EXPECT_EQ(ch.tree[3].up, 6);
  EXPECT_EQ(ch.tree[3].nDown(), 1);
  // Tree 1 (shift for 3 hosts): 1 -> 0 -> 2.
  ch.treeIndex = 1;
  buildChannelTree(sys, &ch);
  expectTreeShape(sys, ch);
  EXPECT_EQ(ch.tree[3].up, -1);
  EXPECT_EQ(ch.tree[3].down[1], 0);
  EXPECT_EQ(ch.tree[0].up, 3);
  EXPECT_EQ(ch.tree[0].down[1], 6);
  EXPECT_EQ(ch.tree[6].up, 0);
  // 17 hosts of 2: the head of an interior host has chain + two host children.
  std::vector<int> hostOf;
  for (int h = 0; h < 17; ++h) hostOf.insert(hostOf.end(), {h, h});
  TopoSystem big = hostsOf(hostOf);
  ch.ring.clear();
  for (int r = 0; r < 34; ++r) ch.ring.push_back(r);
  for (int tree = 0; tree < 2; ++tree) {
    ch.treeIndex = tree;
    buildChannelTree(big, &ch);
    expectTreeShape(big, ch);
    int three = 0;
    for (const TreeLinks& l : ch.tree) three += l.nDown() == 3;
    EXPECT_GT(three, 0);
  }
}

}  // namespace

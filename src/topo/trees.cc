// Trees: NCCL's binary tree over node indices (ncclGetBtree), the double binary tree's second tree
// (ncclGetDtree: mirror for an even count, shift by one for an odd count), and the per-rank tree of
// one channel: a chain inside each host plus the double binary tree across hosts. Lesson 07.
#include <algorithm>
#include <vector>

#include "graph.h"

namespace baton {

void binaryTree(int nNodes, int node, int* parent, int* child0, int* child1) {
  // The lowest set bit of `node` gives its level: nodes with bit b set and nothing below it sit b
  // levels above the leaves (odd nodes are leaves). Node 0 has no set bit and becomes the root.
  int bit = 1;
  for (; bit < nNodes; bit <<= 1) {
    if (bit & node) break;
  }
  if (node == 0) {
    // The root has a single child, the highest power of two below nNodes.
    *parent = -1;
    *child0 = -1;
    *child1 = nNodes > 1 ? bit >> 1 : -1;
    return;
  }
  int up = (node ^ bit) | (bit << 1);
  if (up >= nNodes) up = node ^ bit;  // the natural parent does not exist: attach one level lower
  *parent = up;
  int lowbit = bit >> 1;
  *child0 = lowbit == 0 ? -1 : node - lowbit;  // always in range: smaller than node
  int down1 = lowbit == 0 ? -1 : node + lowbit;
  while (down1 >= nNodes) {  // right child out of range: take the next smaller offset
    lowbit >>= 1;
    down1 = lowbit == 0 ? -1 : node + lowbit;
  }
  *child1 = down1;
}

void doubleBinaryTree(int nNodes, int node, int tree, int* parent, int* child0, int* child1) {
  if (tree == 0) {
    binaryTree(nNodes, node, parent, child0, child1);
    return;
  }
  int u, d0, d1;
  if (nNodes % 2 == 1) {
    // Shift: node plays the role of node-1 in the first tree. Leaves of tree 0 are the odd nodes;
    // shifted, they become the interior nodes of tree 1 (node 0 alone is interior in both).
    binaryTree(nNodes, (node - 1 + nNodes) % nNodes, &u, &d0, &d1);
    auto map = [&](int x) { return x < 0 ? -1 : (x + 1) % nNodes; };
    *parent = map(u), *child0 = map(d0), *child1 = map(d1);
  } else {
    // Mirror: n-1-node flips parity, so every node is a leaf in at least one of the two trees.
    binaryTree(nNodes, nNodes - 1 - node, &u, &d0, &d1);
    auto map = [&](int x) { return x < 0 ? -1 : nNodes - 1 - x; };
    *parent = map(u), *child0 = map(d0), *child1 = map(d1);
  }
}

namespace {

void addDown(TreeLinks* t, int child) {
  for (int& d : t->down) {
    if (d < 0) {
      d = child;
      return;
    }
  }
}

}  // namespace

void buildChannelTree(const TopoSystem& sys, ChannelGraph* channel) {
  const int nRanks = (int)sys.rankNode.size();
  const std::vector<int>& ring = channel->ring;
  const int n = (int)ring.size();
  channel->tree.assign(nRanks, TreeLinks{});
  if (n == 0) return;

  // Hosts are numbered in order of their first rank (as NCCL numbers nodes); the tree over hosts
  // uses that numbering so every channel agrees on which host is index 0.
  int maxHost = 0;
  for (int r = 0; r < nRanks; ++r) maxHost = std::max(maxHost, sys.hostOfRank(r));
  std::vector<int> hostIndex(maxHost + 1, -1);
  int nh = 0;
  for (int r = 0; r < nRanks; ++r) {
    int h = sys.hostOfRank(r);
    if (hostIndex[h] < 0) hostIndex[h] = nh++;
  }

  // Walk the ring from a host boundary so each host's ranks come out as one run: the first rank of
  // a run is where the ring enters the host.
  int start = 0;
  for (int i = 0; i < n; ++i) {
    if (sys.hostOfRank(ring[(i + n - 1) % n]) != sys.hostOfRank(ring[i])) {
      start = i;
      break;
    }
  }
  std::vector<std::vector<int>> chains(nh);
  for (int i = 0; i < n; ++i) {
    int r = ring[(start + i) % n];
    chains[hostIndex[sys.hostOfRank(r)]].push_back(r);
  }

  std::vector<TreeLinks>& tree = channel->tree;
  for (const std::vector<int>& chain : chains) {
    for (size_t j = 1; j < chain.size(); ++j) {
      tree[chain[j]].up = chain[j - 1];
      addDown(&tree[chain[j - 1]], chain[j]);
    }
  }
  for (int h = 0; h < nh; ++h) {
    if (chains[h].empty()) continue;
    int p, c0, c1;
    doubleBinaryTree(nh, h, channel->treeIndex, &p, &c0, &c1);
    int head = chains[h][0];
    // A ring that misses a host's ranks leaves that chain empty: skip it rather than index it.
    auto headOf = [&](int x) { return x >= 0 && !chains[x].empty() ? chains[x][0] : -1; };
    if (headOf(p) >= 0) tree[head].up = headOf(p);
    if (headOf(c0) >= 0) addDown(&tree[head], headOf(c0));
    if (headOf(c1) >= 0) addDown(&tree[head], headOf(c1));
  }
}

}  // namespace baton

// Graph search: the rings and trees each channel runs on, chosen from the topology graph so that
// consecutive ranks share the fastest paths. NCCL: src/graph/search.cc, trees.cc.
// Lessons 06 (rings per channel) and 07 (trees, the double binary tree).
#pragma once

#include <string>
#include <vector>

#include "coll_args.h"  // kTreeMaxArity
#include "topo.h"

namespace baton {

// One channel's tree: each rank's parent (-1 at the root) and children (up to 3: two from the
// inter-node binary tree and one from the intra-node chain).
struct TreeLinks {
  int up = -1;
  int down[kTreeMaxArity] = {-1, -1, -1};
  int nDown() const { return (down[0] >= 0) + (down[1] >= 0) + (down[2] >= 0); }
};

struct ChannelGraph {
  std::vector<int> ring;               // ranks in ring order (ring[i] sends to ring[i+1])
  std::vector<TreeLinks> tree;         // indexed by rank
  int treeIndex = 0;                   // 0: the binary tree, 1: its mirror/shift (the second of the double binary tree)
  double bw = 0;                       // GB/s the search reserved for this channel on every link it uses
  PathType worstPath = PathType::LOC;  // the slowest path type a ring hop uses
  // Indexed by TopoNode::host: the NET node this channel's ring enters and leaves that host
  // through (-1 for a host without ranks). Empty on a single host or when hosts have no NETs.
  std::vector<int> nets;
};

struct CommGraph {
  std::vector<ChannelGraph> channels;
  std::string pattern;  // e.g. "ring+chain+dbtree", for baton-topo
};

// NCCL's binary tree over node indices 0..nNodes-1 (ncclGetBtree) and the double binary tree's
// second tree (ncclGetDtree: the mirror when nNodes is even, a shift by one when odd). Children are
// -1 when absent. With an even node count every node is interior in at most one of the two trees;
// with an odd count node 0 (tree 0's root, with a single child) is interior in both.
void binaryTree(int nNodes, int node, int* parent, int* child0, int* child1);
void doubleBinaryTree(int nNodes, int node, int tree, int* parent, int* child0, int* child1);

// Fills channel->tree (indexed by rank) from channel->ring and channel->treeIndex: within each host
// a chain in ring order from the rank where the ring enters the host; across hosts (numbered by
// their first rank) doubleBinaryTree(tree = treeIndex) over the hosts' first chain ranks. down[0]
// is the chain child; the inter-host children follow.
void buildChannelTree(const TopoSystem& sys, ChannelGraph* channel);

// Searches up to `maxChannels` channels (at least `minChannels`): rings that cross each host once,
// preferring the fastest paths with link bandwidth accounted per channel; the second half of the
// channels repeats the first half's rings and uses tree 1 (as NCCL duplicates channels). Trees:
// within a host a chain in ring order, across hosts the double binary tree over the hosts' first
// ranks. Deterministic: every rank computes the same result from the same system.
ncclResult_t searchGraph(const TopoSystem& sys, int minChannels, int maxChannels, CommGraph* out);

}  // namespace baton

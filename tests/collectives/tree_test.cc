// Tree AllReduce (algorithms/tree_allreduce.h, lesson 07) under the correctness matrix, on the
// shapes a tree takes: one node (a chain), every rank its own node (NCCL's binary tree, up to two
// children from other nodes), and nodes of 2 and 3 ranks (chains hanging off the double binary
// tree, up to three children). BATON_RANKS_PER_NODE makes the nodes; NCCL_ALGO=allreduce:Tree
// forces the tree; the protocol comes from the environment (run_all.sh runs all three) or the tuner.
#include <algorithm>
#include "collectives/harness.h"

#include "baton/tuner.h"
#include "comm.h"
#include "topo/graph.h"
#include "tuner/tuner.h"

namespace bt {
namespace {

using baton::Channel;

struct Shape {
  int ranks;
  int perNode;  // 0: one node
};

Comms treeComms(const Shape& s, const char* channels = nullptr) {
  const std::string perNode = std::to_string(s.perNode);
  ScopedEnv env({{"NCCL_ALGO", "allreduce:Tree"},
                 {"BATON_RANKS_PER_NODE", s.perNode ? perNode.c_str() : nullptr},
                 {"NCCL_MIN_NCHANNELS", channels}});
  return initAll(s.ranks);
}

class TreeAllReduce : public ::testing::TestWithParam<int> {};

// Every type (sum), every op on float and int8, counts 0 .. large, both placements and drives.
TEST_P(TreeAllReduce, EveryShapeEveryType) {
  const int n = GetParam();
  for (int perNode : {0, 1, 2, 3}) {
    if (perNode >= n) continue;  // the same as one node
    Comms comms = treeComms({n, perNode});
    ASSERT_FALSE(comms.empty());
    SCOPED_TRACE("ranks " + std::to_string(n) + ", ranks per node " + std::to_string(perNode));
    for (ncclDataType_t type : kAllTypes) {
      Matrix m;
      m.ops = type == ncclFloat32 || type == ncclInt8 ? kOps : std::vector<Op>{Op::Sum};
      m.counts = {0, 1, 7, 1023, 70001};
      runMatrix(comms, Coll::AllReduce, type, m);
    }
    runLarge(comms, Coll::AllReduce, ncclFloat32);
    destroyComms(comms);
  }
}
INSTANTIATE_TEST_SUITE_P(, TreeAllReduce, ::testing::Range(1, 9),
                         [](const ::testing::TestParamInfo<int>& i) { return std::to_string(i.param) + "ranks"; });

// The ThreadSanitizer pass (Makefile TSAN_FILTER): every tree shape on 4 ranks, small counts.
TEST(TreeQuick, ShapesUnderSanitizers) {
  for (int perNode : {0, 1, 2}) {
    Comms comms = treeComms({4, perNode}, "2");
    ASSERT_FALSE(comms.empty());
    SCOPED_TRACE("ranks per node " + std::to_string(perNode));
    Matrix m;
    m.ops = {Op::Sum, Op::Max};
    m.counts = {1, 1023, 70001};
    runMatrix(comms, Coll::AllReduce, ncclFloat32, m);
    destroyComms(comms);
  }
}

// The trees the communicator built are the graph's: a chain on one node; NCCL's double binary tree
// over nodes, tree 0 on the first half of the channels and tree 1 on the second.
TEST(TreeShape, ChainOnOneNodeDoubleBinaryTreeAcrossNodes) {
  {
    Comms comms = treeComms({4, 0});
    ASSERT_EQ(comms.size(), 4u);
    for (int r = 0; r < 4; ++r) {
      const baton::TreeConns& t = comms[r]->channels[0]->tree;
      const std::vector<int>& ring = comms[r]->channels[0]->ringUserRanks;
      const int pos = (int)(std::find(ring.begin(), ring.end(), r) - ring.begin());
      EXPECT_EQ(t.up, pos == 0 ? -1 : ring[pos - 1]) << "rank " << r;
      EXPECT_EQ(t.nDown, pos == 3 ? 0 : 1) << "rank " << r;
    }
    destroyComms(comms);
  }
  Comms comms = treeComms({8, 1}, "2");
  ASSERT_EQ(comms.size(), 8u);
  ASSERT_EQ(comms[0]->nChannels, 2);
  for (int c = 0; c < 2; ++c) {
    EXPECT_EQ(comms[0]->channels[c]->treeIndex, c);
    int interior = 0;
    for (int r = 0; r < 8; ++r) {
      int parent, c0, c1;
      baton::doubleBinaryTree(8, r, c, &parent, &c0, &c1);
      const baton::TreeConns& t = comms[r]->channels[c]->tree;
      EXPECT_EQ(t.up, parent) << "channel " << c << " rank " << r;
      EXPECT_EQ(t.nDown, (c0 >= 0) + (c1 >= 0)) << "channel " << c << " rank " << r;
      interior += t.nDown == 2;
    }
    EXPECT_GT(interior, 0) << "a binary tree over 8 nodes has ranks with two children";
  }
  // Both trees carry data: an allreduce over both channels is still exact.
  Matrix m;
  m.counts = {1023, 1 << 20};
  runMatrix(comms, Coll::AllReduce, ncclInt32, m);
  destroyComms(comms);
}

// The tuner weighs trees against rings: with many nodes a tree's 2 log2(nodes) hops beat the
// ring's 2(n-1) at small sizes; on one node the chain is as deep as the ring and the ring wins.
TEST(TreeTuner, TreesForSmallMessagesAcrossNodes) {
  ScopedEnv env({{"BATON_RANKS_PER_NODE", "1"}, {"BATON_TUNING_FILE", "none"}});
  Comms comms = initAll(8);
  ASSERT_EQ(comms.size(), 8u);
  int algo = -1, proto = -1;
  NCCL_ASSERT(batonTunerChoose(comms[0], "allreduce", 8, &algo, &proto, nullptr));
  EXPECT_EQ(algo, BATON_ALGO_TREE);
  NCCL_ASSERT(batonTunerChoose(comms[0], "allreduce", size_t(256) << 20, &algo, &proto, nullptr));
  EXPECT_EQ(algo, BATON_ALGO_RING);
  NCCL_ASSERT(batonTunerChoose(comms[0], "allgather", 8, &algo, &proto, nullptr));
  EXPECT_EQ(algo, BATON_ALGO_RING);
  EXPECT_EQ(batonTunerSteps(comms[0], "allreduce", BATON_ALGO_TREE), 6);  // 2 * log2(8)
  EXPECT_EQ(batonTunerSteps(comms[0], "allreduce", BATON_ALGO_RING), 14);
  destroyComms(comms);
  ScopedEnv one({{"BATON_RANKS_PER_NODE", nullptr}});
  comms = initAll(8);
  NCCL_ASSERT(batonTunerChoose(comms[0], "allreduce", 8, &algo, &proto, nullptr));
  EXPECT_EQ(algo, BATON_ALGO_RING);
  destroyComms(comms);
}

}  // namespace
}  // namespace bt

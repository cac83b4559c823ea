// The tuner plugin host's rules without a plugin (src/misc/plugin_lib.cc, src/tuner/tuner_plugin.cc):
// NCCL's library names, the cost table baton offers, and NCCL's pick from a rewritten table. The
// plugins themselves are loaded by tests/tools/tuner_plugin_test.sh.
#include <string>
#include <vector>

#include "misc/plugin_lib.h"
#include "tuner/tuner_plugin.h"
#include "unit/unit_helpers.h"

namespace {

using namespace baton;
using Table = float[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];

TEST(TunerPlugin, LibraryNamesFollowNccl) {
  using V = std::vector<std::string>;
  EXPECT_EQ(pluginCandidates(kPluginTuner, nullptr), V{"libnccl-tuner.so"});
  EXPECT_EQ(pluginCandidates(kPluginTuner, ""), V{"libnccl-tuner.so"});
  EXPECT_EQ(pluginCandidates(kPluginTuner, "foo"), (V{"foo", "libnccl-tuner-foo.so"}));
  EXPECT_EQ(pluginCandidates(kPluginNet, "foo"), (V{"foo", "libnccl-net-foo.so"}));
  EXPECT_EQ(pluginCandidates(kPluginProfiler, "/opt/p/libx.so"), V{"/opt/p/libx.so"});  // a path: as it is
  EXPECT_EQ(pluginCandidates(kPluginTuner, "libmine.so"), V{"libmine.so"});             // a library name too
  EXPECT_EQ(pluginCandidates(kPluginTuner, "libmine"), (V{"libmine", "libnccl-tuner-libmine.so"}));
  EXPECT_EQ(pluginCandidates(kPluginEnv, "x.so"), (V{"x.so", "libnccl-env-x.so.so"}));  // NCCL's rule, literally
}

TEST(TunerPlugin, CostTableHoldsBatonsPredictionsAndIgnoresTheRest) {
  const TuningModel m = defaultTuningModel();
  AlgoProtoMask all;
  ASSERT_EQ(parseAlgoProtoEnv(nullptr, nullptr, &all), ncclSuccess);
  Table t;
  fillCostTable(m, kPathShm, all, kFuncAllReduce, 4, 1, 1 << 20, true, t);
  for (int a = 0; a < NCCL_NUM_ALGORITHMS; ++a)
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; ++p) {
      if (a > NCCL_ALGO_RING) {
        EXPECT_EQ(t[a][p], (float)NCCL_ALGO_PROTO_IGNORE) << a << "/" << p;
      } else {
        EXPECT_FLOAT_EQ(t[a][p], (float)predictUs(m, kPathShm, kFuncAllReduce, CollAlgo(a), Proto(p), 4, 1, 1 << 20));
      }
    }
  // Tree only for AllReduce; NCCL_PROTO=^LL leaves LL out.
  AlgoProtoMask noLL;
  ASSERT_EQ(parseAlgoProtoEnv(nullptr, "^LL", &noLL), ncclSuccess);
  fillCostTable(m, kPathShm, noLL, kFuncAllGather, 4, 1, 1 << 20, true, t);
  for (int p = 0; p < NCCL_NUM_PROTOCOLS; ++p) EXPECT_EQ(t[NCCL_ALGO_TREE][p], (float)NCCL_ALGO_PROTO_IGNORE);
  EXPECT_EQ(t[NCCL_ALGO_RING][NCCL_PROTO_LL], (float)NCCL_ALGO_PROTO_IGNORE);
  EXPECT_GT(t[NCCL_ALGO_RING][NCCL_PROTO_SIMPLE], 0.0f);
  // An untouched table picks what baton's own tuner picks.
  fillCostTable(m, kPathShm, all, kFuncAllReduce, 4, 1, 1 << 20, true, t);
  AlgoProtoChoice own, pick;
  ASSERT_EQ(chooseAlgoProto(m, kPathShm, all, kFuncAllReduce, 4, 1, 1 << 20, &own), ncclSuccess);
  int passed = 0;
  ASSERT_TRUE(pickFromCostTable(t, kFuncAllReduce, true, &pick, &passed));
  EXPECT_EQ(pick.algo, own.algo);
  EXPECT_EQ(pick.proto, own.proto);
  EXPECT_EQ(passed, -1);
}

TEST(TunerPlugin, PickIsNcclsCheapestEntryOverWhatBatonRuns) {
  Table t;
  for (auto& row : t)
    for (float& c : row) c = (float)NCCL_ALGO_PROTO_IGNORE;
  AlgoProtoChoice c;
  int passed = 0;
  EXPECT_FALSE(pickFromCostTable(t, kFuncAllReduce, true, &c, &passed));  // nothing left
  t[NCCL_ALGO_RING][NCCL_PROTO_SIMPLE] = 10;
  t[NCCL_ALGO_TREE][NCCL_PROTO_LL] = 10;  // a tie: the lower algorithm number, as NCCL's loop
  ASSERT_TRUE(pickFromCostTable(t, kFuncAllReduce, true, &c, &passed));
  EXPECT_EQ(c.algo, kAlgoTree);
  EXPECT_EQ(c.proto, kProtoLL);
  // Tree is not run for AllGather, nor where the communicator has no trees.
  ASSERT_TRUE(pickFromCostTable(t, kFuncAllGather, true, &c, &passed));
  EXPECT_EQ(c.algo, kAlgoRing);
  EXPECT_EQ(passed, -1);  // the Tree entry only tied: it would not have won, so it is not named
  ASSERT_TRUE(pickFromCostTable(t, kFuncAllReduce, false, &c, &passed));
  EXPECT_EQ(c.algo, kAlgoRing);
  // A forced pair (cost 0) wins; a forced NVLS is passed over and named.
  t[NCCL_ALGO_RING][NCCL_PROTO_LL128] = 0;
  ASSERT_TRUE(pickFromCostTable(t, kFuncAllReduce, true, &c, &passed));
  EXPECT_EQ(c.algo, kAlgoRing);
  EXPECT_EQ(c.proto, kProtoLL128);
  EXPECT_FLOAT_EQ(c.us, 0);
  t[NCCL_ALGO_RING][NCCL_PROTO_LL128] = 5;
  t[NCCL_ALGO_NVLS][NCCL_PROTO_SIMPLE] = 0;
  ASSERT_TRUE(pickFromCostTable(t, kFuncAllReduce, true, &c, &passed));
  EXPECT_EQ(c.proto, kProtoLL128);
  EXPECT_EQ(passed, NCCL_ALGO_NVLS);
  // Negative values other than -1 and NaN are no costs.
  t[NCCL_ALGO_RING][NCCL_PROTO_LL128] = -0.5f;
  t[NCCL_ALGO_RING][NCCL_PROTO_SIMPLE] = __builtin_nanf("");
  ASSERT_TRUE(pickFromCostTable(t, kFuncAllReduce, true, &c, &passed));
  EXPECT_EQ(c.algo, kAlgoTree);
  EXPECT_EQ(c.proto, kProtoLL);
}

TEST(TunerPlugin, NcclFunctionNumbers) {
  EXPECT_EQ(ncclFuncOf(kFuncAllReduce), ncclFuncAllReduce);
  EXPECT_EQ(ncclFuncOf(kFuncBroadcast), ncclFuncBroadcast);
  EXPECT_EQ(ncclFuncOf(kFuncReduce), ncclFuncReduce);
  EXPECT_EQ(ncclFuncOf(kFuncAllGather), ncclFuncAllGather);
  EXPECT_EQ(ncclFuncOf(kFuncReduceScatter), ncclFuncReduceScatter);
  EXPECT_EQ((int)ncclFuncAllReduce, 4);  // NCCL 2.28's nccl_common.h
}

// The layouts a plugin built against NCCL's headers expects (x86-64: 8-byte pointers and doubles).
static_assert(sizeof(ncclTunerConstants_v5_t) == (7 * 3 + 3 * 7 * 3 + 5 * 4 * 3) * sizeof(double));
static_assert(sizeof(ncclNvlDomainInfo_v5_t) == 3 * sizeof(int));
static_assert(sizeof(ncclTuner_v5_t) == 4 * sizeof(void*) && sizeof(ncclTuner_v2_t) == 4 * sizeof(void*));

}  // namespace

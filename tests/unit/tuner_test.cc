// The tuner (src/tuner*.cc): NCCL_ALGO / NCCL_PROTO with NCCL's syntax, bad values named at init,
// the cost model's choice, and the tuning file: round trip, malformed files rejected with the line
// and field, a broken default file falling back to the built-in model.
#include <cstdio>
#include <fstream>
#include <string>

#include "alltoall/alltoall_choice.h"
#include "baton/tuner.h"
#include "tuner/tuner.h"
#include "unit/unit_helpers.h"

namespace {

using namespace baton;
using bt::ScopedEnv;

AlgoProtoMask parse(const char* algo, const char* proto) {
  AlgoProtoMask m;
  EXPECT_EQ(parseAlgoProtoEnv(algo, proto, &m), ncclSuccess) << bt::lastError();
  return m;
}

TEST(Tuner, ProtoListsNegationAndPerFunctionSections) {
  AlgoProtoMask m = parse(nullptr, "LL,simple");
  for (int f = 0; f < kFuncCount; ++f) {
    EXPECT_TRUE(m.proto[f][kProtoLL]);
    EXPECT_FALSE(m.proto[f][kProtoLL128]);
    EXPECT_TRUE(m.proto[f][kProtoSimple]);
    EXPECT_TRUE(m.algo[f][kAlgoRing]);
  }
  m = parse("Ring", "^LL128;allreduce:LL128");
  EXPECT_TRUE(m.proto[kFuncAllReduce][kProtoLL128]);
  EXPECT_FALSE(m.proto[kFuncAllReduce][kProtoLL]);
  EXPECT_FALSE(m.proto[kFuncAllReduce][kProtoSimple]);
  EXPECT_FALSE(m.proto[kFuncBroadcast][kProtoLL128]);
  EXPECT_TRUE(m.proto[kFuncBroadcast][kProtoLL]);
  EXPECT_TRUE(m.proto[kFuncBroadcast][kProtoSimple]);
  m = parse("Tree", nullptr);
  EXPECT_FALSE(m.algo[kFuncAllReduce][kAlgoRing]);
  EXPECT_TRUE(m.algo[kFuncAllReduce][kAlgoTree]);
  m = parse("NVLS", nullptr);  // a known NCCL algorithm baton does not have: nothing enabled
  EXPECT_FALSE(m.algo[kFuncAllReduce][kAlgoRing]);
  EXPECT_FALSE(m.algo[kFuncAllReduce][kAlgoTree]);
}

TEST(Tuner, BadNamesAreErrorsThatNameThem) {
  AlgoProtoMask m;
  EXPECT_EQ(parseAlgoProtoEnv(nullptr, "LL,Fast", &m), ncclInvalidArgument);
  EXPECT_TRUE(bt::messageHas(bt::lastError(), {"NCCL_PROTO", "'Fast'"}));
  EXPECT_EQ(parseAlgoProtoEnv("Rnig", nullptr, &m), ncclInvalidArgument);
  EXPECT_TRUE(bt::messageHas(bt::lastError(), {"NCCL_ALGO", "'Rnig'"}));
  EXPECT_EQ(parseAlgoProtoEnv(nullptr, "alltoall:LL", &m), ncclInvalidArgument);
  EXPECT_TRUE(bt::messageHas(bt::lastError(), {"NCCL_PROTO", "'alltoall'"}));
}

TEST(Tuner, CommInitRejectsABadProtoAndCollectivesRejectAnEmptyChoice) {
  {
    ScopedEnv env("NCCL_PROTO", "LL,Bogus");
    ncclComm_t c = nullptr;
    EXPECT_EQ(ncclCommInitAll(&c, 1, nullptr), ncclInvalidArgument);
    EXPECT_TRUE(bt::messageHas(bt::lastError(), {"NCCL_PROTO", "'Bogus'"}));
  }
  ScopedEnv env("NCCL_ALGO", "Tree");  // trees are for AllReduce only, as in NCCL
  ncclComm_t c = nullptr;
  ASSERT_EQ(ncclCommInitAll(&c, 1, nullptr), ncclSuccess) << bt::lastError();
  float x = 1, y = 0;
  EXPECT_EQ(ncclAllReduce(&x, &y, 1, ncclFloat, ncclSum, c, nullptr), ncclSuccess) << bt::lastError();
  EXPECT_EQ(y, 1.0f);
  EXPECT_EQ(ncclBroadcast(&x, &y, 1, ncclFloat, 0, c, nullptr), ncclInvalidUsage);
  EXPECT_TRUE(bt::messageHas(bt::lastError(), {"NCCL_ALGO", "no algorithm/protocol"}));
  EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
}

TEST(Tuner, ChoiceFollowsTheModelAndTheMask) {
  TuningModel m = defaultTuningModel();
  m.cost[kPathShm][kAlgoRing][kProtoLL] = {0, 1.0f, 1.0f};
  m.cost[kPathShm][kAlgoRing][kProtoLL128] = {0, 2.0f, 10.0f};
  m.cost[kPathShm][kAlgoRing][kProtoSimple] = {0, 4.0f, 20.0f};
  for (int p = 0; p < kNumProtos; ++p) m.cost[kPathShm][kAlgoTree][p] = m.cost[kPathShm][kAlgoRing][p];
  AlgoProtoMask all = parse(nullptr, nullptr);
  AlgoProtoChoice c;
  ASSERT_EQ(chooseAlgoProto(m, kPathShm, all, kFuncAllReduce, 2, 1, 8, &c), ncclSuccess);
  EXPECT_EQ(c.proto, kProtoLL);
  // 2 ranks, allreduce: 2 steps; algbw = busbw. LL128 at 1 MiB: 4 + 1048576/1e4 = 108.9 us,
  // Simple: 8 + 52.4 = 60.4 us.
  ASSERT_EQ(chooseAlgoProto(m, kPathShm, all, kFuncAllReduce, 2, 1, 1 << 20, &c), ncclSuccess);
  EXPECT_EQ(c.proto, kProtoSimple);
  EXPECT_NEAR(c.us, 8 + 1048576.0 / 20e3, 1e-6);
  ASSERT_EQ(chooseAlgoProto(m, kPathShm, parse(nullptr, "^Simple"), kFuncAllReduce, 2, 1, 1 << 20, &c), ncclSuccess);
  EXPECT_EQ(c.proto, kProtoLL128);
  // The correction factor of a bucket scales the prediction.
  m.cost[kPathShm][kAlgoRing][kProtoSimple].corr[corrBucket(1 << 20)] = 3.0f;
  ASSERT_EQ(chooseAlgoProto(m, kPathShm, all, kFuncAllReduce, 2, 1, 1 << 20, &c), ncclSuccess);
  EXPECT_EQ(c.proto, kProtoLL128);
  // Trees: 2 * depth steps (depth = ranks per node - 1 + log2(nodes)) and half the bus bandwidth.
  // 8 ranks on 4 nodes: depth 1 + 2 = 3, 6 steps against the ring's 14.
  m.cost[kPathShm][kAlgoRing][kProtoSimple].corr[corrBucket(1 << 20)] = 1.0f;
  m.cost[kPathShm][kAlgoTree][kProtoSimple].corr[corrBucket(1 << 20)] = 1.0f;
  EXPECT_EQ(treeDepth(8, 4), 3);
  EXPECT_EQ(treeDepth(8, 1), 7);
  EXPECT_EQ(treeDepth(5, 5), 3);
  ASSERT_EQ(chooseAlgoProto(m, kPathShm, all, kFuncAllReduce, 8, 4, 8, &c), ncclSuccess);
  EXPECT_EQ(c.algo, kAlgoTree);
  EXPECT_NEAR(c.us, 6 * 1.0 + 8 / (1e3 * 0.5), 1e-6);  // LL: hop 1 us, busBw 1 GB/s
  ASSERT_EQ(chooseAlgoProto(m, kPathShm, all, kFuncAllReduce, 8, 1, 8, &c), ncclSuccess);
  EXPECT_EQ(c.algo, kAlgoRing);  // one node: the chain is as deep as the ring, with half its bandwidth
  ASSERT_EQ(chooseAlgoProto(m, kPathShm, all, kFuncBroadcast, 8, 4, 8, &c), ncclSuccess);
  EXPECT_EQ(c.algo, kAlgoRing);
  EXPECT_EQ(corrBucket(64), 0);
  EXPECT_EQ(corrBucket(1 << 20), 14);
  EXPECT_EQ(corrBucket(size_t(1) << 40), kCorrBuckets - 1);
}

// The CUDA backend's choice (lesson 05's model with a 'gpu' table): built in, the H200's
// measurements, where Simple beat LL and LL128 at every size, so every size takes Ring/Simple; a
// measured table that makes LL cheaper per step moves small sizes to LL; Tree only where the
// communicator connected trees; NCCL_PROTO still rules.
TEST(Tuner, TheGpuTableChoosesPerSizeAmongWhatTheCommunicatorHas) {
  TuningModel m = defaultTuningModel();
  const AlgoProtoMask all = parse(nullptr, nullptr);
  AlgoProtoChoice c;
  for (int n : {2, 4, 8})
    for (size_t bytes = 8; bytes <= (size_t(256) << 20); bytes *= 8) {
      ASSERT_EQ(chooseGpuAlgoProto(m, all, false, kFuncAllReduce, n, 1, bytes, &c), ncclSuccess);
      EXPECT_EQ(c.algo, kAlgoRing) << n << " ranks, " << bytes << " B";
      EXPECT_EQ(c.proto, kProtoSimple) << n << " ranks, " << bytes << " B";
    }
  // Without Simple, LL: as fast at 8 B there, with more bandwidth than LL128.
  ASSERT_EQ(chooseGpuAlgoProto(m, parse(nullptr, "^Simple"), false, kFuncAllReduce, 2, 1, 8, &c), ncclSuccess);
  EXPECT_EQ(c.proto, kProtoLL);
  // A GPU where LL costs a quarter per step (NCCL's NVLink hop latencies: LL .6 us, Simple 3.4 us)
  // at a sixth of the bandwidth: LL up to where the bandwidth term catches up, Simple beyond.
  ASSERT_EQ(parseTuningText("gpu Ring LL 0 0.5 64\ngpu Ring Simple 0 3.4 384\ngpu Tree LL 0 0.5 64\n", "test", &m),
            ncclSuccess)
      << bt::lastError();
  ASSERT_EQ(chooseGpuAlgoProto(m, all, false, kFuncAllReduce, 8, 1, 8, &c), ncclSuccess);
  EXPECT_EQ(c.proto, kProtoLL);
  EXPECT_NEAR(c.us, 14 * 0.5 + 8 / (1e3 * 64 * 8 / 14.0), 1e-6);
  ASSERT_EQ(chooseGpuAlgoProto(m, all, false, kFuncAllReduce, 8, 1, size_t(64) << 20, &c), ncclSuccess);
  EXPECT_EQ(c.proto, kProtoSimple);
  ASSERT_EQ(chooseGpuAlgoProto(m, parse(nullptr, "LL128"), false, kFuncAllReduce, 8, 1, 8, &c), ncclSuccess);
  EXPECT_EQ(c.proto, kProtoLL128);
  // 32 ranks on 4 hosts: the tree's 2 * (7 + 2) steps against the ring's 62 win at small sizes,
  // but only for a communicator that has trees.
  ASSERT_EQ(chooseGpuAlgoProto(m, all, true, kFuncAllReduce, 32, 4, 8, &c), ncclSuccess);
  EXPECT_EQ(c.algo, kAlgoTree);
  ASSERT_EQ(chooseGpuAlgoProto(m, all, false, kFuncAllReduce, 32, 4, 8, &c), ncclSuccess);
  EXPECT_EQ(c.algo, kAlgoRing);
  ASSERT_EQ(chooseGpuAlgoProto(m, all, true, kFuncAllGather, 32, 4, 8, &c), ncclSuccess);
  EXPECT_EQ(c.algo, kAlgoRing);  // trees are AllReduce's only
  // NCCL_ALGO=Tree on a communicator without trees leaves AllReduce nothing, which names the
  // variables; with trees it is the tree.
  EXPECT_EQ(chooseGpuAlgoProto(m, parse("Tree", nullptr), false, kFuncAllReduce, 4, 1, 8, &c), ncclInvalidUsage);
  EXPECT_TRUE(bt::messageHas(bt::lastError(), {"NCCL_ALGO"}));
  ASSERT_EQ(chooseGpuAlgoProto(m, parse("Tree", nullptr), true, kFuncAllReduce, 4, 1, 8, &c), ncclSuccess);
  EXPECT_EQ(c.algo, kAlgoTree);
}

TEST(Tuner, FitLineRecoversLatencyAndBandwidth) {
  // time = 10 us + bytes / (50 GB/s), exactly.
  const size_t bytes[] = {8, 1024, 1 << 20, 16 << 20, 256 << 20};
  double us[5];
  for (int i = 0; i < 5; ++i) us[i] = 10 + bytes[i] / 50e3;
  double lat = 0, bw = 0;
  ASSERT_EQ(batonTunerFitLine(bytes, us, 5, &lat, &bw), ncclSuccess);
  EXPECT_NEAR(lat, 10, 1e-6);
  EXPECT_NEAR(bw, 50, 1e-6);
  // Points without a time are skipped; fewer than two usable is an error that says so.
  us[1] = us[2] = us[3] = 0;
  ASSERT_EQ(batonTunerFitLine(bytes, us, 5, &lat, &bw), ncclSuccess);
  EXPECT_NEAR(bw, 50, 1e-6);
  us[4] = -1;
  EXPECT_EQ(batonTunerFitLine(bytes, us, 5, &lat, &bw), ncclInvalidArgument);
  EXPECT_TRUE(bt::messageHas(bt::lastError(), {"1 usable points of 5"}));
  EXPECT_EQ(batonTunerFitLine(nullptr, us, 5, &lat, &bw), ncclInvalidArgument);
  EXPECT_EQ(batonTunerFitLine(nullptr, nullptr, 0, &lat, &bw), ncclInvalidArgument);
  EXPECT_TRUE(bt::messageHas(bt::lastError(), {"n = 0"}));
  // Points whose line would start below zero: the latency is held at 0, the bandwidth still fits.
  const size_t b2[] = {1000, 2000};
  const double t2[] = {10, 30};  // the line through them starts at -10 us
  ASSERT_EQ(batonTunerFitLine(b2, t2, 2, &lat, &bw), ncclSuccess);
  EXPECT_EQ(lat, 0);
  EXPECT_GT(bw, 0);
}

std::string tempPath(const char* name) {
  return std::string("/tmp/baton-tuner-test-") + std::to_string(getpid()) + name;
}

TEST(Tuner, TuningFileRoundTrip) {
  const std::string path = tempPath(".txt");
  const double base[3] = {0.5, 0.25, 1}, hop[3] = {0.1, 0.2, 0.3}, bw[3] = {2, 12, 14};
  double corr[3][BATON_TUNER_BUCKETS];
  for (auto& row : corr)
    for (double& c : row) c = 1.5;
  ASSERT_EQ(batonTunerWriteFile(path.c_str(), "shm", base, hop, bw, corr, "a test\ntwo lines"), ncclSuccess);
  TuningModel m = defaultTuningModel();
  ASSERT_EQ(loadTuningFile(path, &m), ncclSuccess) << bt::lastError();
  EXPECT_FLOAT_EQ(m.cost[kPathShm][kAlgoRing][kProtoLL128].hopUs, 0.2f);
  EXPECT_FLOAT_EQ(m.cost[kPathShm][kAlgoRing][kProtoSimple].busBwGBs, 14.0f);
  EXPECT_FLOAT_EQ(m.cost[kPathShm][kAlgoRing][kProtoLL].baseUs, 0.5f);
  EXPECT_FLOAT_EQ(m.cost[kPathShm][kAlgoRing][kProtoLL].corr[7], 1.5f);
  EXPECT_EQ(std::string(m.source), path);
  // Writing the other table keeps this one.
  const double bw2[3] = {3, 30, 40};
  ASSERT_EQ(batonTunerWriteFile(path.c_str(), "direct", base, hop, bw2, nullptr, nullptr), ncclSuccess);
  m = defaultTuningModel();
  ASSERT_EQ(loadTuningFile(path, &m), ncclSuccess) << bt::lastError();
  EXPECT_FLOAT_EQ(m.cost[kPathShm][kAlgoRing][kProtoSimple].busBwGBs, 14.0f);
  EXPECT_FLOAT_EQ(m.cost[kPathDirect][kAlgoRing][kProtoSimple].busBwGBs, 40.0f);
  EXPECT_FLOAT_EQ(m.cost[kPathDirect][kAlgoRing][kProtoLL].corr[7], 1.0f);
  ASSERT_EQ(batonTunerWriteFileAlgo(path.c_str(), "gpu", BATON_ALGO_TREE, base, hop, bw2, nullptr, nullptr),
            ncclSuccess);
  m = defaultTuningModel();
  ASSERT_EQ(loadTuningFile(path, &m), ncclSuccess) << bt::lastError();
  EXPECT_FLOAT_EQ(m.cost[kPathGpu][kAlgoTree][kProtoLL128].busBwGBs, 30.0f);
  EXPECT_FLOAT_EQ(m.cost[kPathDirect][kAlgoRing][kProtoSimple].busBwGBs, 40.0f);
  EXPECT_EQ(batonTunerWriteFile(path.c_str(), "nvlink", base, hop, bw2, nullptr, nullptr), ncclInvalidArgument);
  EXPECT_TRUE(bt::messageHas(bt::lastError(), {"pathKind 'nvlink'"}));
  ScopedEnv env("BATON_TUNING_FILE", path.c_str());
  ncclComm_t c = nullptr;
  ASSERT_EQ(ncclCommInitAll(&c, 1, nullptr), ncclSuccess);
  EXPECT_EQ(std::string(batonTunerModelSource(c)), path);
  EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
  remove(path.c_str());
}

// AlltoAll's calibrated Bruck thresholds (lesson 12): written beside the AllReduce tables without
// disturbing them, one per rank count, the nearest count serving others; BATON_ALLTOALL_BRUCK_BYTES
// overrides the file, and without either the built-in threshold for the rank count holds.
TEST(Tuner, AlltoAllCalibrationInTheTuningFile) {
  const std::string path = tempPath("-a2a.txt");
  const double base[3] = {0.5, 0.25, 1}, hop[3] = {0.1, 0.2, 0.3}, bw[3] = {2, 12, 14};
  ASSERT_EQ(batonTunerWriteFile(path.c_str(), "shm", base, hop, bw, nullptr, nullptr), ncclSuccess);
  ASSERT_EQ(batonTunerWriteFileAlltoAll(path.c_str(), 8, 262144, "eight"), ncclSuccess);
  ASSERT_EQ(batonTunerWriteFileAlltoAll(path.c_str(), 4, 4096, nullptr), ncclSuccess);
  ASSERT_EQ(batonTunerWriteFileAlltoAll(path.c_str(), 8, 131072, nullptr), ncclSuccess);  // replaces 8's
  EXPECT_EQ(batonTunerWriteFileAlltoAll(path.c_str(), 1, 64, nullptr), ncclInvalidArgument);
  EXPECT_TRUE(bt::messageHas(bt::lastError(), {"nRanks 1"}));
  TuningModel m = defaultTuningModel();
  ASSERT_EQ(loadTuningFile(path, &m), ncclSuccess) << bt::lastError();
  EXPECT_FLOAT_EQ(m.cost[kPathShm][kAlgoRing][kProtoSimple].busBwGBs, 14.0f);
  ASSERT_EQ(m.nAlltoAll, 2);
  EXPECT_EQ(alltoallCalibrationFor(m, 8)->bruckBytes, 131072u);
  EXPECT_EQ(alltoallCalibrationFor(m, 4)->bruckBytes, 4096u);
  EXPECT_EQ(alltoallCalibrationFor(m, 6)->nRanks, 4);   // a tie goes to the smaller count
  EXPECT_EQ(alltoallCalibrationFor(m, 16)->nRanks, 8);  // the nearest
  EXPECT_EQ(alltoallCalibrationFor(defaultTuningModel(), 8), nullptr);
  // Four thread ranks as two nodes: the file's 4-rank entry decides, unless the variable is set.
  auto bruckOf = [](const char* bruckEnv, std::string* source) {
    ScopedEnv perNode("BATON_RANKS_PER_NODE", "2");
    ScopedEnv bruck("BATON_ALLTOALL_BRUCK_BYTES", bruckEnv);
    ncclComm_t c[4] = {};
    EXPECT_EQ(ncclCommInitAll(c, 4, nullptr), ncclSuccess);
    const size_t bytes = batonTunerAlltoAllBruckBytes(c[0]);
    *source = batonTunerAlltoAllBruckSource(c[0]);
    const char *algo = nullptr, *why = nullptr;
    EXPECT_EQ(batonTunerChooseAlltoAll(c[0], bytes / 4, &algo, &why), ncclSuccess);
    EXPECT_STREQ(algo, "bruck") << why;
    EXPECT_EQ(batonTunerChooseAlltoAll(c[0], bytes / 4 + 1, &algo, &why), ncclSuccess);
    EXPECT_STREQ(algo, "direct") << why;
    EXPECT_EQ(batonTunerNodes(c[0]), 2);
    for (ncclComm_t x : c) EXPECT_EQ(ncclCommDestroy(x), ncclSuccess);
    return bytes;
  };
  std::string source;
  {
    ScopedEnv env("BATON_TUNING_FILE", path.c_str());
    EXPECT_EQ(bruckOf(nullptr, &source), 4096u);
    EXPECT_EQ(source, path);
    EXPECT_EQ(bruckOf("1024", &source), 1024u);
    EXPECT_EQ(source, "BATON_ALLTOALL_BRUCK_BYTES");
  }
  ScopedEnv none("BATON_TUNING_FILE", "none");
  EXPECT_EQ(bruckOf(nullptr, &source), 65536u);
  EXPECT_EQ(source, "built-in");
  remove(path.c_str());
}

// Without a calibration the threshold grows with the NET messages Bruck saves per rank
// (n-1-ceil(log2 n)) over the passes it adds (ceil(log2 n)), 64 KiB at 4 ranks, a power of two.
TEST(Tuner, AlltoAllBuiltInBruckThresholdGrowsWithTheMessagesSaved) {
  EXPECT_EQ(builtInBruckBytes(2), 0u);
  EXPECT_EQ(builtInBruckBytes(3), 0u);  // 2 messages either way
  EXPECT_EQ(builtInBruckBytes(4), size_t(64) << 10);
  EXPECT_EQ(builtInBruckBytes(5), size_t(64) << 10);
  EXPECT_EQ(builtInBruckBytes(6), size_t(128) << 10);
  EXPECT_EQ(builtInBruckBytes(8), size_t(256) << 10);
  EXPECT_EQ(builtInBruckBytes(9), size_t(128) << 10);  // a fourth round: less saved than at 8
  EXPECT_EQ(builtInBruckBytes(16), size_t(512) << 10);
}

TEST(Tuner, MalformedTuningFilesNameTheLine) {
  const std::string path = tempPath("-bad.txt");
  struct Case {
    const char* text;
    std::initializer_list<std::string> needles;
  };
  const Case cases[] = {
      {"# c\nshm Ring LL 0 1\n", {"line 2", "expected"}},
      {"shm Ring LL9 0 1 2\n", {"line 1", "unknown protocol 'LL9'"}},
      {"shm NVLS LL 0 1 2\n", {"line 1", "unknown algorithm 'NVLS'"}},
      {"nvlink Ring LL 0 1 2\n", {"line 1", "unknown path 'nvlink'"}},
      {"shm Ring LL -1 1 2\n", {"line 1", "out of range"}},
      {"direct Ring LL corr 1 2 3\n", {"line 1", "corr", "factor 3"}},
      {"alltoall 8 bruck_bytes\n", {"line 1", "alltoall nranks bruck_bytes bytes"}},
      {"alltoall 1 bruck_bytes 64\n", {"line 1", "nranks >= 2"}},
      {"alltoall 8 bruck 64\n", {"line 1", "alltoall nranks bruck_bytes bytes"}},
      {"alltoall 8 bruck_bytes -1\n", {"line 1", "bytes >= 0"}},
      {"# only comments\n", {"no entries"}},
  };
  for (const Case& k : cases) {
    std::ofstream(path) << k.text;
    TuningModel m = defaultTuningModel();
    EXPECT_EQ(loadTuningFile(path, &m), ncclInvalidArgument) << k.text;
    EXPECT_TRUE(bt::messageHas(bt::lastError(), k.needles)) << k.text;
    EXPECT_EQ(std::string(m.source), "built-in");  // untouched
  }
  // A communicator with a broken file warns and uses the built-in model.
  std::ofstream(path) << "shm Ring LL nonsense\n";
  ScopedEnv env("BATON_TUNING_FILE", path.c_str());
  ncclComm_t c = nullptr;
  ASSERT_EQ(ncclCommInitAll(&c, 1, nullptr), ncclSuccess);
  EXPECT_EQ(std::string(batonTunerModelSource(c)), "built-in");
  EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
  remove(path.c_str());
}

}  // namespace

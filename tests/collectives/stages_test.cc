// The correctness suite on the non-default stages and knobs. Each suite sets its environment,
// creates its own communicators (the variables are read at init) and unsets the variables again;
// only NCCL_P2P_DISABLE stays set for StageShm's lifetime, because baton reads it each time it
// makes a connection and send/recv connections are made on first use.
//
//   StageNaive  BATON_ALLREDUCE_ALGO=naive (lesson 01's stage 0): AllReduce, every type x op.
//   StageFifo   BATON_FIFO_DEPTH=1 (stop-and-wait), NCCL_BUFFSIZE=64K (8 KiB steps: a 4 MiB buffer
//               wraps the 8-slot FIFO hundreds of times), NCCL_P2P_CHUNKSIZE=16K,
//               NCCL_MIN/MAX_NCHANNELS=4 and BATON_MIN_CHANNEL_BYTES=4096 (small counts use
//               several channels too, some of them empty): every collective.
//   StageShm    NCCL_P2P_DISABLE=1 (the shm transport between threads), NCCL_BUFFSIZE=64K,
//               4 channels: every collective; asserts the INIT/P2P log names SHM, never P2P.
//   StageNaiveShm  naive AllReduce over shm with BATON_FIFO_DEPTH=1 and NCCL_BUFFSIZE=64K.
// At 2,3,5,8 ranks: counts 7 and 40001 (both placements, drives taking turns; see runStage) and
// the large count (runLarge: float and int8, sum); types: StageNaive every type x every op,
// the others int8 and f8e5m2 (sum) and float (every op); p2p patterns with uint8 and double.
#include <functional>
#include <map>
#include <memory>

#include "collectives/harness.h"

namespace bt {
namespace {

const std::vector<int> kStageRanks = {2, 3, 5, 8};
const ScopedEnv::Vars kFourChannels = {{"NCCL_MIN_NCHANNELS", "4"}, {"NCCL_MAX_NCHANNELS", "4"}};

template <typename Cfg>
class Stage : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    persistent() = std::make_unique<ScopedEnv>(Cfg::persistentEnv());
    ScopedEnv env(Cfg::env());
    // Transport choices are logged under INIT (rings) and P2P (send/recv connections).
    initLog() = captureLog("INIT,P2P", [] {
      for (int n : kStageRanks) {
        comms()[n] = n % 2 ? initAll(n) : initGroup(n);
        // Make every send/recv connection now, inside the captured log: AlltoAll connects all pairs.
        if (n > 1 && !comms()[n].empty()) {
          EXPECT_EQ(runCase(comms()[n], {Coll::AlltoAll, ncclInt8, Op::Sum, 1}, Drive::Group), "");
        }
      }
    });
  }
  static void TearDownTestSuite() {
    for (auto& [n, c] : comms()) destroyComms(c);
    comms().clear();
    persistent().reset();
  }
  static const Comms& at(int n) { return comms()[n]; }
  static const std::string& log() { return initLog(); }

 private:
  static std::map<int, Comms>& comms() {
    static std::map<int, Comms> m;
    return m;
  }
  static std::unique_ptr<ScopedEnv>& persistent() {
    static std::unique_ptr<ScopedEnv> p;
    return p;
  }
  static std::string& initLog() {
    static std::string s;
    return s;
  }
};

// Runs `colls` x `types` at 2,3,5,8 ranks: counts 7 (below one 512-byte grain: one channel, the
// others empty) and 40001 (several FIFO steps on each of several channels), every op for float or
// when everyOp, else sum; then the large count for float and int8 (sum): what a stage changes is
// how bytes move, so the large count is about FIFO wrap-around and channel splits.
template <typename S>
void runStage(const std::vector<Coll>& colls, const std::vector<ncclDataType_t>& types, bool everyOp = false) {
  for (int n : kStageRanks)
    for (Coll c : colls) {
      for (ncclDataType_t t : types) {
        Matrix m;
        m.counts = {7, 40001};
        if (t != ncclFloat32 && !everyOp) m.ops = {Op::Sum};
        runMatrix(S::at(n), c, t, m);
      }
      for (ncclDataType_t t : {ncclFloat32, ncclInt8}) runLarge(S::at(n), c, t, /*allOpsTypes=*/{});
      if (::testing::Test::HasFailure()) return;
    }
}

const std::vector<Coll> kCollectives = {Coll::AllReduce, Coll::Reduce, Coll::ReduceScatter, Coll::AllGather,
                                        Coll::Broadcast};
const std::vector<Coll> kSendRecvColls = {Coll::AlltoAll, Coll::Gather, Coll::Scatter, Coll::SendRecv};
const std::vector<ncclDataType_t> kSomeTypes = {ncclInt8, ncclFloat32, ncclFloat8e5m2};

struct NaiveCfg {
  static ScopedEnv::Vars env() { return {{"BATON_ALLREDUCE_ALGO", "naive"}}; }
  static ScopedEnv::Vars persistentEnv() { return {}; }
};
using StageNaive = Stage<NaiveCfg>;
TEST_F(StageNaive, AllReduceEveryType) {
  runStage<StageNaive>({Coll::AllReduce}, {std::begin(kAllTypes), std::end(kAllTypes)}, /*everyOp=*/true);
}
TEST_F(StageNaive, UsesNaiveAlgorithm) {
  // The COLL log line names the algorithm.
  std::string log = captureLog("COLL", [] {
    EXPECT_EQ(runCase(at(2), {Coll::AllReduce, ncclFloat32, Op::Sum, 1000}, Drive::Group), "");
  });
  EXPECT_NE(log.find("algorithm Naive"), std::string::npos) << log;
}

struct FifoCfg {
  static ScopedEnv::Vars env() {
    ScopedEnv::Vars v = {{"BATON_FIFO_DEPTH", "1"},
                         {"NCCL_BUFFSIZE", "65536"},
                         {"NCCL_P2P_CHUNKSIZE", "16384"},
                         {"BATON_MIN_CHANNEL_BYTES", "4096"}};
    v.insert(v.end(), kFourChannels.begin(), kFourChannels.end());
    return v;
  }
  static ScopedEnv::Vars persistentEnv() { return {}; }
};
using StageFifo = Stage<FifoCfg>;
TEST_F(StageFifo, Collectives) { runStage<StageFifo>(kCollectives, kSomeTypes); }
TEST_F(StageFifo, PointToPoint) { runStage<StageFifo>(kSendRecvColls, {ncclUint8, ncclFloat64}); }
TEST_F(StageFifo, FourChannels) { EXPECT_NE(log().find("Channel 03/4"), std::string::npos) << log(); }

struct ShmCfg {
  static ScopedEnv::Vars env() {
    ScopedEnv::Vars v = {{"NCCL_BUFFSIZE", "65536"}};
    v.insert(v.end(), kFourChannels.begin(), kFourChannels.end());
    return v;
  }
  static ScopedEnv::Vars persistentEnv() { return {{"NCCL_P2P_DISABLE", "1"}}; }
};
using StageShm = Stage<ShmCfg>;
TEST_F(StageShm, UsesShmTransport) {
  EXPECT_NE(log().find("via SHM"), std::string::npos) << log();
  EXPECT_EQ(log().find("via P2P"), std::string::npos) << log();
}
TEST_F(StageShm, Collectives) { runStage<StageShm>(kCollectives, kSomeTypes); }
TEST_F(StageShm, PointToPoint) { runStage<StageShm>(kSendRecvColls, {ncclUint8, ncclFloat64}); }

struct NaiveShmCfg {
  static ScopedEnv::Vars env() {
    return {{"BATON_ALLREDUCE_ALGO", "naive"}, {"BATON_FIFO_DEPTH", "1"}, {"NCCL_BUFFSIZE", "65536"}};
  }
  static ScopedEnv::Vars persistentEnv() { return {{"NCCL_P2P_DISABLE", "1"}}; }
};
using StageNaiveShm = Stage<NaiveShmCfg>;
TEST_F(StageNaiveShm, AllReduce) { runStage<StageNaiveShm>({Coll::AllReduce}, kSomeTypes); }
TEST_F(StageNaiveShm, UsesShmTransport) {
  EXPECT_NE(log().find("via SHM"), std::string::npos) << log();
  EXPECT_EQ(log().find("via P2P"), std::string::npos) << log();
}

}  // namespace
}  // namespace bt

// AllReduce: every datatype x op x count {0,1,7,1023} x placement at 1..8 ranks (drives taking
// turns, see runSmall), the large count (>= 4 MiB, odd) at 2,3,5,8 ranks (runLarge), many
// AllReduces in one group, the PreMulSum scalar by pointer, buffers that are not 64-byte aligned,
// and count 0 with NULL buffers.
#include "collectives/harness.h"

namespace bt {
namespace {

class AllReduce : public ::testing::TestWithParam<TypeRanks> {};
TEST_P(AllReduce, Small) {
  auto [type, n] = GetParam();
  runSmall(cachedComms(n), Coll::AllReduce, type);
}
INSTANTIATE_TEST_SUITE_P(, AllReduce, ::testing::Combine(::testing::ValuesIn(kAllTypes), ::testing::Range(1, 9)),
                         typeRanksName);

class AllReduceLarge : public ::testing::TestWithParam<TypeRanks> {};
TEST_P(AllReduceLarge, Large) {
  auto [type, n] = GetParam();
  runLarge(cachedComms(n), Coll::AllReduce, type);
}
INSTANTIATE_TEST_SUITE_P(, AllReduceLarge,
                         ::testing::Combine(::testing::ValuesIn(kAllTypes), ::testing::Values(2, 3, 5, 8)),
                         typeRanksName);

TEST(AllReduceApi, ManyInOneGroup) {
  for (int n : {3, 8})
    for (Drive d : {Drive::Group, Drive::Threads}) {
      std::vector<GroupItem> items = mixedCases(cachedComms(n), Coll::AllReduce, 24, 200 + n);
      runGrouped(items, d);
    }
}

// ncclScalarDevice: the op keeps the scalar's address, so the exact-data matrix runs through it.
TEST(AllReduceApi, PreMulSumScalarByPointer) {
  for (int n : {1, 3, 4}) {
    for (ncclDataType_t type : kAllTypes) {
      for (size_t count : {size_t(7), size_t(1023), size_t(70001)}) {
        CollCase c{Coll::AllReduce, type, Op::PreMulSum, count};
        c.scalarDevice = true;
        c.seed = 77 + count;
        EXPECT_EQ(runCase(cachedComms(n), c, Drive::Group), "");
      }
    }
  }
}

// A device-resident scalar is read when the operation runs, not when the op is created.
TEST(AllReduceApi, PreMulSumScalarReadAtRunTime) {
  const Comms& comms = cachedComms(2);
  double scalar = 1.0;
  std::vector<ncclRedOp_t> ops(2);
  for (int r = 0; r < 2; ++r)
    NCCL_ASSERT(ncclRedOpCreatePreMulSum(&ops[r], &scalar, ncclFloat64, ncclScalarDevice, comms[r]));
  scalar = 0.25;
  std::vector<std::vector<double>> in{{4, 8, -12}, {16, 1, 2}}, out(2, std::vector<double>(3, -1));
  EXPECT_EQ(runRanks(2, Drive::Group,
                     [&](int r) {
                       return ncclAllReduce(in[r].data(), out[r].data(), 3, ncclFloat64, ops[r], comms[r], nullptr);
                     }),
            "");
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(out[r], (std::vector<double>{5, 2.25, -2.5})) << "rank " << r;
    NCCL_EXPECT(ncclRedOpDestroy(ops[r], comms[r]));
  }
}

// Buffers at odd element offsets from 64-byte alignment (the planner cuts in 512-byte grains).
TEST(AllReduceApi, UnalignedBuffers) {
  for (int n : {2, 3}) {
    const Comms& comms = cachedComms(n);
    for (size_t count : {size_t(1023), size_t(300007)}) {
      const uint64_t seed = 5 + count;
      std::vector<std::vector<float>> send(n, std::vector<float>(count + 1)), recv(n, std::vector<float>(count + 3));
      for (int r = 0; r < n; ++r) fillInput(ncclFloat32, Op::Sum, n, seed, r, 0, count, send[r].data() + 1);
      EXPECT_EQ(runRanks(n, Drive::Threads,
                         [&](int r) {
                           return ncclAllReduce(send[r].data() + 1, recv[r].data() + 3, count, ncclFloat32, ncclSum,
                                                comms[r], nullptr);
                         }),
                "");
      std::vector<float> want(count);
      fillExpected(ncclFloat32, Op::Sum, n, seed, 0, count, want.data());
      for (int r = 0; r < n; ++r)
        EXPECT_EQ(compareBits(recv[r].data() + 3, want.data(), count, 4, "recvbuff"), "")
            << "rank " << r << " count " << count;
    }
  }
}

// count 0 needs no buffers at all: NULL pointers are accepted and nothing is touched.
TEST(AllReduceApi, CountZeroWithNullBuffers) {
  const Comms& comms = cachedComms(3);
  for (Drive d : {Drive::Group, Drive::Threads})
    EXPECT_EQ(
        runRanks(3, d,
                 [&](int r) { return ncclAllReduce(nullptr, nullptr, 0, ncclFloat32, ncclSum, comms[r], nullptr); }),
        "");
}

// The one-shot's two protocols by size (oneshot_allreduce.h): LL lines up to BATON_ONESHOT_BYTES,
// Simple bytes above it up to BATON_ONESHOT_SIMPLE_BYTES, the tuner's ring beyond; each size's COLL
// line must name the path that ran (a silent fallback fails), and the result is exact, in and out
// of place, with every op. BATON_ONESHOT_SIMPLE_BYTES=0 keeps the ring above LL's sizes.
TEST(AllReduceApi, OneShotProtocolsBySize) {
  struct Want {
    size_t count;
    const char* line;
  };
  for (const char* simpleBytes : {"2048", "0"}) {
    ScopedEnv env(ScopedEnv::Vars{{"BATON_ONESHOT_BYTES", "64"}, {"BATON_ONESHOT_SIMPLE_BYTES", simpleBytes}});
    const bool simple = std::string(simpleBytes) != "0";
    const std::vector<Want> wants = {{16, "algorithm OneShot protocol LL"},
                                     {17, simple ? "algorithm OneShot protocol Simple" : "algorithm Ring"},
                                     {512, simple ? "algorithm OneShot protocol Simple" : "algorithm Ring"},
                                     {513, "algorithm Ring"}};
    for (int n : {1, 2, 3, 4}) {  // 1 rank: its own input, pre- and post-applied
      Comms c = initAll(n);
      for (const Want& w : wants)
        for (Op op : {Op::Sum, Op::Max, Op::Avg, Op::PreMulSum}) {
          const bool inPlace = op == Op::Max || op == Op::Avg;
          const std::string log = captureLog("COLL", [&] {
            EXPECT_EQ(runCase(c, {Coll::AllReduce, ncclFloat32, op, w.count, 0, inPlace}, Drive::Threads), "")
                << n << " ranks, count " << w.count;
          });
          EXPECT_NE(log.find(w.line), std::string::npos) << n << " ranks, count " << w.count << ":\n" << log;
        }
      destroyComms(c);
    }
  }
}

// BATON_ONESHOT_NET_BYTES: with every peer over NET (loopback TCP), small AllReduces take the Simple
// one-shot (one network hop); larger ones keep the ring. Unset: 2 ranks up to 32 KiB, over the
// ring's own connectors, and more ranks not at all; set: that size for any rank count; 0: off.
// One-shots and ring calls alternate on one communicator in both drives, so the ring's step
// counters must come back right from every one-shot. COLL lines and exact data.
TEST(AllReduceApi, OneShotOverNet) {
  for (const char* netBytes : {(const char*)nullptr, "4096", "0"}) {
    ScopedEnv env(ScopedEnv::Vars{{"NCCL_P2P_DISABLE", "1"},
                                  {"NCCL_SHM_DISABLE", "1"},
                                  {"NCCL_SOCKET_IFNAME", "lo"},
                                  {"BATON_ONESHOT_NET_BYTES", netBytes}});
    for (int n : {2, 3}) {
      const size_t limit = !netBytes ? (n == 2 ? 32768 : 0) : std::stoul(netBytes);
      Comms c = initAll(n);
      for (Drive d : {Drive::Threads, Drive::Group})
        for (size_t count : {size_t(2), size_t(1025), size_t(1024), size_t(8193), size_t(8192), size_t(3)}) {
          const Op op = count % 2 ? Op::PreMulSum : Op::Sum;
          const std::string where = std::string(netBytes ? netBytes : "unset") + ", " + std::to_string(n) + " ranks, " +
                                    driveName(d) + ", count " + std::to_string(count);
          const std::string log = captureLog("COLL", [&] {
            EXPECT_EQ(runCase(c, {Coll::AllReduce, ncclFloat32, op, count, 0, op == Op::Sum}, d), "") << where;
          });
          const bool oneShot = count * sizeof(float) <= limit;
          EXPECT_NE(log.find(oneShot ? "algorithm OneShot protocol Simple" : "algorithm Ring"), std::string::npos)
              << where << ":\n"
              << log;
        }
      destroyComms(c);
    }
  }
}

}  // namespace
}  // namespace bt

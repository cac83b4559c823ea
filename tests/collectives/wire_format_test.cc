// The wire-format collectives (include/baton/lowp.h, lesson 15) at 1-4 thread ranks: each result
// against a reference computed here without communication (the codecs of block_formats.h applied
// to each rank's input, sums in fp32 in rank order), bit for bit; integer-valued data that MXFP8
// and MXFP4 carry exactly, summed exactly; every rank's AllReduce result the same; the INFO line
// naming the algorithm that ran; NaN blocks; stochastic rounding; then bad input and ranks that
// disagree.
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "baton/lowp.h"
#include "collectives/harness.h"
#include "collectives/wire_case.h"

namespace bt {
namespace {

constexpr batonWireFormat_t kWires[] = {batonWireMxfp8, batonWireMxfp4, batonWireNvfp4};
constexpr ncclDataType_t kTypes[] = {ncclFloat, ncclBfloat16, ncclHalf};

size_t elemSize(ncclDataType_t t) { return wireElemSize(t); }
float load(ncclDataType_t t, const char* p) { return wireLoad(t, p); }

struct Ranks {
  std::vector<std::vector<char>> send, recv;
};

Ranks makeRanks(int n, ncclDataType_t t, size_t sendCount, size_t recvCount, bool integers) {
  Ranks rk;
  for (int r = 0; r < n; ++r) {
    rk.send.push_back(wireInputs(t, sendCount, r, integers));
    rk.recv.emplace_back(recvCount * elemSize(t) + 8, char(0x5a));  // 8 guard bytes
  }
  return rk;
}

void expectGuard(const std::vector<char>& buf, size_t bytes, const std::string& what) {
  for (size_t i = bytes; i < buf.size(); ++i) ASSERT_EQ(buf[i], char(0x5a)) << what << ": wrote past recvbuff";
}

std::string caseName(batonWireFormat_t w, ncclDataType_t t, int n, size_t count) {
  return std::string(batonWireName(w)) + " type " + std::to_string(t) + " " + std::to_string(n) + " ranks count " +
         std::to_string(count);
}

// The tests above the pipelined one run at sizes below one default piece (1 MiB), where both stages
// give the naive stage's result.
TEST(WireFormat, AllGatherMatchesTheCodecPerRank) {
  for (int n : {1, 2, 3, 4})
    for (batonWireFormat_t w : kWires)
      for (ncclDataType_t t : kTypes)
        for (size_t count : {size_t(0), size_t(1), size_t(33), size_t(1000)}) {
          const std::string what = caseName(w, t, n, count);
          Ranks rk = makeRanks(n, t, count, count * n, false);
          const Comms& comms = cachedComms(n);
          ASSERT_EQ(runRanks(n, Drive::Threads,
                             [&](int r) {
                               return batonAllGatherWire(rk.send[r].data(), rk.recv[r].data(), count, t, w, comms[r],
                                                         nullptr);
                             }),
                    "")
              << what;
          const std::vector<char> want = wireExpected(WireColl::kAllGather, w, t, false, n, count, 0, rk.send);
          for (int r = 0; r < n && !want.empty(); ++r)  // memcmp may not be passed an empty vector's null
            ASSERT_EQ(memcmp(rk.recv[r].data(), want.data(), want.size()), 0) << what << ": rank " << r;
          for (int r = 0; r < n; ++r) expectGuard(rk.recv[r], count * n * elemSize(t), what);
        }
}

TEST(WireFormat, AllGatherPackedKeepsEveryRanksBytes) {
  for (int n : {2, 3})
    for (batonWireFormat_t w : kWires) {
      const size_t count = 77, seg = batonWireBytes(count, w);
      Ranks rk = makeRanks(n, ncclBfloat16, count, 0, false);
      std::vector<std::vector<uint8_t>> packed(n, std::vector<uint8_t>(seg * n));
      const Comms& comms = cachedComms(n);
      ASSERT_EQ(runRanks(n, Drive::Threads,
                         [&](int r) {
                           return batonAllGatherWirePacked(rk.send[r].data(), packed[r].data(), count, ncclBfloat16, w,
                                                           comms[r], nullptr);
                         }),
                "");
      for (int p = 0; p < n; ++p) {
        std::vector<uint8_t> mine(seg);
        NCCL_ASSERT(batonWireQuantize(rk.send[p].data(), count, ncclBfloat16, w, mine.data()));
        for (int r = 0; r < n; ++r)
          ASSERT_EQ(memcmp(&packed[r][p * seg], mine.data(), seg), 0)
              << batonWireName(w) << " rank " << r << " block " << p;
      }
    }
}

// The ReduceScatter's references: all-to-all (the default), rank r's result is the sum over p (in
// order) of the codec applied to rank p's chunk r, in fp32, divided by n for avg, rounded to the
// type; ring (BATON_LOWP_ALGO=ring), the partial sums requantized at every hop, as wire_case.h
// simulates them. The INFO line names the algorithm that ran.
void checkReduceScatter(const char* algo, WireColl coll) {
  ScopedEnv env(ScopedEnv::Vars{{"BATON_LOWP_ALGO", algo}});
  for (int n : {1, 2, 3, 4})
    for (batonWireFormat_t w : kWires)
      for (ncclDataType_t t : kTypes)
        for (size_t count : {size_t(1), size_t(17), size_t(500)})
          for (ncclRedOp_t op : {ncclSum, ncclAvg}) {
            const std::string what = caseName(w, t, n, count) + (op == ncclAvg ? " avg " : " sum ") + algo;
            Ranks rk = makeRanks(n, t, count * n, count, false);
            const Comms& comms = cachedComms(n);
            const std::string log = captureLog("COLL", [&] {
              ASSERT_EQ(runRanks(n, Drive::Threads,
                                 [&](int r) {
                                   return batonReduceScatterWire(rk.send[r].data(), rk.recv[r].data(), count, t, w, op,
                                                                 comms[r], nullptr);
                                 }),
                        "")
                  << what;
            });
            EXPECT_NE(log.find(coll == WireColl::kReduceScatterRing ? "algorithm ring" : "algorithm alltoall"),
                      std::string::npos)
                << what;
            for (int r = 0; r < n; ++r) {
              const std::vector<char> want = wireExpected(coll, w, t, op == ncclAvg, n, count, r, rk.send);
              ASSERT_EQ(memcmp(rk.recv[r].data(), want.data(), want.size()), 0) << what << ": rank " << r;
              expectGuard(rk.recv[r], count * elemSize(t), what);
            }
          }
}

TEST(WireFormat, ReduceScatterSumsDecodedChunksInRankOrder) { checkReduceScatter("auto", WireColl::kReduceScatter); }
TEST(WireFormat, ReduceScatterRingRequantizesEachHop) { checkReduceScatter("ring", WireColl::kReduceScatterRing); }

// AllReduce, each algorithm forced: the reference, every rank equal, the INFO line naming it.
void checkAllReduce(const char* algo, bool inPlace) {
  ScopedEnv env(ScopedEnv::Vars{{"BATON_LOWP_ALGO", algo}});
  for (int n : {1, 2, 3, 4})
    for (batonWireFormat_t w : kWires)
      for (ncclDataType_t t : {ncclFloat, ncclBfloat16})
        for (size_t count : {size_t(1), size_t(7), size_t(1001)}) {
          const std::string what = caseName(w, t, n, count) + " " + algo + (inPlace ? " in place" : "");
          Ranks rk = makeRanks(n, t, count, count, false);
          if (inPlace)
            for (int r = 0; r < n; ++r) memcpy(rk.recv[r].data(), rk.send[r].data(), count * elemSize(t));
          const Comms& comms = cachedComms(n);
          const std::string log = captureLog("COLL", [&] {
            ASSERT_EQ(runRanks(n, Drive::Threads,
                               [&](int r) {
                                 const void* src = inPlace ? rk.recv[r].data() : rk.send[r].data();
                                 return batonAllReduceWire(src, rk.recv[r].data(), count, t, w, ncclSum, comms[r],
                                                           nullptr);
                               }),
                      "")
                << what;
          });
          EXPECT_NE(log.find(std::string("algorithm ") + algo), std::string::npos) << what << "\n" << log;
          const WireColl coll = std::string(algo) == "oneshot" ? WireColl::kAllReduceOneShot
                                : std::string(algo) == "ring"  ? WireColl::kAllReduceRing
                                                               : WireColl::kAllReduceRsag;
          const std::vector<char> want = wireExpected(coll, w, t, false, n, count, 0, rk.send);
          for (int r = 0; r < n; ++r) {
            ASSERT_EQ(memcmp(rk.recv[r].data(), want.data(), want.size()), 0) << what << ": rank " << r;
            ASSERT_EQ(memcmp(rk.recv[r].data(), rk.recv[0].data(), count * elemSize(t)), 0) << what;
            expectGuard(rk.recv[r], count * elemSize(t), what);
          }
        }
}

TEST(WireFormat, AllReduceRsag) { checkAllReduce("rsag", false); }
TEST(WireFormat, AllReduceRing) { checkAllReduce("ring", false); }

TEST(WireFormat, AllReduceOneShot) { checkAllReduce("oneshot", false); }
TEST(WireFormat, AllReduceInPlace) {
  checkAllReduce("rsag", true);
  checkAllReduce("oneshot", true);
}

// Integers from {0, 1, 2, 3, 4, 6} with a 6 in every block travel exactly in MXFP8 and MXFP4, so
// the sum is exact: a check that needs no codec at all.
TEST(WireFormat, IntegerValuedDataSumsExactlyInMxFormats) {
  const int n = 4;
  for (batonWireFormat_t w : {batonWireMxfp8, batonWireMxfp4})
    for (const char* algo : {"rsag", "oneshot"}) {
      ScopedEnv env(ScopedEnv::Vars{{"BATON_LOWP_ALGO", algo}});
      const size_t count = 4096 + 64;
      Ranks rk = makeRanks(n, ncclFloat, count, count, true);
      const Comms& comms = cachedComms(n);
      ASSERT_EQ(runRanks(n, Drive::Threads,
                         [&](int r) {
                           return batonAllReduceWire(rk.send[r].data(), rk.recv[r].data(), count, ncclFloat, w, ncclSum,
                                                     comms[r], nullptr);
                         }),
                "");
      for (size_t i = 0; i < count; ++i) {
        float want = 0;
        for (int p = 0; p < n; ++p) want += load(ncclFloat, &rk.send[p][i * 4]);
        // rsag requantizes the sums: exact while they fit the element format (|sum| <= 24 and
        // every block's sums representable); the first element of every 16 is 24, the block max.
        if (std::string(algo) == "rsag" && w == batonWireMxfp4) {
          const float got = load(ncclFloat, &rk.recv[0][i * 4]);
          ASSERT_LE(std::fabs(got - want), std::max(std::fabs(want) / 4.f, 1.f)) << i;  // half a step, scale 4
          continue;
        }
        if (std::string(algo) == "rsag") {  // MXFP8: integers to 16 exact, 17..24 within half a step (2^-4)
          ASSERT_LE(std::fabs(load(ncclFloat, &rk.recv[0][i * 4]) - want), std::fabs(want) / 16.f) << i;
          continue;
        }
        ASSERT_EQ(load(ncclFloat, &rk.recv[0][i * 4]), want) << batonWireName(w) << " " << algo << " element " << i;
      }
    }
}

TEST(WireFormat, NaNBlocksAreCountedAndDecodeAsNaN) {
  const int n = 2;
  const size_t count = 64;
  Ranks rk = makeRanks(n, ncclFloat, count, count, false);
  const float nan = NAN;
  memcpy(&rk.send[1][5 * 4], &nan, 4);  // block 0 of the MX formats, block 0 of NVFP4
  const Comms& comms = cachedComms(n);
  ScopedEnv env(ScopedEnv::Vars{{"BATON_LOWP_ALGO", "oneshot"}});
  const std::string log = captureLog("COLL", [&] {
    ASSERT_EQ(runRanks(n, Drive::Threads,
                       [&](int r) {
                         return batonAllReduceWire(rk.send[r].data(), rk.recv[r].data(), count, ncclFloat,
                                                   batonWireMxfp8, ncclSum, comms[r], nullptr);
                       }),
              "");
  });
  EXPECT_NE(log.find("1 blocks held a NaN or an infinity"), std::string::npos) << log;
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i)
      EXPECT_EQ(std::isnan(load(ncclFloat, &rk.recv[r][i * 4])), i < 32) << "rank " << r << " element " << i;
}

// The fused stage counts a NaN block once, on the rank that quantized it: rank 1's input for the
// AllGather; rank 1's chunk and then rank 0's sum of it for the AllReduce (two quantizations).
TEST(WireFormat, FusedStageCountsNaNBlocksWhereTheyAreQuantized) {
  const int n = 2;
  const size_t count = 64;
  const Comms& comms = cachedComms(n);
  ScopedEnv env(ScopedEnv::Vars{{"BATON_LOWP_STAGE", "fused"}, {"BATON_LOWP_ALGO", "rsag"}});
  for (bool gather : {true, false}) {
    Ranks rk = makeRanks(n, ncclFloat, count, gather ? count * n : count, false);
    const float nan = NAN;
    memcpy(&rk.send[1][5 * 4], &nan, 4);  // block 0 of rank 1's input; chunk 0 of the AllReduce
    const std::string log = captureLog("COLL", [&] {
      ASSERT_EQ(runRanks(n, Drive::Threads,
                         [&](int r) {
                           const void* s = rk.send[r].data();
                           void* d = rk.recv[r].data();
                           return gather ? batonAllGatherWire(s, d, count, ncclFloat, batonWireMxfp8, comms[r], nullptr)
                                         : batonAllReduceWire(s, d, count, ncclFloat, batonWireMxfp8, ncclSum, comms[r],
                                                              nullptr);
                         }),
                "");
    });
    const std::string fn = gather ? "batonAllGatherWire" : "batonAllReduceWire";
    EXPECT_NE(log.find(fn + ": 1 blocks held a NaN or an infinity and travel as NaN (rank 1)"), std::string::npos)
        << log;
    EXPECT_EQ(log.find(fn + ": 1 blocks held a NaN or an infinity and travel as NaN (rank 0)") != std::string::npos,
              !gather)
        << log;
    const size_t first = gather ? count : 0;  // where rank 1's poisoned block lands
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < (gather ? count * n : count); ++i)
        EXPECT_EQ(std::isnan(load(ncclFloat, &rk.recv[r][i * 4])), i >= first && i < first + 32)
            << "rank " << r << " element " << i;
  }
}

TEST(WireFormat, StochasticRoundingStaysWithinAStepAndAgreesAcrossRanks) {
  const int n = 3;
  const size_t count = 2000;
  Ranks rk = makeRanks(n, ncclFloat, count, count, false), nearest = rk;
  const Comms& comms = cachedComms(n);
  auto run = [&](Ranks& x) {
    return runRanks(n, Drive::Threads, [&](int r) {
      return batonAllReduceWire(x.send[r].data(), x.recv[r].data(), count, ncclFloat, batonWireMxfp8, ncclSum, comms[r],
                                nullptr);
    });
  };
  ASSERT_EQ(run(nearest), "");
  {
    ScopedEnv env(ScopedEnv::Vars{{"BATON_LOWP_ROUNDING", "stochastic"}, {"BATON_LOWP_SEED", "7"}});
    ASSERT_EQ(run(rk), "");
  }
  size_t differ = 0;
  for (size_t i = 0; i < count; ++i) {
    const float s = load(ncclFloat, &rk.recv[0][i * 4]), e = load(ncclFloat, &nearest.recv[0][i * 4]);
    differ += s != e;
    // One quantization (oneshot at this size), each input within one step (twice the half step of
    // rounding to nearest): 2 max(2^-4 |x|, 2^-10 S), S <= 2 amax / 448 of its block of 32.
    double exact = 0, bound = 0;
    for (int p = 0; p < n; ++p) {
      const double x = load(ncclFloat, &rk.send[p][i * 4]);
      double amax = 0;
      for (size_t j = i / 32 * 32; j < std::min(count, i / 32 * 32 + 32); ++j)
        amax = std::max(amax, (double)std::fabs(load(ncclFloat, &rk.send[p][j * 4])));
      exact += x;
      bound += 2 * std::max(std::fabs(x) / 16, 2 * amax / 448 / 1024);
    }
    ASSERT_LE(std::fabs(s - exact), bound * (1 + 1e-5) + 1e-6) << i;
    for (int r = 1; r < n; ++r) ASSERT_EQ(memcmp(&rk.recv[r][i * 4], &rk.recv[0][i * 4], 4), 0);
  }
  EXPECT_GT(differ, count / 10) << "stochastic rounding changed too few results to have run";
}

// The pipelined stage over pieces of 512 bytes: several pieces and a short last one, each collective,
// against the naive stage's result on each piece; the INFO line names the stage.
TEST(WireFormat, PipelinedStageMatchesTheNaiveStagePerPiece) {
  ScopedEnv env(
      ScopedEnv::Vars{{"BATON_LOWP_STAGE", "pipelined"}, {"BATON_LOWP_PIECE", "512"}, {"BATON_LOWP_ALGO", "rsag"}});
  for (int n : {2, 3})
    for (batonWireFormat_t w : kWires)
      for (WireColl coll : {WireColl::kAllGather, WireColl::kReduceScatter, WireColl::kAllReduceRsag})
        for (size_t count : {size_t(100), size_t(1000), size_t(2049)}) {
          const ncclDataType_t t = ncclBfloat16;
          const std::string what = caseName(w, t, n, count) + " collective " + std::to_string(int(coll));
          const size_t sendElems = coll == WireColl::kReduceScatter ? count * n : count;
          const size_t recvElems = coll == WireColl::kAllGather ? count * n : count;
          Ranks rk = makeRanks(n, t, sendElems, recvElems, false);
          const Comms& comms = cachedComms(n);
          const std::string log = captureLog("COLL", [&] {
            ASSERT_EQ(runRanks(n, Drive::Threads,
                               [&](int r) {
                                 void* d = rk.recv[r].data();
                                 const void* s = rk.send[r].data();
                                 if (coll == WireColl::kAllGather)
                                   return batonAllGatherWire(s, d, count, t, w, comms[r], nullptr);
                                 if (coll == WireColl::kReduceScatter)
                                   return batonReduceScatterWire(s, d, count, t, w, ncclAvg, comms[r], nullptr);
                                 return batonAllReduceWire(s, d, count, t, w, ncclSum, comms[r], nullptr);
                               }),
                      "")
                << what;
          });
          EXPECT_NE(log.find("stage pipelined"), std::string::npos) << what << "\n" << log;
          for (int r = 0; r < n; ++r) {
            const std::vector<char> want =
                wireExpectedPieces(coll, w, t, coll == WireColl::kReduceScatter, n, count, r, rk.send, 512);
            ASSERT_EQ(memcmp(rk.recv[r].data(), want.data(), want.size()), 0) << what << ": rank " << r;
            expectGuard(rk.recv[r], recvElems * elemSize(t), what);
          }
        }
}

// The fused stage with FIFO steps of 256 bfloat16 elements (BATON_LOWP_PIECE=512): several steps
// and a short last one, in and out of place, against the codecs applied step by step. For MXFP8
// and MXFP4 that is also the naive stage's result, bit for bit (checked here on the reference);
// NVFP4 takes its fp32 segment scale per step. ReduceScatter and the in-place AllReduce average.
// The INFO line names the stage.
TEST(WireFormat, FusedStageMatchesTheCodecsStepByStep) {
  ScopedEnv env(
      ScopedEnv::Vars{{"BATON_LOWP_STAGE", "fused"}, {"BATON_LOWP_PIECE", "512"}, {"BATON_LOWP_ALGO", "rsag"}});
  constexpr size_t kStep = 256;
  for (int n : {1, 2, 3, 4})
    for (batonWireFormat_t w : kWires)
      for (WireColl coll : {WireColl::kAllGather, WireColl::kReduceScatter, WireColl::kAllReduceRsag})
        for (size_t count : {size_t(2), size_t(100), size_t(512), size_t(1000), size_t(2049)})
          for (bool inPlace : {false, true}) {
            if (inPlace && coll == WireColl::kReduceScatter) continue;
            const ncclDataType_t t = count == 1000 ? ncclHalf : ncclBfloat16;
            const std::string what =
                caseName(w, t, n, count) + " collective " + std::to_string(int(coll)) + (inPlace ? " in place" : "");
            const size_t sendElems = coll == WireColl::kReduceScatter ? count * n : count;
            const size_t recvElems = coll == WireColl::kAllGather ? count * n : count;
            Ranks rk = makeRanks(n, t, sendElems, recvElems, false);
            const size_t es = elemSize(t);
            if (inPlace)  // the input where NCCL puts it for an in-place call
              for (int r = 0; r < n; ++r)
                memcpy(rk.recv[r].data() + (coll == WireColl::kAllGather ? r * count * es : 0), rk.send[r].data(),
                       count * es);
            const Comms& comms = cachedComms(n);
            const std::string log = captureLog("COLL", [&] {
              ASSERT_EQ(runRanks(n, Drive::Threads,
                                 [&](int r) {
                                   char* d = rk.recv[r].data();
                                   const void* s = rk.send[r].data();
                                   if (coll == WireColl::kAllGather)
                                     return batonAllGatherWire(inPlace ? d + r * count * es : s, d, count, t, w,
                                                               comms[r], nullptr);
                                   if (coll == WireColl::kReduceScatter)
                                     return batonReduceScatterWire(s, d, count, t, w, ncclAvg, comms[r], nullptr);
                                   return batonAllReduceWire(inPlace ? d : s, d, count, t, w,
                                                             inPlace ? ncclAvg : ncclSum, comms[r], nullptr);
                                 }),
                        "")
                  << what;
            });
            EXPECT_NE(log.find("stage fused"), std::string::npos) << what << "\n" << log;
            const bool avg = coll == WireColl::kReduceScatter || (inPlace && coll == WireColl::kAllReduceRsag);
            for (int r = 0; r < n; ++r) {
              const std::vector<char> want = wireExpected(coll, w, t, avg, n, count, r, rk.send, kStep);
              ASSERT_EQ(memcmp(rk.recv[r].data(), want.data(), want.size()), 0) << what << ": rank " << r;
              expectGuard(rk.recv[r], recvElems * es, what);
              if (w != batonWireNvfp4) {
                ASSERT_EQ(want, wireExpected(coll, w, t, avg, n, count, r, rk.send)) << what << ": MX steps differ";
              }
            }
          }
}

TEST(WireFormat, BadInputNamesTheArgument) {
  const Comms& comms = cachedComms(1);
  float x[64] = {}, y[64] = {};
  auto expectErr = [&](ncclResult_t got, ncclResult_t want, const char* words) {
    EXPECT_EQ(got, want);
    EXPECT_NE(std::string(ncclGetLastError(comms[0])).find(words), std::string::npos) << ncclGetLastError(comms[0]);
  };
  expectErr(batonAllReduceWire(x, y, 64, ncclFloat, batonWireFormat_t(7), ncclSum, comms[0], nullptr),
            ncclInvalidArgument, "wire format 7");
  expectErr(batonAllReduceWire(x, y, 16, ncclInt32, batonWireMxfp8, ncclSum, comms[0], nullptr), ncclInvalidArgument,
            "datatype");
  expectErr(batonAllReduceWire(x, y, 64, ncclFloat, batonWireMxfp8, ncclMax, comms[0], nullptr), ncclInvalidArgument,
            "op 2");
  expectErr(batonAllReduceWire(nullptr, y, 64, ncclFloat, batonWireMxfp8, ncclSum, comms[0], nullptr),
            ncclInvalidArgument, "sendbuff");
  expectErr(batonAllGatherWire(x, nullptr, 64, ncclFloat, batonWireNvfp4, comms[0], nullptr), ncclInvalidArgument,
            "recvbuff");
  expectErr(batonAllReduceWire(x, y, 64, ncclFloat, batonWireMxfp8, ncclSum, nullptr, nullptr), ncclInvalidArgument,
            "comm");
  {
    ScopedEnv env(ScopedEnv::Vars{{"BATON_LOWP_STAGE", "optimised"}});
    expectErr(batonAllReduceWire(x, y, 64, ncclFloat, batonWireMxfp8, ncclSum, comms[0], nullptr), ncclInvalidArgument,
              "BATON_LOWP_STAGE=optimised");
  }
  ncclGroupStart();
  expectErr(batonAllReduceWire(x, y, 64, ncclFloat, batonWireMxfp8, ncclSum, comms[0], nullptr), ncclInvalidUsage,
            "ncclGroupStart");
  ncclGroupEnd();
  EXPECT_EQ(batonWireBytes(64, batonWireFormat_t(9)), 0u);
  EXPECT_STREQ(batonWireName(batonWireFormat_t(9)), "unknown");
  EXPECT_EQ(batonWireQuantize(x, 64, ncclInt8, batonWireMxfp8, y), ncclInvalidArgument);
  EXPECT_EQ(batonWireDequantize(nullptr, 64, batonWireMxfp8, y, ncclFloat), ncclInvalidArgument);
}

// Ranks that disagree on the format (or one that rejects its own arguments) fail together, the
// message naming both sides, instead of decoding each other's bytes.
TEST(WireFormat, RanksThatDisagreeFailTogether) {
  const int n = 2;
  const Comms& comms = cachedComms(n);
  std::vector<std::vector<float>> x(n, std::vector<float>(64, 1.f)), y = x;
  std::vector<ncclResult_t> res(n);
  std::vector<std::string> why(n);
  runRanks(n, Drive::Threads, [&](int r) {
    res[r] = batonAllReduceWire(x[r].data(), y[r].data(), 64, ncclFloat, r ? batonWireMxfp4 : batonWireMxfp8, ncclSum,
                                comms[r], nullptr);
    why[r] = ncclGetLastError(comms[r]);
    return ncclSuccess;
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(res[r], ncclInvalidUsage);
    EXPECT_NE(why[r].find("ranks disagree"), std::string::npos) << why[r];
    EXPECT_NE(why[r].find("mxfp8"), std::string::npos) << why[r];
    EXPECT_NE(why[r].find("mxfp4"), std::string::npos) << why[r];
  }
  runRanks(n, Drive::Threads, [&](int r) {
    res[r] = batonAllReduceWire(x[r].data(), y[r].data(), 64, r ? ncclInt32 : ncclFloat, batonWireMxfp8, ncclSum,
                                comms[r], nullptr);
    why[r] = ncclGetLastError(comms[r]);
    return ncclSuccess;
  });
  EXPECT_EQ(res[0], ncclInvalidUsage);
  EXPECT_NE(why[0].find("rank 1 rejected its own arguments"), std::string::npos) << why[0];
  EXPECT_EQ(res[1], ncclInvalidArgument);
  // Both still work afterwards.
  ASSERT_EQ(runRanks(n, Drive::Threads,
                     [&](int r) {
                       return batonAllReduceWire(x[r].data(), y[r].data(), 64, ncclFloat, batonWireMxfp8, ncclSum,
                                                 comms[r], nullptr);
                     }),
            "");
  EXPECT_EQ(y[0][0], 2.f);
}

}  // namespace
}  // namespace bt

// The device-side API (include/baton/device.h, lesson 11) on thread ranks: peer pointers, signals and
// barriers in 200 rounds on 1-4 ranks (tests/fused/devapi_check.h; the same checks run on processes
// and across namespaced hosts in fused_worker), and its bad input.
#include <cstring>
#include <string>
#include <vector>

#include "collectives/harness.h"
#include "fused/devapi_check.h"
#include "gtest/gtest.h"

namespace bt {
namespace {

class DeviceApiThreads : public ::testing::TestWithParam<int> {};

TEST_P(DeviceApiThreads, StoresSignalsAndBarriersInEveryRound) {
  const int n = GetParam();
  const Comms& comms = cachedComms(n);
  ASSERT_EQ((int)comms.size(), n);
  std::vector<std::string> errs(n);
  const std::string r = runRanks(n, Drive::Threads, [&](int rank) {
    errs[rank] = devcheck::checkRank(comms[rank], 200);
    return ncclSuccess;
  });
  EXPECT_EQ(r, "");
  for (int rank = 0; rank < n; ++rank) EXPECT_EQ(errs[rank], "") << "rank " << rank;
}
INSTANTIATE_TEST_SUITE_P(, DeviceApiThreads, ::testing::Values(1, 2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& i) { return std::to_string(i.param) + "ranks"; });

TEST(DeviceApiBadInput, EachArgumentErrorNamesIt) {
  const Comms& one = cachedComms(1);
  ASSERT_EQ(one.size(), 1u);
  ncclComm_t c = one[0];
  auto last = [&] { return std::string(ncclGetLastError(c)); };
  EXPECT_EQ(batonDevCommCreate(c, nullptr, nullptr), ncclInvalidArgument);
  EXPECT_NE(last().find("devComm is NULL"), std::string::npos) << last();
  batonDevComm dev{};
  batonDevCommRequirements bad = {-1, 1, 0};
  EXPECT_EQ(batonDevCommCreate(c, &bad, &dev), ncclInvalidArgument);
  EXPECT_NE(last().find("signalCount -1"), std::string::npos) << last();
  EXPECT_EQ(batonDevCommCreate(nullptr, nullptr, &dev), ncclInvalidArgument);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(batonDevCommCreate(c, nullptr, &dev), ncclInvalidUsage);
  EXPECT_NE(last().find("inside ncclGroupStart"), std::string::npos) << last();
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
  // Never created, then destroyed twice.
  EXPECT_EQ(batonDevCommDestroy(c, &dev), ncclInvalidArgument);
  ASSERT_EQ(batonDevCommCreate(c, nullptr, &dev), ncclSuccess);
  EXPECT_EQ(dev.lsaSize, 1);
  EXPECT_EQ(dev.signalCount, 1);
  batonDevWindow w;
  EXPECT_EQ(batonDevWindowGet(&dev, nullptr, &w), ncclInvalidArgument);
  EXPECT_NE(last().find("win is NULL"), std::string::npos) << last();
  // batonPutSignal: each bad argument refused (false), naming it, and nothing written.
  void* mem = nullptr;
  ncclWindow_t win = nullptr;
  ASSERT_EQ(ncclMemAlloc(&mem, 4096), ncclSuccess);
  ASSERT_EQ(ncclCommWindowRegister(c, mem, 4096, &win, NCCL_WIN_COLL_SYMMETRIC), ncclSuccess);
  ASSERT_EQ(batonDevWindowGet(&dev, win, &w), ncclSuccess);
  memset(mem, 0, 4096);
  const uint64_t v = 7;
  EXPECT_FALSE(batonPutSignal(dev, w, 3, 0, &v, sizeof v, 0));
  EXPECT_NE(last().find("peer 3 is not a rank"), std::string::npos) << last();
  EXPECT_FALSE(batonPutSignal(dev, w, 0, 0, &v, sizeof v, 1));
  EXPECT_NE(last().find("signal 1 out of range"), std::string::npos) << last();
  EXPECT_FALSE(batonPutSignal(dev, w, 0, 4090, &v, sizeof v, 0));
  EXPECT_NE(last().find("outside the 4096-byte window"), std::string::npos) << last();
  EXPECT_FALSE(batonPutSignal(dev, w, 0, 0, nullptr, 8, 0));
  EXPECT_NE(last().find("src is NULL"), std::string::npos) << last();
  EXPECT_EQ(batonReadSignal(dev, 0), 0u);
  EXPECT_EQ(*static_cast<uint64_t*>(mem), 0u);
  EXPECT_TRUE(batonPutSignal(dev, w, 0, 8, &v, sizeof v, 0));  // to itself: an LSA put
  EXPECT_EQ(static_cast<uint64_t*>(mem)[1], 7u);
  EXPECT_EQ(batonReadSignal(dev, 0), 1u);
  EXPECT_EQ(ncclCommWindowDeregister(c, win), ncclSuccess);
  EXPECT_EQ(ncclMemFree(mem), ncclSuccess);
  EXPECT_EQ(batonDevCommDestroy(c, &dev), ncclSuccess);
  EXPECT_EQ(batonDevCommDestroy(c, &dev), ncclInvalidArgument);
  EXPECT_NE(last().find("destroyed already"), std::string::npos) << last();
}

}  // namespace
}  // namespace bt

// Where a GPU communicator's FIFOs go (src/gpu/gpu_fifo_placement.h): the receiver's device memory
// when the sender's device can store there, else pinned memory (a thread of the same process) or
// shared memory (another process), else (another host, NCCL_SHM_DISABLE) a NET connection; and
// whether a ring then crosses host memory. The CUDA calls around these decisions need a GPU; the
// decisions do not.
#include <gtest/gtest.h>

#include "gpu/gpu_fifo_placement.h"

namespace baton {
namespace {

// Four ranks: 0 and 1 share a device, 2 reaches 3 and back, 1 reaches 2 but 2 does not reach 1
// (peer access need not be symmetric); nothing else.
std::vector<uint8_t> fourRanks() {
  std::vector<uint8_t> r(16, 0);
  auto set = [&](int from, int to) { r[from * 4 + to] = 1; };
  for (int i = 0; i < 4; ++i) set(i, i);
  set(0, 1), set(1, 0), set(2, 3), set(3, 2), set(1, 2);
  return r;
}

TEST(FifoPlacement, DeviceWhereTheSenderReachesElseHostByProcess) {
  const std::vector<uint8_t> reach = fourRanks();
  EXPECT_EQ(placeFifo(reach, 4, 0, 1, true, false, false), FifoPlace::kDevice);
  EXPECT_EQ(placeFifo(reach, 4, 1, 2, false, false, false), FifoPlace::kDevice);  // 1 stores into 2's memory
  EXPECT_EQ(placeFifo(reach, 4, 2, 1, false, false, false), FifoPlace::kShared);  // the other way it cannot
  EXPECT_EQ(placeFifo(reach, 4, 2, 1, true, false, false), FifoPlace::kPinned);
  EXPECT_EQ(placeFifo(reach, 4, 0, 3, true, false, false), FifoPlace::kPinned);
  EXPECT_EQ(placeFifo(reach, 4, 3, 3, false, false, false), FifoPlace::kDevice);  // to itself
  // The receiver decides from the sender's row only: the sender's claim about the receiver.
  std::vector<uint8_t> oneWay(4, 0);  // two ranks, 0 reaches 1, 1 reaches nothing
  oneWay[0 * 2 + 1] = 1;
  EXPECT_EQ(placeFifo(oneWay, 2, 0, 1, false, false, false), FifoPlace::kDevice);
  EXPECT_EQ(placeFifo(oneWay, 2, 1, 0, false, false, false), FifoPlace::kShared);
}

// NCCL's order for GPUs: P2P, then SHM, then NET. Another host is always NET (its bus ids say
// nothing about this host's devices); NCCL_SHM_DISABLE makes NET of what SHM would have carried,
// and leaves P2P alone.
TEST(FifoPlacement, NetForAnotherHostOrWhereShmIsDisabledAndP2pCannotReach) {
  const std::vector<uint8_t> reach = fourRanks();
  EXPECT_EQ(placeFifo(reach, 4, 0, 1, false, true, false), FifoPlace::kNet);  // reach[0][1] set, yet another host
  EXPECT_EQ(placeFifo(reach, 4, 2, 1, false, true, false), FifoPlace::kNet);
  EXPECT_EQ(placeFifo(reach, 4, 1, 2, false, false, true), FifoPlace::kDevice);  // P2P reaches: SHM's switch is moot
  EXPECT_EQ(placeFifo(reach, 4, 2, 1, false, false, true), FifoPlace::kNet);     // would be shared memory
  EXPECT_EQ(placeFifo(reach, 4, 0, 3, true, false, true), FifoPlace::kNet);      // would be pinned
  EXPECT_EQ(placeFifo(reach, 4, 3, 3, false, true, true), FifoPlace::kDevice);   // to itself, always
}

TEST(FifoPlacement, ARingCrossesHostMemoryWhenOneEdgeCannotBeStored) {
  const std::vector<uint8_t> reach = fourRanks();
  EXPECT_TRUE(ringsThroughHost(reach, 4, {{0, 1, 2, 3}}));  // 3 -> 0 is not reachable
  std::vector<uint8_t> all(16, 1);
  EXPECT_FALSE(ringsThroughHost(all, 4, {{0, 1, 2, 3}, {3, 2, 1, 0}}));
  all[2 * 4 + 1] = 0;                                                   // 2 cannot store into 1
  EXPECT_FALSE(ringsThroughHost(all, 4, {{0, 1, 2, 3}}));               // 1 -> 2 only
  EXPECT_TRUE(ringsThroughHost(all, 4, {{0, 1, 2, 3}, {3, 2, 1, 0}}));  // the reverse ring has 2 -> 1
  // NCCL_P2P_DISABLE: each rank reaches only itself; one rank never crosses anything.
  std::vector<uint8_t> selfOnly(4, 0);
  selfOnly[0] = selfOnly[3] = 1;
  EXPECT_TRUE(ringsThroughHost(selfOnly, 2, {{0, 1}}));
  EXPECT_FALSE(ringsThroughHost(std::vector<uint8_t>{1}, 1, {{0}}));
}

}  // namespace
}  // namespace baton

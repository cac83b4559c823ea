// Which symmetric kernel a collective on symmetric windows takes (src/register/symmetric_plan.h),
// the choice the CPU's planner and the CUDA backend share: AllGather by stores, ReduceScatter by
// loads, AllReduce one-shot up to the one-shot size and two-shot above it only where allowed.
#include <gtest/gtest.h>

#include "register/symmetric_plan.h"
#include "task.h"

namespace baton {
namespace {

TEST(SymmetricPlan, EachCollectiveTakesItsKernel) {
  CollAlgo a = kAlgoRing;
  ASSERT_TRUE(symmetricAlgo(kFuncAllGather, 1 << 30, 64 << 10, false, &a));
  EXPECT_EQ(a, kAlgoSymStore);
  ASSERT_TRUE(symmetricAlgo(kFuncReduceScatter, 1 << 30, 64 << 10, false, &a));
  EXPECT_EQ(a, kAlgoSymLoad);
  ASSERT_TRUE(symmetricAlgo(kFuncAllReduce, 64 << 10, 64 << 10, false, &a));
  EXPECT_EQ(a, kAlgoSymOneShot);
  EXPECT_FALSE(symmetricAlgo(kFuncBroadcast, 8, 64 << 10, true, &a));
  EXPECT_FALSE(symmetricAlgo(kFuncReduce, 8, 64 << 10, true, &a));
}

TEST(SymmetricPlan, TwoShotOnlyAboveTheOneShotSizeAndOnlyWhereAllowed) {
  CollAlgo a = kAlgoRing;
  EXPECT_FALSE(symmetricAlgo(kFuncAllReduce, (64 << 10) + 1, 64 << 10, false, &a));
  ASSERT_TRUE(symmetricAlgo(kFuncAllReduce, (64 << 10) + 1, 64 << 10, true, &a));
  EXPECT_EQ(a, kAlgoSymTwoShot);
  ASSERT_TRUE(symmetricAlgo(kFuncAllReduce, 16, 0, true, &a));  // BATON_SYM_ONESHOT_BYTES=0: two-shot at every size
  EXPECT_EQ(a, kAlgoSymTwoShot);
}

TEST(SymmetricPlan, BufferBytesCountEveryRanksBlockOnTheGatheredSide) {
  size_t sb = 0, rb = 0;
  const Task ag = collTask(kFuncAllGather, nullptr, nullptr, 10, ncclInt32);
  opBufferBytes(ag, 4, &sb, &rb);
  EXPECT_EQ(sb, 40u);
  EXPECT_EQ(rb, 160u);
  const Task rs = collTask(kFuncReduceScatter, nullptr, nullptr, 10, ncclFloat64);
  opBufferBytes(rs, 3, &sb, &rb);
  EXPECT_EQ(sb, 240u);
  EXPECT_EQ(rb, 80u);
  const Task ar = collTask(kFuncAllReduce, nullptr, nullptr, 10, ncclBfloat16);
  opBufferBytes(ar, 8, &sb, &rb);
  EXPECT_EQ(sb, 20u);
  EXPECT_EQ(rb, 20u);
}

}  // namespace
}  // namespace baton

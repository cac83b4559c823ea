// Which symmetric kernel a collective on symmetric windows takes (src/register/symmetric_plan.h),
// the choice the CPU's planner and the CUDA backend share: AllGather by stores, ReduceScatter by
// loads, AllReduce one-shot up to the one-shot size and two-shot above it only where allowed.
#include <gtest/gtest.h>

#include <vector>

#include "comm.h"
#include "nccl.h"
#include "register/symmetric_plan.h"
#include "register/window.h"
#include "task.h"
#include "unit/unit_helpers.h"

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

// The planner's shape of a collective (task.h): the gathered side counts every rank's block, and
// totalBytes is what the tuner and the thresholds weigh (collBytes).
TEST(SymmetricPlan, ShapeCountsEveryRanksBlockOnTheGatheredSide) {
  const CollShape ag = collShapeOf(collTask(kFuncAllGather, nullptr, nullptr, 10, ncclInt32), 4);
  EXPECT_EQ(ag.typeBytes, 4u);
  EXPECT_EQ(ag.sendBytes, 40u);
  EXPECT_EQ(ag.recvBytes, 160u);
  EXPECT_EQ(ag.totalBytes, collBytes(kFuncAllGather, 10, 4, 4));
  const CollShape rs = collShapeOf(collTask(kFuncReduceScatter, nullptr, nullptr, 10, ncclFloat64), 3);
  EXPECT_EQ(rs.sendBytes, 240u);
  EXPECT_EQ(rs.recvBytes, 80u);
  EXPECT_EQ(rs.totalBytes, collBytes(kFuncReduceScatter, 10, 8, 3));
  const CollShape ar = collShapeOf(collTask(kFuncAllReduce, nullptr, nullptr, 10, ncclBfloat16), 8);
  EXPECT_EQ(ar.sendBytes, 20u);
  EXPECT_EQ(ar.recvBytes, 20u);
  EXPECT_EQ(ar.totalBytes, 20u);
}

TEST(SymmetricPlan, TwoShotByDefaultOnAGpuOnly) {
  EXPECT_TRUE(symTwoShotAllowed(-1, true));
  EXPECT_FALSE(symTwoShotAllowed(-1, false));
  EXPECT_TRUE(symTwoShotAllowed(1, false));
  EXPECT_FALSE(symTwoShotAllowed(0, true));
}

// Two thread ranks with a window each: what the CPU's planner is handed, and that a window of
// host memory never serves the GPU's kernels.
TEST(SymmetricPlan, FindsTheWindowsAndTheOffsetsOnARealCommunicator) {
  constexpr int n = 2;
  constexpr size_t kBytes = 1 << 20;
  std::vector<ncclComm_t> c(n);
  ASSERT_EQ(ncclCommInitAll(c.data(), n, nullptr), ncclSuccess) << bt::lastError();
  std::vector<char*> mem(n);
  std::vector<ncclWindow_t> win(n);
  for (int r = 0; r < n; ++r) ASSERT_NCCL_OK(ncclMemAlloc(reinterpret_cast<void**>(&mem[r]), kBytes));
  ASSERT_NCCL_OK(ncclGroupStart());  // collective: one thread registers for both ranks
  for (int r = 0; r < n; ++r)
    ASSERT_NCCL_OK(ncclCommWindowRegister(c[r], mem[r], kBytes, &win[r], NCCL_WIN_COLL_SYMMETRIC));
  ASSERT_NCCL_OK(ncclGroupEnd());
  ncclComm* comm = c[1];
  SymmetricPlan sp;
  const Task small = collTask(kFuncAllReduce, mem[1] + 4096, mem[1] + 8192, 1000, ncclInt32);
  ASSERT_TRUE(planSymmetricWindows(comm, small, collShapeOf(small, comm->nRanks), false, &sp));
  EXPECT_EQ(sp.algo, kAlgoSymOneShot);
  EXPECT_EQ(sp.send, win[1]);
  EXPECT_EQ(sp.recv, win[1]);
  EXPECT_EQ(sp.sendOffset, 4096u);
  EXPECT_EQ(sp.recvOffset, 8192u);
  EXPECT_FALSE(planSymmetricWindows(comm, small, collShapeOf(small, comm->nRanks), true, &sp))
      << "a host window served the GPU's kernels";
  const Task large = collTask(kFuncAllReduce, mem[1], mem[1] + kBytes / 2, kBytes / 8, ncclInt32);  // 128 KiB
  comm->tun.symTwoShot = -1;
  EXPECT_FALSE(planSymmetricWindows(comm, large, collShapeOf(large, comm->nRanks), false, &sp))
      << "two-shot on a CPU by default";
  comm->tun.symTwoShot = 1;
  ASSERT_TRUE(planSymmetricWindows(comm, large, collShapeOf(large, comm->nRanks), false, &sp));
  EXPECT_EQ(sp.algo, kAlgoSymTwoShot);
  // In place on rank 1: its input is its block of the output, 128 KiB in.
  const Task gather = collTask(kFuncAllGather, mem[1] + kBytes / 8, mem[1], kBytes / 32, ncclInt32);
  ASSERT_TRUE(planSymmetricWindows(comm, gather, collShapeOf(gather, comm->nRanks), false, &sp));
  EXPECT_EQ(sp.algo, kAlgoSymStore);
  EXPECT_EQ(sp.sendOffset, kBytes / 8);
  EXPECT_EQ(sp.recvOffset, 0u);
  // 2 x 256 KiB of output from 516 KiB in: past the window's end.
  const Task past = collTask(kFuncAllGather, mem[1], mem[1] + kBytes / 2 + 4096, kBytes / 16, ncclInt32);
  EXPECT_FALSE(planSymmetricWindows(comm, past, collShapeOf(past, comm->nRanks), false, &sp));
  std::vector<char> heap(4096);
  const Task outside = collTask(kFuncReduceScatter, mem[1], heap.data(), 16, ncclInt32);
  EXPECT_FALSE(planSymmetricWindows(comm, outside, collShapeOf(outside, comm->nRanks), false, &sp));
  const Task none = collTask(kFuncAllReduce, mem[1], mem[1], 0, ncclInt32);
  EXPECT_FALSE(planSymmetricWindows(comm, none, collShapeOf(none, comm->nRanks), false, &sp));
  ASSERT_NCCL_OK(ncclGroupStart());
  for (int r = 0; r < n; ++r) ASSERT_NCCL_OK(ncclCommWindowDeregister(c[r], win[r]));
  ASSERT_NCCL_OK(ncclGroupEnd());
  for (int r = 0; r < n; ++r) {
    ASSERT_NCCL_OK(ncclCommDestroy(c[r]));
    ASSERT_NCCL_OK(ncclMemFree(mem[r]));
  }
}

}  // namespace
}  // namespace baton

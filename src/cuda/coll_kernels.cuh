// The CUDA backend's collective kernels: one block per channel, each running the same ring or tree
// body the CPU workers run (algorithms/ring_*.h, tree_allreduce.h) with all of the block's threads.
//
// Computes: block c is channel c's share of one collective (AllReduce, Reduce, ReduceScatter on
// elements of T with operator OpT; AllGather and Broadcast on bytes), through the connectors the
// GPU communicator keeps in device memory (GpuChannelDev): the ring's, or for AllReduce the tree's
// when the launch says Tree; or, between windows of device memory, the symmetric kernels
// (sym_kernels.cuh). Introduced by the CUDA backend (README's feature table); the bodies are
// lessons 02-04's and 07's.
// Memory-ordering contract: the protocols' files state it (primitives_simple.h, primitives_ll.h,
// primitives_ll128.h); cuda::atomic_ref at system scope gives their release/acquire pairs, and the
// Simple protocol's block barrier before thread 0's release store makes every thread's payload
// stores part of what the tail releases. A block that gave up publishes its failure into pinned
// host memory: the failure record first, a system fence, then `failed`.
#pragma once

#include "block.cuh"
#include "sym_kernels.cuh"
#include "ring_allgather.h"
#include "ring_allreduce.h"
#include "ring_broadcast.h"
#include "ring_reduce.h"
#include "ring_reduce_scatter.h"
#include "step_check.h"
#include "tree_allreduce.h"

namespace baton {

// Thread 0 asks whether the connectors the body will cut its work by hold an element per step
// (step_check.h) and the block follows its answer, recorded in the shared ctx: threads reading a
// table that is being rewritten could disagree, and the bodies' barriers need every thread.
template <typename T, typename P>
__device__ __forceinline__ bool gpuStepsUsable(ExecCtx& ctx, const CollArgs& a) {
  if (threadIdx.x == 0) (void)(a.algo == kAlgoTree ? treeStepsUsable<T, P>(ctx, a) : ringStepsUsable<T, P>(ctx, a));
  __syncthreads();
  return !ctx.failed;
}

template <typename T, typename P, typename Op>
__device__ __forceinline__ void gpuReducing(ExecCtx& ctx, const CollArgs& a, const Op& op) {
  if (!gpuStepsUsable<T, P>(ctx, a)) return;
  switch (a.func) {
    case kFuncAllReduce:
      if (a.algo == kAlgoTree) runTreeAllReduce<T, P>(ctx, a, op);
      else runRingAllReduce<T, P>(ctx, a, op);
      break;
    case kFuncReduce: runRingReduce<T, P>(ctx, a, op); break;
    case kFuncReduceScatter: runRingReduceScatter<T, P>(ctx, a, op); break;
    default: break;
  }
}

// AllReduce, Reduce and ReduceScatter on T with OpT, any protocol (chosen per launch).
template <typename T, template <typename> class OpT>
__global__ void __launch_bounds__(kGpuMaxThreads) gpuReduceKernel(const GpuCollLaunch l) {
  ExecCtx* ctx = gpuBlockCtx(l);
  const CollArgs a = gpuBlockArgs(l);
  const OpT<T> op = gpuOp<T, OpT>(l);
  switch (a.proto) {
    case kProtoLL: gpuReducing<T, ProtoLL>(*ctx, a, op); break;
    case kProtoLL128: gpuReducing<T, ProtoLL128>(*ctx, a, op); break;
    default: gpuReducing<T, ProtoSimple>(*ctx, a, op); break;
  }
  gpuReportFailure(*ctx, l.status);
}

// AllGather and Broadcast move bytes, whatever the datatype.
template <typename P>
__device__ __forceinline__ void gpuMoving(ExecCtx& ctx, const CollArgs& a) {
  const OpSum<uint8_t> none{};
  if (!gpuStepsUsable<uint8_t, P>(ctx, a)) return;
  if (a.func == kFuncAllGather) runRingAllGather<uint8_t, P>(ctx, a, none);
  else runRingBroadcast<uint8_t, P>(ctx, a, none);
}

// The kernel for one reducing (type, operator), the ring/tree one or the symmetric one
// (sym_kernels.cuh): instantiated in coll_kernels_*.cu.
template <typename T, template <typename> class OpT>
GpuKernelFn gpuKernelOf(bool sym) {
  return sym ? gpuSymReduceKernel<T, OpT> : gpuReduceKernel<T, OpT>;
}
template <typename T>
GpuKernelFn gpuReduceKernelFor(int opKind, bool sym) {
  switch (opKind) {
    case kOpSum: return gpuKernelOf<T, OpSum>(sym);
    case kOpProd: return gpuKernelOf<T, OpProd>(sym);
    case kOpMax: return gpuKernelOf<T, OpMax>(sym);
    case kOpMin: return gpuKernelOf<T, OpMin>(sym);
    case kOpPreMulSum: return gpuKernelOf<T, OpPreMulSum>(sym);
    case kOpSumPostDiv: return gpuKernelOf<T, OpSumPostDiv>(sym);
    default: return nullptr;
  }
}

// Per instantiation file: the kernel for (ncclDataType_t, RedOpKind), or nullptr if not its types.
GpuKernelFn gpuKernelsInt(int dtype, int opKind, bool sym);
GpuKernelFn gpuKernelsFloat(int dtype, int opKind, bool sym);
GpuKernelFn gpuKernelsLowp(int dtype, int opKind, bool sym);

}  // namespace baton

// The CUDA backend's collective kernels: one block per channel, each running the same ring or tree
// body the CPU workers run (algorithms/ring_*.h, tree_allreduce.h) with all of the block's threads.
//
// Computes: block c is channel c's share of one collective (AllReduce, Reduce, ReduceScatter on
// elements of T with operator OpT; AllGather and Broadcast on bytes), through the connectors the
// GPU communicator keeps in device memory (GpuChannelDev): the ring's, or for AllReduce the tree's
// when the launch says Tree. Introduced by the CUDA backend (README's feature table); the bodies
// are lessons 02-04's and 07's.
// Memory-ordering contract: the protocols' files state it (primitives_simple.h, primitives_ll.h,
// primitives_ll128.h); cuda::atomic_ref at system scope gives their release/acquire pairs, and the
// Simple protocol's block barrier before thread 0's release store makes every thread's payload
// stores part of what the tail releases. A block that gave up publishes its failure into pinned
// host memory: the failure record first, a system fence, then `failed`.
#pragma once

#include <cuda_runtime.h>

#include <type_traits>

#include "cuda_backend.h"
#include "reduce_ops.h"
#include "ring_allgather.h"
#include "ring_allreduce.h"
#include "ring_broadcast.h"
#include "ring_reduce.h"
#include "ring_reduce_scatter.h"
#include "tree_allreduce.h"

namespace baton {

using GpuKernelFn = void (*)(GpuCollLaunch);

// The block's ExecCtx in shared memory (its default member initialisers rule out a __shared__ object).
__device__ __forceinline__ ExecCtx* gpuBlockCtx(const GpuCollLaunch& l) {
  __shared__ alignas(ExecCtx) unsigned char storage[sizeof(ExecCtx)];
  ExecCtx* ctx = reinterpret_cast<ExecCtx*>(storage);
  if (threadIdx.x == 0) {
    memcpy(storage, &l.ctx, sizeof(ExecCtx));
    ctx->channel = blockIdx.x;
    // This launch's credit window on every connector it sends on (a communicator's kernels run
    // one at a time, in order).
    GpuChannelDev& ch = l.channels[blockIdx.x];
    ch.send.depth = l.depth;
    if (l.base.algo == kAlgoTree) {
      if (ch.tree.upSend) ch.tree.upSend->depth = l.depth;
      for (int d = 0; d < ch.tree.nDown; ++d) ch.tree.downSend[d]->depth = l.depth;
    }
  }
  __syncthreads();
  return ctx;
}

// This block's arguments: the shared ones plus its channel's ring.
__device__ __forceinline__ CollArgs gpuBlockArgs(const GpuCollLaunch& l) {
  CollArgs a = l.base;
  GpuChannelDev& ch = l.channels[blockIdx.x];
  a.channel = blockIdx.x;
  a.ring.index = ch.ringIndex;
  a.ring.userRanks = ch.userRanks;
  a.ring.send = &ch.send;
  a.ring.recv = &ch.recv;
  a.tree = ch.tree;
  return a;
}

__device__ __forceinline__ void gpuReportFailure(const ExecCtx& ctx, GpuStatus* st) {
  if (threadIdx.x != 0 || !ctx.failed || !st) return;
  if (atomicCAS(&st->claimed, 0, 1) != 0) return;  // the first failing block tells
  st->failure = ctx.failure;
  st->failure.what = nullptr;  // a device string: the host cannot read it
  __threadfence_system();
  *static_cast<volatile int*>(&st->failed) = 1;
}

template <typename T, template <typename> class OpT>
__device__ __forceinline__ OpT<T> gpuOp(const GpuCollLaunch& l) {
  using C = typename TypeTraits<T>::Compute;
  if constexpr (std::is_same_v<OpT<T>, OpPreMulSum<T>>) {
    T v;
    memcpy(&v, l.scalarPtr ? l.scalarPtr : l.scalar, sizeof(T));
    return OpPreMulSum<T>{TypeTraits<T>::load(v)};
  } else if constexpr (std::is_same_v<OpT<T>, OpSumPostDiv<T>>) {
    return OpSumPostDiv<T>{static_cast<C>(l.divisor)};
  } else {
    return OpT<T>{};
  }
}

template <typename T, typename P, typename Op>
__device__ __forceinline__ void gpuReducing(ExecCtx& ctx, const CollArgs& a, const Op& op) {
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
  if (a.func == kFuncAllGather) runRingAllGather<uint8_t, P>(ctx, a, none);
  else runRingBroadcast<uint8_t, P>(ctx, a, none);
}

// The kernel for one reducing (type, operator): instantiated in gpu_kernels_*.cu.
template <typename T>
GpuKernelFn gpuReduceKernelFor(int opKind) {
  switch (opKind) {
    case kOpSum: return gpuReduceKernel<T, OpSum>;
    case kOpProd: return gpuReduceKernel<T, OpProd>;
    case kOpMax: return gpuReduceKernel<T, OpMax>;
    case kOpMin: return gpuReduceKernel<T, OpMin>;
    case kOpPreMulSum: return gpuReduceKernel<T, OpPreMulSum>;
    case kOpSumPostDiv: return gpuReduceKernel<T, OpSumPostDiv>;
    default: return nullptr;
  }
}

// Per instantiation file: the kernel for (ncclDataType_t, RedOpKind), or nullptr if not its types.
GpuKernelFn gpuKernelsInt(int dtype, int opKind);
GpuKernelFn gpuKernelsFloat(int dtype, int opKind);
GpuKernelFn gpuKernelsLowp(int dtype, int opKind);

}  // namespace baton

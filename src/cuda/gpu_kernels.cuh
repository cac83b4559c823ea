// The CUDA backend's collective kernels: one block per channel, each running the same ring or tree
// body the CPU workers run (algorithms/ring_*.h, tree_allreduce.h) with all of the block's threads.
//
// Computes: block c is channel c's share of one collective (AllReduce, Reduce, ReduceScatter on
// elements of T with operator OpT; AllGather and Broadcast on bytes), through the connectors the
// GPU communicator keeps in device memory (GpuChannelDev): the ring's, or for AllReduce the tree's
// when the launch says Tree; or a small AllReduce read straight from the peers' windows of device
// memory (the one-shot symmetric kernel, algorithms/symmetric.h's contract). Introduced by the CUDA
// backend (README's feature table); the bodies are lessons 02-04's, 07's and 09's.
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
#include "symmetric.h"
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

// One-shot AllReduce on windows of device memory [AGxLD], symmetric.h's runSymAllReduceOneShot with
// each thread folding its own elements (the CPU's version stages tiles a single thread owns). Every
// rank folds every rank's input in rank order, as the CPU does, so every rank gets the same bits.
// The arrive barrier says every peer's input is ready; the block barrier before the depart makes
// every thread's loads and stores part of what thread 0's depart releases. In place, the result
// waits in this rank's pad until the depart barrier says no peer reads our input any more.
template <typename T, template <typename> class OpT>
__global__ void __launch_bounds__(kGpuMaxThreads) gpuSymAllReduceKernel(const GpuCollLaunch l) {
  ExecCtx* ctx = gpuBlockCtx(l);
  CollArgs a = l.base;
  a.channel = blockIdx.x;
  a.sym.pads = l.symPads;
  a.sym.epoch = l.symEpoch;
  const OpT<T> op = gpuOp<T, OpT>(l);
  __shared__ const T* ins[kMaxSymRanks];
  for (int r = threadIdx.x; r < a.nRanks; r += blockDim.x)
    ins[r] = reinterpret_cast<const T*>(l.symSendBases[r] + l.symSendOffset);
  __syncthreads();
  size_t lo, n;
  symRange<T>(a, a.count, &lo, &n);
  T* dst = static_cast<T*>(a.recvbuff) + lo;
  const char* sb = static_cast<const char*>(a.sendbuff);
  const char* rb = static_cast<const char*>(a.recvbuff);
  const size_t bytes = a.count * sizeof(T);
  const bool inPlace = sb < rb + bytes && rb < sb + bytes;
  T* out = inPlace ? reinterpret_cast<T*>(l.symPads[a.rank]->scratch) + lo : dst;
  const int last = a.nRanks - 1;  // nRanks >= 2 (one rank copies, gpu_launch.cc)
  if (symBarrier(*ctx, a, false)) {
    for (size_t i = lo + threadIdx.x; i < lo + n; i += blockDim.x) {
      T v = reduceElem<T, OpT<T>, Moves{.src = true, .preSrc = true}>(op, T{}, ins[0][i]);
      for (int r = 1; r < last; ++r) v = reduceElem<T, OpT<T>, Moves{.recv = true, .src = true, .preSrc = true}>(op, v, ins[r][i]);
      out[i - lo] = reduceElem<T, OpT<T>, Moves{.recv = true, .src = true, .preSrc = true, .post = true}>(op, v, ins[last][i]);
    }
    __syncthreads();
    if (symBarrier(*ctx, a, true) && inPlace)
      for (size_t i = threadIdx.x; i < n; i += blockDim.x) dst[i] = out[i];
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

// The kernel for one reducing (type, operator), the ring/tree one or the symmetric one:
// instantiated in gpu_kernels_*.cu.
template <typename T, template <typename> class OpT>
GpuKernelFn gpuKernelOf(bool sym) {
  return sym ? gpuSymAllReduceKernel<T, OpT> : gpuReduceKernel<T, OpT>;
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

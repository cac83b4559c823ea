// What every kernel block of the CUDA backend starts with: its ExecCtx in shared memory, its
// channel's arguments, its operator's state, and how a block that gave up says so.
//
// Computes nothing of a collective itself (coll_kernels.cuh and sym_kernels.cuh do). Introduced
// by the CUDA backend (README's feature table). Memory-ordering contract: a failing block writes the
// failure record into pinned host memory, then a system fence, then `failed`; the host reads
// `failed` first.
#pragma once

#include <cuda_runtime.h>

#include <type_traits>

#include "plugin_table.h"
#include "reduce_ops.h"

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
    // one at a time, in order). The symmetric kernels use no connector.
    GpuChannelDev& ch = l.channels[blockIdx.x];
    if (!isSymmetric(l.base.algo)) ch.send.depth = l.depth;
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

}  // namespace baton

// What every kernel block of the CUDA backend starts and ends with: its ExecCtx in shared memory,
// its channel's arguments (a ring and tree, or for a symmetric kernel every rank's window pointers
// and this channel's epoch), and how a block that gave up says so.
//
// Computes nothing of a collective itself: coll_kernels.cuh runs the bodies through
// algorithms/coll_dispatch.h. Introduced by the CUDA backend (docs/cuda-backend.md); the symmetric
// kernels' arguments in lesson 09 ("On a GPU").
// Memory-ordering contract: a failing block writes the failure record into pinned host memory,
// then a system fence, then `failed`; the host reads `failed` first. A symmetric kernel's epoch is
// one more than this channel's count in our own pad (device memory, so a CUDA graph's replays
// count too), stored after a block barrier once every thread has read it; the next kernel of the
// communicator starts after this one finishes, so it reads the new count.
#pragma once

#include <cuda_runtime.h>

#include "plugin_table.h"
#include "reduce_ops.h"
#include "symmetric.h"

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

// This block's arguments. A ring or tree kernel: the shared ones plus its channel's ring and tree.
// A symmetric kernel: every rank's buffers as this device reaches them (window base + offset, in
// shared memory), the pads, and the epoch.
__device__ __forceinline__ CollArgs gpuBlockArgs(const GpuCollLaunch& l) {
  CollArgs a = l.base;
  a.channel = blockIdx.x;
  if (isSymmetric(a.algo)) {
    __shared__ const void* sends[kMaxSymRanks];
    __shared__ void* recvs[kMaxSymRanks];
    for (int r = threadIdx.x; r < a.nRanks; r += blockDim.x) {
      sends[r] = l.symSendBases ? l.symSendBases[r] + l.symSendOffset : nullptr;
      recvs[r] = l.symRecvBases[r] + l.symRecvOffset;
    }
    a.sym.peerSend = sends;
    a.sym.peerRecv = recvs;
    a.sym.pads = l.symPads;
    a.sym.epoch = l.symPads[a.rank]->kernelEpochs[blockIdx.x] + 1;
    __syncthreads();
    return a;
  }
  GpuChannelDev& ch = l.channels[blockIdx.x];
  a.ring.index = ch.ringIndex;
  a.ring.userRanks = ch.userRanks;
  a.ring.send = &ch.send;
  a.ring.recv = &ch.recv;
  a.tree = ch.tree;
  return a;
}

// A symmetric kernel counts itself on the block's channel, whether or not it succeeded, so every
// launch advances the count exactly once, as on every peer.
__device__ __forceinline__ void gpuSymDone(const GpuCollLaunch& l, const CollArgs& a) {
  __syncthreads();
  if (threadIdx.x == 0) l.symPads[a.rank]->kernelEpochs[blockIdx.x] = a.sym.epoch;
}

__device__ __forceinline__ void gpuReportFailure(const ExecCtx& ctx, GpuStatus* st) {
  if (threadIdx.x != 0 || !ctx.failed || !st) return;
  if (atomicCAS(&st->claimed, 0, 1) != 0) return;  // the first failing block tells
  st->failure = ctx.failure;
  st->failure.what = nullptr;  // a device string: the host cannot read it
  __threadfence_system();
  *static_cast<volatile int*>(&st->failed) = 1;
}

}  // namespace baton

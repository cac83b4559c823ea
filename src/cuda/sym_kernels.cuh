// The symmetric kernels on windows of device memory: every rank loads from and stores into its
// peers' windows directly, through the mappings registration made (NCCL 2.27+'s symmetric kernels;
// NCCL's names in brackets).
//
// Computes, for one channel's contiguous part (one block per channel), as algorithms/symmetric.h
// does on the CPU:
//   - AllReduce one-shot [AGxLD]: every rank folds every rank's input into its own output.
//   - AllReduce two-shot [RSxLD_AGxST]: rank j folds piece j of the part from every rank's input
//     and stores the result into every rank's output.
//   - ReduceScatter [LD]: every rank folds its own block from every rank's input.
//   - AllGather [ST]: every rank stores its input into every rank's output (bytes: its kernel is
//     coll_launch.cu's, with the byte kernels).
// Each thread folds whole elements, 16-byte vectors of them when every pointer allows, in rank
// order, as the CPU does, so every rank gets the same bits. (The CPU's fold stages tiles in a
// per-thread accumulator, which on a GPU would be a per-thread array in local memory.)
// Introduced in lesson 09 (docs/lessons/09-buffer-registration.md, "On a GPU").
//
// Memory-ordering contract: symmetric.h's two barriers in the ranks' pads, at an epoch each rank
// counts in its own pad per channel (kernelEpochs: device memory, so a CUDA graph's replays count
// too). The arrive barrier's
// acquire says every peer has entered the operation (its input is ready, its output no longer
// read); the block barrier (__syncthreads) before the depart makes every thread's loads and
// stores part of what thread 0's system-scope release publishes; the depart's acquire says no peer
// loads our input or stores into our output any more.
#pragma once

#include "block.cuh"
#include "symmetric.h"

namespace baton {

// outs[o][i] = post(fold over ranks r in order of pre(ins[r][inOff + i])), i in [0, n), by every
// thread of the block: 16-byte vectors where every input and output is 16-byte aligned there,
// elements for the rest.
template <typename T, typename Op>
__device__ __forceinline__ void gpuSymFold(const Op& op, const T* const* ins, int nRanks, size_t inOff,
                                           T* const* outs, int nOut, size_t n) {
  constexpr Moves kFirst{.src = true, .preSrc = true};
  constexpr Moves kNext{.recv = true, .src = true, .preSrc = true};
  constexpr Moves kLast{.recv = true, .src = true, .preSrc = true, .post = true};
  constexpr size_t V = 16 / sizeof(T);
  const int last = nRanks - 1;  // nRanks >= 2 (symmetric_plan.cc refuses fewer)
  uintptr_t addrs = 0;
  for (int r = 0; r < nRanks; ++r) addrs |= reinterpret_cast<uintptr_t>(ins[r] + inOff);
  for (int o = 0; o < nOut; ++o) addrs |= reinterpret_cast<uintptr_t>(outs[o]);
  const size_t nv = (addrs & 15) == 0 ? n / V : 0;
  for (size_t v = threadIdx.x; v < nv; v += blockDim.x) {
    uint4 acc4 = reinterpret_cast<const uint4*>(ins[0] + inOff)[v];
    T* acc = reinterpret_cast<T*>(&acc4);
#pragma unroll
    for (size_t e = 0; e < V; ++e) acc[e] = reduceElem<T, Op, kFirst>(op, T{}, acc[e]);
    for (int r = 1; r <= last; ++r) {
      const uint4 b4 = reinterpret_cast<const uint4*>(ins[r] + inOff)[v];
      const T* b = reinterpret_cast<const T*>(&b4);
      if (r < last) {
#pragma unroll
        for (size_t e = 0; e < V; ++e) acc[e] = reduceElem<T, Op, kNext>(op, acc[e], b[e]);
      } else {
#pragma unroll
        for (size_t e = 0; e < V; ++e) acc[e] = reduceElem<T, Op, kLast>(op, acc[e], b[e]);
      }
    }
    for (int o = 0; o < nOut; ++o) reinterpret_cast<uint4*>(outs[o])[v] = acc4;
  }
  for (size_t i = nv * V + threadIdx.x; i < n; i += blockDim.x) {
    T acc = reduceElem<T, Op, kFirst>(op, T{}, ins[0][inOff + i]);
    for (int r = 1; r < last; ++r) acc = reduceElem<T, Op, kNext>(op, acc, ins[r][inOff + i]);
    acc = reduceElem<T, Op, kLast>(op, acc, ins[last][inOff + i]);
    for (int o = 0; o < nOut; ++o) outs[o][i] = acc;
  }
}

// This block's arguments for a symmetric kernel: no ring, the pads, and the epoch: one more than
// this channel's kernels so far, counted in our own pad (the same on every rank, since every rank
// runs the communicator's symmetric kernels in the same order, each on the same channels).
__device__ __forceinline__ CollArgs gpuSymArgs(const GpuCollLaunch& l) {
  CollArgs a = l.base;
  a.channel = blockIdx.x;
  a.sym.pads = l.symPads;
  a.sym.epoch = l.symPads[a.rank]->kernelEpochs[blockIdx.x] + 1;
  return a;
}

// Counts this kernel on the block's channel, once every thread has read the count (gpuSymArgs),
// whether or not it succeeded, so every launch advances it exactly once, as on every peer. The
// next kernel of the communicator starts after this one has finished, so it reads the new count.
__device__ __forceinline__ void gpuSymDone(const GpuCollLaunch& l, const CollArgs& a) {
  __syncthreads();
  if (threadIdx.x == 0) l.symPads[a.rank]->kernelEpochs[blockIdx.x] = a.sym.epoch;
}

// Every rank's buffer at `offset` in its window, as this device reaches it, into `out` (shared).
template <typename P>
__device__ __forceinline__ void gpuSymPointers(char* const* bases, size_t offset, int nRanks, P** out) {
  for (int r = threadIdx.x; r < nRanks; r += blockDim.x) out[r] = reinterpret_cast<P*>(bases[r] + offset);
  __syncthreads();
}

// AllReduce (one-shot or two-shot, as base.algo says) and ReduceScatter [LD] on T with OpT.
template <typename T, template <typename> class OpT>
__global__ void __launch_bounds__(kGpuMaxThreads) gpuSymReduceKernel(const GpuCollLaunch l) {
  ExecCtx* ctx = gpuBlockCtx(l);
  const CollArgs a = gpuSymArgs(l);
  const OpT<T> op = gpuOp<T, OpT>(l);
  __shared__ const T* ins[kMaxSymRanks];
  __shared__ T* outs[kMaxSymRanks];
  gpuSymPointers(l.symSendBases, l.symSendOffset, a.nRanks, ins);
  size_t lo, n;
  symRange<T>(a, a.count, &lo, &n);
  T* dst = static_cast<T*>(a.recvbuff) + lo;
  if (a.algo == kAlgoSymOneShot) {
    const char* sb = static_cast<const char*>(a.sendbuff);
    const char* rb = static_cast<const char*>(a.recvbuff);
    const size_t bytes = a.count * sizeof(T);
    // Our output overlaps our input, which peers read: the result waits in our pad's scratch.
    const bool inPlace = sb < rb + bytes && rb < sb + bytes;
    T* out = inPlace ? reinterpret_cast<T*>(l.symPads[a.rank]->scratch) + lo : dst;
    if (symBarrier(*ctx, a, false)) {
      gpuSymFold<T>(op, ins, a.nRanks, lo, &out, 1, n);
      __syncthreads();
      if (symBarrier(*ctx, a, true) && inPlace)
        for (size_t i = threadIdx.x; i < n; i += blockDim.x) dst[i] = out[i];
    }
  } else if (a.algo == kAlgoSymTwoShot) {
    // My piece of the part, stored into every rank's output, ours first. In place is safe: only
    // this rank loads or stores the piece's elements, each thread loading before it stores.
    size_t off, cnt;
    channelRange(n, a.rank, a.nRanks, 16 / sizeof(T) ? 16 / sizeof(T) : 1, &off, &cnt);
    for (int i = threadIdx.x; i < a.nRanks; i += blockDim.x) {
      const int r = (a.rank + i) % a.nRanks;
      outs[i] = reinterpret_cast<T*>(l.symRecvBases[r] + l.symRecvOffset) + lo + off;
    }
    __syncthreads();
    if (symBarrier(*ctx, a, false)) {
      gpuSymFold<T>(op, ins, a.nRanks, lo + off, outs, a.nRanks, cnt);
      __syncthreads();
      symBarrier(*ctx, a, true);
    }
  } else {  // kAlgoSymLoad: ReduceScatter, count is each rank's block
    if (symBarrier(*ctx, a, false)) {
      gpuSymFold<T>(op, ins, a.nRanks, (size_t)a.rank * a.count + lo, &dst, 1, n);
      __syncthreads();
      symBarrier(*ctx, a, true);
    }
  }
  gpuSymDone(l, a);
  gpuReportFailure(*ctx, l.status);
}

}  // namespace baton

// Compiles the device-portable algorithms and the device-side API as CUDA kernels, so nvcc keeps
// the design honest.
//
// Computes: one kernel per (algorithm, protocol, type, operator) sample, each running the same body the CPU
// workers run, with the block's ExecCtx in shared memory. Built by `make` when nvcc is present
// (build/obj/algorithms_device.o, sm_90); not launched anywhere yet (no GPU runtime code in baton).
// Memory-ordering contract: as primitives_simple.h, primitives_ll.h, primitives_ll128.h and
// sendrecv_progress.h; cuda::atomic_ref at system scope gives the release/acquire pairs.
#include "alltoall.h"
#include "alltoall_window.h"
#include "baton/device.h"
#include "block_formats.h"
#include "coll_dispatch.h"
#include "fp8_blocks.h"
#include "sendrecv_progress.h"

namespace baton {

// ExecCtx has default member initialisers, which __shared__ variables may not: use raw storage.
__device__ ExecCtx* blockCtx(const ExecCtx& init) {
  __shared__ alignas(ExecCtx) unsigned char storage[sizeof(ExecCtx)];
  ExecCtx* ctx = reinterpret_cast<ExecCtx*>(storage);
  if (threadIdx.x == 0) memcpy(storage, &init, sizeof(ExecCtx));
  __syncthreads();
  return ctx;
}

// One channel's part of a collective, through the same dispatch the CPU workers use: the ring,
// tree and direct bodies per protocol, and (runReducing, runMoving) everything with every body a
// CPU kernel holds, naive, one-shot and symmetric included.
template <typename T, typename P, template <typename> class OpT>
__global__ void reducingCollKernel(CollArgs args, OpT<T> op, ExecCtx init) {
  runReducingColl<T, P>(*blockCtx(init), args, op);
}
template <typename P>
__global__ void movingCollKernel(CollArgs args, ExecCtx init) {
  runMovingColl<P>(*blockCtx(init), args);
}
template <typename T, template <typename> class OpT>
__global__ void reducingKernel(CollArgs args, OpT<T> op, ExecCtx init) {
  runReducing<T>(*blockCtx(init), args, op);
}
__global__ void movingKernel(CollArgs args, ExecCtx init) { runMoving(*blockCtx(init), args); }
__global__ void sendRecvKernel(SendRecvTransfer* send, SendRecvTransfer* recv, ExecCtx init) {
  ExecCtx* ctx = blockCtx(init);
  while (!send->complete() || !recv->complete()) {
    sendRecvTrySend(*ctx, *send);
    sendRecvTryRecv(*ctx, *recv);
    if (ctx->failed) break;
  }
}

// Bruck's AlltoAll round k (algorithms/alltoall.h): pack the travelling slots, then move them.
__global__ void bruckRoundKernel(char* packed, const char* const* slotData, const size_t* slotBytes, int n, int k,
                                 SendRecvTransfer* send, SendRecvTransfer* recv, ExecCtx init) {
  ExecCtx* ctx = blockCtx(init);
  bruckPack(*ctx, packed, slotData, slotBytes, n, k);
  __syncthreads();
  while (!send->complete() || !recv->complete()) {
    sendRecvTrySend(*ctx, *send);
    sendRecvTryRecv(*ctx, *recv);
    if (ctx->failed) return;
  }
}

// AlltoAll by stores into the peers' windows (algorithms/alltoall_window.h): one block.
__global__ void alltoallWindowKernel(AlltoAllWindowArgs args, AlltoAllWindowFault* fault, ExecCtx init) {
  runAlltoAllWindow(*blockCtx(init), args, fault);
}

// FP8 dispatch's quantizer (algorithms/fp8_blocks.h, lesson 12): one token per thread.
__global__ void fp8QuantizeKernel(const bfloat16_t* tokens, size_t numTokens, size_t hidden, uint8_t* q,
                                  float* scales) {
  const size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (t < numTokens) fp8QuantizeToken(tokens + t * hidden, hidden, q + t * hidden, scales + t * (hidden / kFp8Block));
}

// The wire formats' codecs (algorithms/block_formats.h, lesson 15): one segment per thread, each
// format and rounding, bfloat16 in and float out.
__global__ void wireCodecKernel(WireFormat f, const bfloat16_t* x, size_t segElems, size_t segs, uint8_t* wire,
                                float* back, uint64_t seed) {
  const size_t s = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (s >= segs) return;
  uint8_t* seg = wire + s * wireSegmentBytes(f, segElems);
  quantizeSegment(f, x + s * segElems, segElems, seg, WireRounding{seed != 0, seed, s * segElems});
  dequantizeSegment(f, seg, segElems, back + s * segElems);
  dequantizeAdd(f, seg, segElems, back + s * segElems);
}

// Every protocol, and a sample of the (type, operator) pairs; each instance compiles the ring, tree
// and direct bodies of its collective, and reducingKernel the rest (naive, one-shot, symmetric).
template __global__ void reducingCollKernel<float, ProtoSimple, OpSum>(CollArgs, OpSum<float>, ExecCtx);
template __global__ void reducingCollKernel<float, ProtoLL, OpSum>(CollArgs, OpSum<float>, ExecCtx);
template __global__ void reducingCollKernel<float, ProtoLL128, OpSum>(CollArgs, OpSum<float>, ExecCtx);
template __global__ void reducingCollKernel<half_t, ProtoLL, OpSumPostDiv>(CollArgs, OpSumPostDiv<half_t>, ExecCtx);
template __global__ void reducingCollKernel<bfloat16_t, ProtoLL128, OpMax>(CollArgs, OpMax<bfloat16_t>, ExecCtx);
template __global__ void reducingCollKernel<fp8e4m3_t, ProtoSimple, OpPreMulSum>(CollArgs, OpPreMulSum<fp8e4m3_t>,
                                                                                 ExecCtx);
template __global__ void reducingCollKernel<int64_t, ProtoLL, OpProd>(CollArgs, OpProd<int64_t>, ExecCtx);
template __global__ void reducingCollKernel<double, ProtoLL128, OpMin>(CollArgs, OpMin<double>, ExecCtx);
template __global__ void reducingCollKernel<int8_t, ProtoSimple, OpSum>(CollArgs, OpSum<int8_t>, ExecCtx);
template __global__ void movingCollKernel<ProtoSimple>(CollArgs, ExecCtx);
template __global__ void movingCollKernel<ProtoLL>(CollArgs, ExecCtx);
template __global__ void movingCollKernel<ProtoLL128>(CollArgs, ExecCtx);
template __global__ void reducingKernel<float, OpSum>(CollArgs, OpSum<float>, ExecCtx);

// The device-side API (include/baton/device.h, lesson 11): a store into every LSA peer's window, a
// signal to each, the wait for theirs, a barrier; as a user's fused kernel would call it.
__global__ void deviceApiKernel(batonDevComm comm, batonDevWindow win, uint64_t round) {
  if (threadIdx.x == 0) {
    for (int p = 0; p < comm.lsaSize; ++p) {
      *static_cast<uint64_t*>(batonLsaPointer(win, comm.lsaRank * sizeof(uint64_t), p)) = round;
      batonSignalAdd(comm, p, 0, 1);
    }
    // A put-with-signal to the next LSA peer (peers of other hosts need the host: false here).
    const uint64_t v = round;
    batonPutSignal(comm, win, comm.lsaWorldRank[(comm.lsaRank + 1) % comm.lsaSize], 64, &v, sizeof v, 0);
    if (batonWaitSignal(comm, 0, (round + 1) * (comm.lsaSize + 1))) batonLsaBarrier(comm, 0);
  }
  __syncthreads();
}

}  // namespace baton

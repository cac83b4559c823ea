// Compiles the device-portable algorithms as CUDA kernels, so nvcc keeps the design honest.
//
// Computes: one kernel per (algorithm, protocol, type, operator) sample, each running the same body the CPU
// workers run, with the block's ExecCtx in shared memory. Built by `make` when nvcc is present
// (build/obj/algorithms_device.o, sm_90); not launched anywhere yet (no GPU runtime code in baton).
// Memory-ordering contract: as primitives_simple.h, primitives_ll.h, primitives_ll128.h and
// p2p_progress.h; cuda::atomic_ref at system scope gives the release/acquire pairs.
#include "naive_allreduce.h"
#include "p2p_progress.h"
#include "ring_allgather.h"
#include "ring_allreduce.h"
#include "ring_broadcast.h"
#include "ring_reduce.h"
#include "ring_reduce_scatter.h"
#include "tree_allreduce.h"

namespace baton {

// ExecCtx has default member initialisers, which __shared__ variables may not: use raw storage.
__device__ ExecCtx* blockCtx(const ExecCtx& init) {
  __shared__ alignas(ExecCtx) unsigned char storage[sizeof(ExecCtx)];
  ExecCtx* ctx = reinterpret_cast<ExecCtx*>(storage);
  if (threadIdx.x == 0) memcpy(storage, &init, sizeof(ExecCtx));
  __syncthreads();
  return ctx;
}

template <typename T, typename P, template <typename> class OpT>
__global__ void ringAllReduceKernel(CollArgs args, OpT<T> op, ExecCtx init) {
  runRingAllReduce<T, P>(*blockCtx(init), args, op);
}
template <typename T, typename P, template <typename> class OpT>
__global__ void ringReduceScatterKernel(CollArgs args, OpT<T> op, ExecCtx init) {
  runRingReduceScatter<T, P>(*blockCtx(init), args, op);
}
template <typename T, typename P, template <typename> class OpT>
__global__ void ringReduceKernel(CollArgs args, OpT<T> op, ExecCtx init) {
  runRingReduce<T, P>(*blockCtx(init), args, op);
}
template <typename T, typename P, template <typename> class OpT>
__global__ void treeAllReduceKernel(CollArgs args, OpT<T> op, ExecCtx init) {
  runTreeAllReduce<T, P>(*blockCtx(init), args, op);
}
template <typename T, template <typename> class OpT>
__global__ void naiveAllReduceKernel(CollArgs args, OpT<T> op, ExecCtx init) {
  runNaiveAllReduce<T>(*blockCtx(init), args, op);
}
template <typename P>
__global__ void copyKernels(CollArgs args, ExecCtx init) {
  ExecCtx* ctx = blockCtx(init);
  if (args.func == kFuncAllGather) runRingAllGather<uint8_t, P>(*ctx, args, OpSum<uint8_t>{});
  else runRingBroadcast<uint8_t, P>(*ctx, args, OpSum<uint8_t>{});
}
__global__ void p2pKernel(P2pTransfer* send, P2pTransfer* recv, ExecCtx init) {
  ExecCtx* ctx = blockCtx(init);
  while (!send->complete() || !recv->complete()) {
    p2pTrySend(*ctx, *send);
    p2pTryRecv(*ctx, *recv);
    if (ctx->failed) break;
  }
}

template __global__ void ringAllReduceKernel<float, ProtoSimple, OpSum>(CollArgs, OpSum<float>, ExecCtx);
template __global__ void ringAllReduceKernel<float, ProtoLL, OpSum>(CollArgs, OpSum<float>, ExecCtx);
template __global__ void ringAllReduceKernel<float, ProtoLL128, OpSum>(CollArgs, OpSum<float>, ExecCtx);
template __global__ void ringAllReduceKernel<half_t, ProtoLL, OpSumPostDiv>(CollArgs, OpSumPostDiv<half_t>, ExecCtx);
template __global__ void ringAllReduceKernel<bfloat16_t, ProtoLL128, OpMax>(CollArgs, OpMax<bfloat16_t>, ExecCtx);
template __global__ void ringAllReduceKernel<fp8e4m3_t, ProtoSimple, OpPreMulSum>(CollArgs, OpPreMulSum<fp8e4m3_t>, ExecCtx);
template __global__ void ringAllReduceKernel<int64_t, ProtoLL, OpProd>(CollArgs, OpProd<int64_t>, ExecCtx);
template __global__ void ringReduceScatterKernel<double, ProtoLL128, OpMin>(CollArgs, OpMin<double>, ExecCtx);
template __global__ void ringReduceKernel<int8_t, ProtoSimple, OpSum>(CollArgs, OpSum<int8_t>, ExecCtx);
template __global__ void copyKernels<ProtoSimple>(CollArgs, ExecCtx);
template __global__ void copyKernels<ProtoLL>(CollArgs, ExecCtx);
template __global__ void copyKernels<ProtoLL128>(CollArgs, ExecCtx);
template __global__ void treeAllReduceKernel<float, ProtoSimple, OpSum>(CollArgs, OpSum<float>, ExecCtx);
template __global__ void treeAllReduceKernel<half_t, ProtoLL, OpSumPostDiv>(CollArgs, OpSumPostDiv<half_t>, ExecCtx);
template __global__ void treeAllReduceKernel<bfloat16_t, ProtoLL128, OpMax>(CollArgs, OpMax<bfloat16_t>, ExecCtx);
template __global__ void naiveAllReduceKernel<float, OpSum>(CollArgs, OpSum<float>, ExecCtx);

}  // namespace baton

// The CUDA backend's collective kernels: one block per channel, each running the body the CPU
// workers run, through the same dispatch (algorithms/coll_dispatch.h, with GpuPaths: the bodies a
// GPU plan can choose, symmetric folds one 16-byte vector per thread).
//
// Computes: block c is channel c's share of one collective: AllReduce, Reduce and ReduceScatter on
// elements of T with operator OpT, or AllGather and Broadcast (and AlltoAll by stores) on bytes;
// through the connectors the GPU communicator keeps in device memory (GpuChannelDev), the ring's
// or for a Tree AllReduce the tree's, or between windows of device memory by loads and stores
// (the symmetric bodies, algorithms/symmetric.h). Introduced by the CUDA backend
// (docs/cuda-backend.md); the bodies are lessons 02-04's, 07's and 09's.
// Memory-ordering contract: the protocols' files state it (primitives_simple.h, primitives_ll.h,
// primitives_ll128.h) and symmetric.h its barriers; cuda::atomic_ref at system scope gives their
// release/acquire pairs, and the Simple protocol's block barrier before thread 0's release store
// makes every thread's payload stores part of what the tail releases. block.cuh states how a
// failure is published and how a symmetric kernel counts its epoch.
#pragma once

#include "block.cuh"
#include "coll_dispatch.h"

namespace baton {

// AllReduce, Reduce and ReduceScatter on T with OpT: any algorithm, any protocol (chosen per launch).
template <typename T, template <typename> class OpT>
__global__ void __launch_bounds__(kGpuMaxThreads) gpuReduceKernel(const GpuCollLaunch l) {
  ExecCtx* ctx = gpuBlockCtx(l);
  const CollArgs a = gpuBlockArgs(l);
  const OpT<T> op = makeOp<T, OpT>(l.op);
  runReducing<T, OpT<T>, GpuPaths>(*ctx, a, op);
  if (isSymmetric(a.algo)) gpuSymDone(l, a);
  gpuReportFailure(*ctx, l.status);
}

// The kernel for one reducing (type, operator): instantiated in coll_kernels_*.cu.
template <typename T>
GpuKernelFn gpuReduceKernelFor(int opKind) {
  return withOp(opKind, [](auto tag) -> GpuKernelFn { return gpuReduceKernel<T, decltype(tag)::template type>; });
}

// Per instantiation file: the kernel for (ncclDataType_t, RedOpKind), or nullptr if not its types.
GpuKernelFn gpuKernelsInt(int dtype, int opKind);
GpuKernelFn gpuKernelsFloat(int dtype, int opKind);
GpuKernelFn gpuKernelsLowp(int dtype, int opKind);

}  // namespace baton

// Launching one collective on the caller's stream: the kernel for its (collective, type, operator),
// one block per channel, the launch parameters passed by value as NCCL passes its work descriptor.
//
// Computes: the kernel that moves bytes (AllGather and Broadcast, any protocol; the stores of
// AllGather and AlltoAll between windows), and the run-time choice of the reducing ones
// (coll_kernels_*.cu).
// Memory-ordering contract: coll_kernels.cuh's (and the files it names).
#include "coll_kernels.cuh"
#include "nccl.h"

namespace baton {

// AllGather and Broadcast on bytes (any protocol), and the stores between windows of device memory:
// AllGather [ST], and ncclAlltoAll's blocks (gpu_alltoall.cc), whose launch says AllGather.
__global__ void __launch_bounds__(kGpuMaxThreads) gpuMoveKernel(const GpuCollLaunch l) {
  ExecCtx* ctx = gpuBlockCtx(l);
  const CollArgs a = gpuBlockArgs(l);
  runMoving<GpuPaths>(*ctx, a);
  if (isSymmetric(a.algo)) gpuSymDone(l, a);
  gpuReportFailure(*ctx, l.status);
}

void setLaunchError(cudaError_t e, const char* what);  // runtime.cu

int launchCollKernel(const GpuCollLaunch* l, void* stream) {
  GpuKernelFn fn = nullptr;
  if (countsBytes(l->base.func)) fn = gpuMoveKernel;
  if (!fn) fn = gpuKernelsInt(l->dtype, l->op.kind);
  if (!fn) fn = gpuKernelsFloat(l->dtype, l->op.kind);
  if (!fn) fn = gpuKernelsLowp(l->dtype, l->op.kind);
  if (!fn) {
    setLaunchError(cudaErrorInvalidDeviceFunction, "no kernel for this datatype and operator");
    return (int)cudaErrorInvalidDeviceFunction;
  }
  void* args[] = {const_cast<GpuCollLaunch*>(l)};
  const cudaError_t e = cudaLaunchKernel(reinterpret_cast<const void*>(fn), dim3(l->base.nChannels), dim3(l->threads),
                                         args, 0, static_cast<cudaStream_t>(stream));
  if (e != cudaSuccess) {
    char what[128];
    snprintf(what, sizeof what, "cudaLaunchKernel(%d blocks of %d threads, stream %p)", l->base.nChannels, l->threads,
             stream);
    setLaunchError(e, what);
    return (int)e;
  }
  return 0;
}

}  // namespace baton

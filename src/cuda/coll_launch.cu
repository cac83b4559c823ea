// Launching one collective on the caller's stream: the kernel for its (collective, type, operator),
// one block per channel, the launch parameters passed by value as NCCL passes its work descriptor.
//
// Computes: AllGather and Broadcast's kernel (bytes, any protocol), the store kernel of AllGather
// and AlltoAll between windows, and the run-time choice of the others' (coll_kernels_*.cu).
// Memory-ordering contract: coll_kernels.cuh and sym_kernels.cuh.
#include "coll_kernels.cuh"
#include "nccl.h"

namespace baton {

__global__ void __launch_bounds__(kGpuMaxThreads) gpuCopyKernel(const GpuCollLaunch l) {
  ExecCtx* ctx = gpuBlockCtx(l);
  const CollArgs a = gpuBlockArgs(l);
  switch (a.proto) {
    case kProtoLL: gpuMoving<ProtoLL>(*ctx, a); break;
    case kProtoLL128: gpuMoving<ProtoLL128>(*ctx, a); break;
    default: gpuMoving<ProtoSimple>(*ctx, a); break;
  }
  gpuReportFailure(*ctx, l.status);
}

// The store kernels between windows of device memory, bytes whatever the datatype (count is one
// block): AllGather [ST] stores this rank's input, and ncclAlltoAll (gpu_alltoall.cc) its block
// for peer r, at this rank's block of every rank r's output, peers first from the next rank on,
// between symmetric.h's arrive and depart barriers (sym_kernels.cuh states the contract).
__global__ void __launch_bounds__(kGpuMaxThreads) gpuSymStoreKernel(const GpuCollLaunch l) {
  ExecCtx* ctx = gpuBlockCtx(l);
  const CollArgs a = gpuSymArgs(l);
  const bool perPeer = a.algo == kAlgoSymAlltoAll;
  size_t lo, n;
  channelRange(a.count, a.channel, a.nChannels, 16, &lo, &n);
  const char* src = static_cast<const char*>(a.sendbuff) + lo;
  if (symBarrier(*ctx, a, false)) {
    for (int i = 1; i <= a.nRanks; ++i) {
      const int r = (a.rank + i) % a.nRanks;
      copyBytes(*ctx, l.symRecvBases[r] + l.symRecvOffset + (size_t)a.rank * a.count + lo,
                src + (perPeer ? (size_t)r * a.count : 0), n);
    }
    __syncthreads();
    symBarrier(*ctx, a, true);
  }
  gpuSymDone(l, a);
  gpuReportFailure(*ctx, l.status);
}

void setLaunchError(cudaError_t e, const char* what);  // runtime.cu

int launchCollKernel(const GpuCollLaunch* l, void* stream) {
  GpuKernelFn fn = nullptr;
  const bool sym = isSymmetric(l->base.algo);
  if (countsBytes(l->base.func)) fn = sym ? gpuSymStoreKernel : gpuCopyKernel;  // AlltoAll's launch says AllGather
  if (!fn) fn = gpuKernelsInt(l->dtype, l->opKind, sym);
  if (!fn) fn = gpuKernelsFloat(l->dtype, l->opKind, sym);
  if (!fn) fn = gpuKernelsLowp(l->dtype, l->opKind, sym);
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

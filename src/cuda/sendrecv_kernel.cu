// The CUDA backend's send/recv kernel: a group's device sends and receives for one communicator.
//
// Computes: block b moves transfers first[b] .. first[b + 1] - 1 of the launch's table
// (GpuP2pLaunch, cuda_backend.h) through the peers' FIFOs, round-robin, with the same steps the
// CPU backend's send/recv executor takes (algorithms/sendrecv_progress.h: sendRecvRunAll), every
// thread of the block copying. A connector's transfers all lie in one block, in the order they
// were issued. Introduced by the CUDA backend (docs/cuda-backend.md); the steps are lesson 03's.
// Memory-ordering contract: sendrecv_progress.h and connector.h: the sender's tail store (after
// the slot's payload and size; a block barrier first, so every thread's payload stores are part of
// what it releases) releases a slot, the receiver's head store gives it back; cuda::atomic_ref at
// system scope gives the release/acquire pairs between devices. Thread 0 reads the counters and
// the block follows its answer (sendRecvAgree); the transfers' progress, in the table in global
// memory (a stream-ordered allocation of this file's pool), is written by thread 0 and read by the
// block after a barrier. A failure is published
// as gpu_kernels.cuh does.
#include <cstdint>
#include <map>
#include <mutex>

#include "gpu_kernels.cuh"
#include "sendrecv_progress.h"

namespace baton {

__global__ void __launch_bounds__(kGpuMaxThreads) gpuSendRecvKernel(const GpuP2pLaunch l, char* table) {
  // ExecCtx has default member initialisers, which a __shared__ object may not: raw storage.
  __shared__ alignas(ExecCtx) unsigned char ctxStorage[sizeof(ExecCtx)];
  ExecCtx* ctx = reinterpret_cast<ExecCtx*>(ctxStorage);
  if (threadIdx.x == 0) {
    memcpy(ctxStorage, &l.ctx, sizeof(ExecCtx));
    ctx->channel = blockIdx.x;
  }
  __syncthreads();
  // As p2p_table.h's p2pTableView, which the CPU test of the table uses.
  const int32_t* first = reinterpret_cast<const int32_t*>(table);
  const int32_t* after = first + l.nBlocks + 1;
  SendRecvTransfer* xs = reinterpret_cast<SendRecvTransfer*>(table + l.xsOffset);
  const int b = first[blockIdx.x];
  sendRecvRunAll(*ctx, xs + b, after + b, first[blockIdx.x + 1] - b);
  gpuReportFailure(*ctx, l.status);
}

void setLaunchError(cudaError_t e, const char* what);  // backend_runtime.cu

// The tables' memory pool on `dev`, made once. Not the device's default pool: ranks that are
// threads of one process share a device's pools, and a pool that may reuse memory by making the
// allocating stream wait for another stream's pending free (cudaMemPoolReuseAllowInternalDependencies)
// could make one rank's kernel wait for another rank's, which waits for the first: so that is off,
// and freed tables stay mapped for the next launch (release threshold: never).
cudaError_t tablePool(int dev, cudaMemPool_t* out) {
  static std::mutex mu;
  static std::map<int, cudaMemPool_t> pools;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = pools.find(dev); it != pools.end()) return *out = it->second, cudaSuccess;
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = dev;
  cudaMemPool_t pool;
  cudaError_t e = cudaMemPoolCreate(&pool, &props);
  int no = 0;
  uint64_t keep = UINT64_MAX;
  if (e == cudaSuccess) e = cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowInternalDependencies, &no);
  if (e == cudaSuccess) e = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
  if (e != cudaSuccess) return e;
  pools[dev] = pool;
  *out = pool;
  return cudaSuccess;
}

int launchP2pKernel(const GpuP2pLaunch* l, void* stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  void* table = nullptr;
  cudaMemPool_t pool;
  cudaError_t e = tablePool(l->device, &pool);
  if (e == cudaSuccess) e = cudaMallocFromPoolAsync(&table, l->tableBytes, pool, s);
  if (e != cudaSuccess) {
    setLaunchError(e, "allocating the send/recv table (cudaMallocFromPoolAsync)");
    return (int)e;
  }
  // From pageable memory: returns once the table is staged, so the caller may free it.
  e = cudaMemcpyAsync(table, l->table, l->tableBytes, cudaMemcpyHostToDevice, s);
  if (e == cudaSuccess) {
    char* t = static_cast<char*>(table);
    void* args[] = {const_cast<GpuP2pLaunch*>(l), &t};
    e = cudaLaunchKernel(reinterpret_cast<const void*>(gpuSendRecvKernel), dim3(l->nBlocks), dim3(l->threads), args, 0,
                         s);
  }
  const cudaError_t freed = cudaFreeAsync(table, s);
  if (e != cudaSuccess) {
    char what[160];
    snprintf(what, sizeof what, "send/recv kernel (%d blocks of %d threads, %d transfers, stream %p)", l->nBlocks,
             l->threads, l->nOps, stream);
    setLaunchError(e, what);
    return (int)e;
  }
  if (freed != cudaSuccess) {
    setLaunchError(freed, "cudaFreeAsync of the send/recv table");
    return (int)freed;
  }
  return 0;
}

}  // namespace baton

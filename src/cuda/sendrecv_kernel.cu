// The CUDA backend's send/recv kernel: a group's device sends and receives for one communicator.
//
// Computes: block b moves transfers first[b] .. first[b + 1] - 1 of the launch's table
// (GpuP2pLaunch, plugin_table.h) through the peers' FIFOs, round-robin, with the same steps the
// CPU backend's send/recv executor takes (algorithms/sendrecv_progress.h: sendRecvRunAll), every
// thread of the block copying. A connector's transfers all lie in one block, in the order they
// were issued. Introduced by the CUDA backend (docs/cuda-backend.md); the steps are lesson 03's.
// Memory-ordering contract: sendrecv_progress.h and connector.h: the sender's tail store (after
// the slot's payload and size; a block barrier first, so every thread's payload stores are part of
// what it releases) releases a slot, the receiver's head store gives it back; cuda::atomic_ref at
// system scope gives the release/acquire pairs between devices. Thread 0 reads the counters and
// the block follows its answer (sendRecvAgree); the transfers' progress, in the table in global
// memory (a stream-ordered allocation of this file's pool, or in a CUDA graph a device copy the
// graph refreshes before each run), is written by thread 0 and read by the block after a barrier.
// A failure is published as coll_kernels.cuh does.
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "coll_kernels.cuh"
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
  // As gpu_p2p_table.h's p2pTableView, which the CPU test of the table uses.
  const int32_t* first = reinterpret_cast<const int32_t*>(table);
  const int32_t* after = first + l.nBlocks + 1;
  SendRecvTransfer* xs = reinterpret_cast<SendRecvTransfer*>(table + l.xsOffset);
  const int b = first[blockIdx.x];
  sendRecvRunAll(*ctx, xs + b, after + b, first[blockIdx.x + 1] - b);
  gpuReportFailure(*ctx, l.status);
}

void setLaunchError(cudaError_t e, const char* what);  // runtime.cu

// A memory pool on `dev` for stream-ordered allocations of ranks that may share the device, made
// once per (dev, keep). Not the device's default pool: ranks that are threads of one process share
// a device's pools, and a pool that may reuse memory by making the allocating stream wait for
// another stream's pending free (cudaMemPoolReuseAllowInternalDependencies) could make one rank's
// kernel wait for another rank's, which waits for the first: so that is off. keep: freed memory
// stays mapped for the next allocation (the send/recv tables, small and frequent); otherwise it
// goes back to the device at the next synchronization (AlltoAll scratch, as large as a buffer).
cudaError_t rankSafePool(int dev, bool keep, cudaMemPool_t* out) {
  static std::mutex mu;
  static std::map<std::pair<int, bool>, cudaMemPool_t> pools;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = pools.find({dev, keep}); it != pools.end()) return *out = it->second, cudaSuccess;
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = dev;
  cudaMemPool_t pool;
  cudaError_t e = cudaMemPoolCreate(&pool, &props);
  int no = 0;
  uint64_t threshold = keep ? UINT64_MAX : 0;
  if (e == cudaSuccess) e = cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowInternalDependencies, &no);
  if (e == cudaSuccess) e = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold);
  if (e != cudaSuccess) return e;
  pools[{dev, keep}] = pool;
  *out = pool;
  return cudaSuccess;
}

namespace {

cudaError_t launchKernel(const GpuP2pLaunch* l, void* table, cudaStream_t s) {
  char* t = static_cast<char*>(table);
  void* args[] = {const_cast<GpuP2pLaunch*>(l), &t};
  return cudaLaunchKernel(reinterpret_cast<const void*>(gpuSendRecvKernel), dim3(l->nBlocks), dim3(l->threads), args, 0,
                          s);
}

int launchFailed(cudaError_t e, const GpuP2pLaunch* l, void* stream) {
  char what[160];
  snprintf(what, sizeof what, "send/recv kernel (%d blocks of %d threads, %d transfers, stream %p)", l->nBlocks,
           l->threads, l->nOps, stream);
  setLaunchError(e, what);
  return (int)e;
}

// A captured table's memory, owned by the graphs that hold it (a CUDA user object). Its destructor
// runs on a CUDA thread that may not call CUDA, so it only queues the memory for releaseGraphTables.
struct GraphTable {
  void* host = nullptr;
  void* dev = nullptr;
};
std::mutex gReleasedMu;
std::vector<GraphTable> gReleased;

void CUDART_CB graphTableGone(void* p) {
  std::lock_guard<std::mutex> lock(gReleasedMu);
  gReleased.push_back(*static_cast<GraphTable*>(p));
  delete static_cast<GraphTable*>(p);
}

// Allocations and frees are not stream work, but a capture in global or thread-local mode refuses
// them in its thread: they run in relaxed mode (as NCCL's do).
class RelaxedCapture {
 public:
  RelaxedCapture() { cudaThreadExchangeStreamCaptureMode(&mode_); }
  ~RelaxedCapture() { cudaThreadExchangeStreamCaptureMode(&mode_); }

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
};

void freeGraphTable(const GraphTable& t) {
  RelaxedCapture relaxed;
  if (t.host) cudaFreeHost(t.host);
  if (t.dev) cudaFree(t.dev);
}

// In a CUDA graph capture: the table must outlive this call and be fresh for every launch of the
// graph (the kernel writes its progress into it), so it is a pinned host copy the graph copies onto
// a device copy before each kernel, both released when the last graph holding them is destroyed.
int launchCaptured(const GpuP2pLaunch* l, cudaStream_t s) {
  GraphTable t;
  cudaError_t e;
  {
    RelaxedCapture relaxed;
    e = cudaHostAlloc(&t.host, l->tableBytes, cudaHostAllocPortable);
    if (e == cudaSuccess) e = cudaMalloc(&t.dev, l->tableBytes);
  }
  cudaStreamCaptureStatus st;
  cudaGraph_t graph = nullptr;
  if (e == cudaSuccess) e = cudaStreamGetCaptureInfo(s, &st, nullptr, &graph);
  cudaUserObject_t owner = nullptr;
  if (e == cudaSuccess)
    e = cudaUserObjectCreate(&owner, new GraphTable(t), graphTableGone, 1, cudaUserObjectNoDestructorSync);
  if (e != cudaSuccess) {
    freeGraphTable(t);
    setLaunchError(e, "keeping a captured send/recv table (cudaHostAlloc, cudaMalloc, cudaUserObjectCreate)");
    return (int)e;
  }
  // From here the graph owns the memory (our reference moves to it), also if what follows fails.
  e = cudaGraphRetainUserObject(graph, owner, 1, cudaGraphUserObjectMove);
  if (e != cudaSuccess) {
    cudaUserObjectRelease(owner, 1);
    setLaunchError(e, "cudaGraphRetainUserObject (a captured send/recv table)");
    return (int)e;
  }
  memcpy(t.host, l->table, l->tableBytes);
  e = cudaMemcpyAsync(t.dev, t.host, l->tableBytes, cudaMemcpyHostToDevice, s);
  if (e == cudaSuccess) e = launchKernel(l, t.dev, s);
  return e == cudaSuccess ? 0 : launchFailed(e, l, s);
}

}  // namespace

void releaseGraphTables() {
  std::vector<GraphTable> gone;
  {
    std::lock_guard<std::mutex> lock(gReleasedMu);
    gone.swap(gReleased);
  }
  for (const GraphTable& t : gone) freeGraphTable(t);
}

int launchP2pKernel(const GpuP2pLaunch* l, void* stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (l->captured) return launchCaptured(l, s);
  releaseGraphTables();
  void* table = nullptr;
  cudaMemPool_t pool;
  cudaError_t e = rankSafePool(l->device, /*keep=*/true, &pool);
  if (e == cudaSuccess) e = cudaMallocFromPoolAsync(&table, l->tableBytes, pool, s);
  if (e != cudaSuccess) {
    setLaunchError(e, "allocating the send/recv table (cudaMallocFromPoolAsync)");
    return (int)e;
  }
  // From pageable memory: returns once the table is staged, so the caller may free it.
  e = cudaMemcpyAsync(table, l->table, l->tableBytes, cudaMemcpyHostToDevice, s);
  if (e == cudaSuccess) e = launchKernel(l, table, s);
  const cudaError_t freed = cudaFreeAsync(table, s);
  if (e != cudaSuccess) return launchFailed(e, l, stream);
  if (freed != cudaSuccess) {
    setLaunchError(freed, "cudaFreeAsync of the send/recv table");
    return (int)freed;
  }
  return 0;
}

}  // namespace baton

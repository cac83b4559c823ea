// The plugin's runtime calls (libbaton-cuda.so): devices, memory, IPC handles, events, as the
// table in plugin_table.h names them. Built by nvcc with the CUDA runtime linked statically.
//
// Computes nothing on the device. Every call that touches a device makes the communicator's device
// current and restores the caller's afterwards, as NCCL does, so a thread that drives ranks on
// several devices keeps its own current device.
// Memory-ordering contract: none here (the kernels' files state theirs).
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "calls.cuh"
#include "plugin_table.h"

namespace baton {
namespace {
thread_local char tError[512];
}  // namespace

int fail(cudaError_t e, const char* fmt, ...) {
  char what[384];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  snprintf(tError, sizeof tError, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
  cudaGetLastError();  // clear the sticky-free error so the next call starts clean
  return (int)e;
}

// Zeroes device memory on a stream of its own and waits for it. cudaMemset would queue on the
// legacy default stream and return before it ran, while copyToDevice's non-blocking stream does
// not wait for that stream: a table filled right after its allocation could be zeroed after the
// fill (the kernels then read step sizes of 0). Waiting for this stream alone never waits for
// another rank's kernel, which cudaDeviceSynchronize would, and could deadlock thread ranks.
cudaError_t zeroDevice(void* p, size_t bytes) {
  cudaStream_t s = nullptr;
  cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  if (e != cudaSuccess) return e;
  e = cudaMemsetAsync(p, 0, bytes, s);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  cudaStreamDestroy(s);
  return e;
}

namespace {

int probe(int* dev, char* desc, size_t descBytes) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    snprintf(desc, descBytes, "no CUDA device: cudaGetDeviceCount: %s", cudaGetErrorString(e));
    cudaGetLastError();
    return (int)e;
  }
  if (n == 0) {
    snprintf(desc, descBytes, "no CUDA device: cudaGetDeviceCount found none");
    return (int)cudaErrorNoDevice;
  }
  if ((e = cudaGetDevice(dev)) != cudaSuccess) {
    snprintf(desc, descBytes, "cudaGetDevice: %s", cudaGetErrorString(e));
    return (int)e;
  }
  cudaDeviceProp p;
  if ((e = cudaGetDeviceProperties(&p, *dev)) != cudaSuccess) {
    snprintf(desc, descBytes, "cudaGetDeviceProperties(%d): %s", *dev, cudaGetErrorString(e));
    return (int)e;
  }
  char bus[32] = "?";
  cudaDeviceGetPCIBusId(bus, sizeof bus, *dev);
  snprintf(desc, descBytes, "CUDA device %d of %d: %s, sm_%d%d, %d SMs, %.1f GiB, bus %s", *dev, n, p.name, p.major,
           p.minor, p.multiProcessorCount, p.totalGlobalMem / 1073741824.0, bus);
  return 0;
}

int deviceCount(int* n) {
  const cudaError_t e = cudaGetDeviceCount(n);
  return e == cudaSuccess ? 0 : fail(e, "cudaGetDeviceCount");
}

int multiProcessors(int dev, int* n) {
  const cudaError_t e = cudaDeviceGetAttribute(n, cudaDevAttrMultiProcessorCount, dev);
  return e == cudaSuccess ? 0 : fail(e, "cudaDeviceGetAttribute(multiProcessorCount, %d)", dev);
}

int isDevicePointer(const void* p) {
  cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

int deviceAlloc(int dev, void** p, size_t bytes) {
  SCOPED(dev, "cudaMalloc");
  cudaError_t e = cudaMalloc(p, bytes);
  if (e != cudaSuccess) return fail(e, "cudaMalloc(%zu bytes) on device %d", bytes, dev);
  if ((e = zeroDevice(*p, bytes)) != cudaSuccess) {
    cudaFree(*p);
    *p = nullptr;
    return fail(e, "zeroing %zu bytes (cudaMemsetAsync) on device %d", bytes, dev);
  }
  return 0;
}

int deviceFree(int dev, void* p) {
  SCOPED(dev, "cudaFree");
  const cudaError_t e = cudaFree(p);
  return e == cudaSuccess ? 0 : fail(e, "cudaFree(%p) on device %d", p, dev);
}

int hostAlloc(void** host, void** devView, size_t bytes) {
  cudaError_t e = cudaHostAlloc(host, bytes, cudaHostAllocMapped | cudaHostAllocPortable);
  if (e != cudaSuccess) return fail(e, "cudaHostAlloc(%zu bytes, mapped)", bytes);
  memset(*host, 0, bytes);
  if ((e = cudaHostGetDevicePointer(devView, *host, 0)) != cudaSuccess) {
    cudaFreeHost(*host);
    *host = nullptr;
    return fail(e, "cudaHostGetDevicePointer");
  }
  return 0;
}

int hostFree(void* host) {
  const cudaError_t e = cudaFreeHost(host);
  return e == cudaSuccess ? 0 : fail(e, "cudaFreeHost(%p)", host);
}

// On a stream of its own, waited for: cudaMemcpy from pageable memory may return before the data
// lands, and the kernels that read it run on the user's (possibly non-blocking) streams. Waiting
// for this stream alone never waits for another rank's kernel on the same device.
int copyToDevice(int dev, void* dst, const void* src, size_t bytes) {
  SCOPED(dev, "cudaMemcpyAsync");
  cudaStream_t s = nullptr;
  cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  if (e != cudaSuccess) return fail(e, "cudaStreamCreateWithFlags on device %d", dev);
  e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  cudaStreamDestroy(s);
  return e == cudaSuccess ? 0 : fail(e, "cudaMemcpyAsync(%zu bytes to device %d)", bytes, dev);
}

// The driver's cuMemGetAddressRange (since CUDA 3.2), taken through the runtime so the plugin
// links no libcuda: the one call that says where p's allocation starts.
PFN_cuMemGetAddressRange_v3020 addressRange() {
  static PFN_cuMemGetAddressRange_v3020 f = [] {
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    void* p = nullptr;
    if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &p, 3020, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
      cudaGetLastError();
      p = nullptr;
    }
    return reinterpret_cast<PFN_cuMemGetAddressRange_v3020>(p);
  }();
  return f;
}

// The handle of p's whole allocation and p's offset in it: cudaMalloc may sub-allocate p from a
// larger block, whose start is where cudaIpcOpenMemHandle maps it in the other process (CUDA C++
// Programming Guide, "Interprocess Communication").
int ipcHandle(int dev, void* p, unsigned char handle[kIpcHandleBytes], uint64_t* offset) {
  static_assert(sizeof(cudaIpcMemHandle_t) == kIpcHandleBytes, "cudaIpcMemHandle_t is 64 bytes");
  SCOPED(dev, "cudaIpcGetMemHandle");
  const PFN_cuMemGetAddressRange_v3020 range = addressRange();
  if (!range) return fail(cudaErrorNotSupported, "the driver has no cuMemGetAddressRange entry point");
  CUdeviceptr base = 0;
  size_t size = 0;
  const CUresult r = range(&base, &size, reinterpret_cast<CUdeviceptr>(p));
  if (r != CUDA_SUCCESS)
    return fail(cudaErrorInvalidValue, "cuMemGetAddressRange(%p) on device %d: error %d", p, dev, (int)r);
  cudaIpcMemHandle_t h;
  const cudaError_t e = cudaIpcGetMemHandle(&h, reinterpret_cast<void*>(base));
  if (e != cudaSuccess)
    return fail(e, "cudaIpcGetMemHandle(%p, the allocation of %p) on device %d", (void*)base, p, dev);
  memcpy(handle, &h, sizeof h);
  *offset = reinterpret_cast<uint64_t>(p) - base;
  return 0;
}

int ipcOpen(int dev, const unsigned char handle[kIpcHandleBytes], void** base) {
  SCOPED(dev, "cudaIpcOpenMemHandle");
  cudaIpcMemHandle_t h;
  memcpy(&h, handle, sizeof h);
  const cudaError_t e = cudaIpcOpenMemHandle(base, h, cudaIpcMemLazyEnablePeerAccess);
  return e == cudaSuccess ? 0 : fail(e, "cudaIpcOpenMemHandle on device %d", dev);
}

int ipcClose(int dev, void* p) {
  SCOPED(dev, "cudaIpcCloseMemHandle");
  const cudaError_t e = cudaIpcCloseMemHandle(p);
  return e == cudaSuccess ? 0 : fail(e, "cudaIpcCloseMemHandle(%p)", p);
}

int enablePeerAccess(int dev, int peerDev) {
  if (dev == peerDev) return 0;
  SCOPED(dev, "cudaDeviceEnablePeerAccess");
  int can = 0;
  cudaError_t e = cudaDeviceCanAccessPeer(&can, dev, peerDev);
  if (e != cudaSuccess) return fail(e, "cudaDeviceCanAccessPeer(%d, %d)", dev, peerDev);
  if (!can) return fail(cudaErrorPeerAccessUnsupported, "device %d cannot access device %d", dev, peerDev);
  e = cudaDeviceEnablePeerAccess(peerDev, 0);
  if (e == cudaErrorPeerAccessAlreadyEnabled) {
    cudaGetLastError();
    return 0;
  }
  return e == cudaSuccess ? 0 : fail(e, "cudaDeviceEnablePeerAccess(%d) on device %d", peerDev, dev);
}

int pciBusId(int dev, char* id, size_t bytes) {
  const cudaError_t e = cudaDeviceGetPCIBusId(id, (int)bytes, dev);
  return e == cudaSuccess ? 0 : fail(e, "cudaDeviceGetPCIBusId(%d)", dev);
}

int canReach(int dev, const char* peer, int* can) {
  *can = 0;
  int peerDev = -1;
  if (cudaDeviceGetByPCIBusId(&peerDev, peer) != cudaSuccess) {  // not visible to this process
    cudaGetLastError();
    return 0;
  }
  if (peerDev == dev) return *can = 1, 0;
  const cudaError_t e = cudaDeviceCanAccessPeer(can, dev, peerDev);
  return e == cudaSuccess ? 0 : fail(e, "cudaDeviceCanAccessPeer(%d, %d)", dev, peerDev);
}

int hostRegister(int dev, void* host, size_t bytes, void** devView) {
  SCOPED(dev, "cudaHostRegister");
  cudaError_t e = cudaHostRegister(host, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable);
  if (e != cudaSuccess) return fail(e, "cudaHostRegister(%p, %zu bytes)", host, bytes);
  if ((e = cudaHostGetDevicePointer(devView, host, 0)) != cudaSuccess) {
    cudaHostUnregister(host);
    return fail(e, "cudaHostGetDevicePointer(%p)", host);
  }
  return 0;
}

int hostUnregister(void* host) {
  const cudaError_t e = cudaHostUnregister(host);
  return e == cudaSuccess ? 0 : fail(e, "cudaHostUnregister(%p)", host);
}

int eventCreate(int dev, void** ev) {
  SCOPED(dev, "cudaEventCreate");
  const cudaError_t e = cudaEventCreateWithFlags(reinterpret_cast<cudaEvent_t*>(ev), cudaEventDisableTiming);
  return e == cudaSuccess ? 0 : fail(e, "cudaEventCreate on device %d", dev);
}

int eventDestroy(void* ev) {
  const cudaError_t e = cudaEventDestroy(static_cast<cudaEvent_t>(ev));
  return e == cudaSuccess ? 0 : fail(e, "cudaEventDestroy");
}

int streamCapture(int dev, void* stream, int* status, unsigned long long* id) {
  SCOPED(dev, "cudaStreamGetCaptureInfo");  // stream 0 is the current device's
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  *id = 0;
  const cudaError_t e = cudaStreamGetCaptureInfo(static_cast<cudaStream_t>(stream), &st, id);
  if (e != cudaSuccess) return fail(e, "cudaStreamGetCaptureInfo(stream %p)", stream);
  *status = st == cudaStreamCaptureStatusActive ? 1 : st == cudaStreamCaptureStatusInvalidated ? 2 : 0;
  return 0;
}

int streamWaitEvent(int dev, void* stream, void* ev, int external) {
  SCOPED(dev, "cudaStreamWaitEvent");
  const cudaError_t e = cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), static_cast<cudaEvent_t>(ev),
                                            external ? cudaEventWaitExternal : cudaEventWaitDefault);
  return e == cudaSuccess ? 0 : fail(e, "cudaStreamWaitEvent(stream %p%s)", stream, external ? ", external" : "");
}

int eventRecord(int dev, void* ev, void* stream, int external) {
  SCOPED(dev, "cudaEventRecord");
  const cudaError_t e = cudaEventRecordWithFlags(static_cast<cudaEvent_t>(ev), static_cast<cudaStream_t>(stream),
                                                 external ? cudaEventRecordExternal : cudaEventRecordDefault);
  return e == cudaSuccess ? 0 : fail(e, "cudaEventRecord(stream %p%s)", stream, external ? ", external" : "");
}

int eventSynchronize(void* ev) {
  const cudaError_t e = cudaEventSynchronize(static_cast<cudaEvent_t>(ev));
  return e == cudaSuccess ? 0 : fail(e, "cudaEventSynchronize");
}

const char* lastError() { return tError; }

}  // namespace

int launchCollKernel(const GpuCollLaunch* l, void* stream);  // coll_launch.cu

int launchColl(const GpuCollLaunch* l, void* stream) {
  SCOPED(l->device, "launch");
  return launchCollKernel(l, stream);
}

int launchP2pKernel(const GpuP2pLaunch* l, void* stream);  // sendrecv_kernel.cu
void releaseGraphTables();                                 // sendrecv_kernel.cu

int launchP2p(const GpuP2pLaunch* l, void* stream) {
  SCOPED(l->device, "launch");
  return launchP2pKernel(l, stream);
}

int copyAsync(int dev, void* dst, const void* src, size_t bytes, void* stream) {
  SCOPED(dev, "cudaMemcpyAsync");
  const cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(stream));
  return e == cudaSuccess ? 0 : fail(e, "cudaMemcpyAsync(%zu bytes, device %d, stream %p)", bytes, dev, stream);
}

cudaError_t rankSafePool(int dev, bool keep, cudaMemPool_t* out);  // sendrecv_kernel.cu

int allocAsync(int dev, void** p, size_t bytes, void* stream) {
  SCOPED(dev, "cudaMallocFromPoolAsync");
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  // A capturing stream refuses an explicit pool (cudaErrorStreamCaptureUnsupported, seen on the
  // H200 on 2026-11-29): there the allocation becomes a graph memory node, from the graph's own
  // memory, which cudaMallocAsync records.
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  cudaError_t e = cudaStreamIsCapturing(s, &capturing);
  if (e == cudaSuccess && capturing == cudaStreamCaptureStatusActive) {
    e = cudaMallocAsync(p, bytes, s);
    return e == cudaSuccess ? 0
                            : fail(e, "cudaMallocAsync(%zu bytes, device %d, capturing stream %p)", bytes, dev, stream);
  }
  cudaMemPool_t pool;
  if (e == cudaSuccess) e = rankSafePool(dev, /*keep=*/false, &pool);
  if (e == cudaSuccess) e = cudaMallocFromPoolAsync(p, bytes, pool, s);
  return e == cudaSuccess ? 0 : fail(e, "cudaMallocFromPoolAsync(%zu bytes, device %d, stream %p)", bytes, dev, stream);
}

int freeAsync(int dev, void* p, void* stream) {
  SCOPED(dev, "cudaFreeAsync");
  const cudaError_t e = cudaFreeAsync(p, static_cast<cudaStream_t>(stream));
  return e == cudaSuccess ? 0 : fail(e, "cudaFreeAsync(%p, device %d, stream %p)", p, dev, stream);
}

void setLaunchError(cudaError_t e, const char* what) { fail(e, "%s", what); }

// vmm.cu
int vmmAlloc(int dev, size_t bytes, void** p, size_t* mapped, int* fd);
int vmmImport(int dev, int fd, size_t bytes, void** p);
int vmmFree(void* p, size_t bytes);

}  // namespace baton

extern "C" __attribute__((visibility("default"))) const baton::CudaBackend* batonCudaBackend(void) {
  using namespace baton;
  static const CudaBackend table = {kCudaBackendVersion,
                                    sizeof(CollArgs),
                                    sizeof(ExecCtx),
                                    sizeof(ConnDev),
                                    sizeof(GpuCollLaunch),
                                    sizeof(GpuP2pLaunch),
                                    sizeof(SendRecvTransfer),
                                    sizeof(GpuChannelDev),
                                    probe,
                                    deviceCount,
                                    multiProcessors,
                                    isDevicePointer,
                                    deviceAlloc,
                                    deviceFree,
                                    hostAlloc,
                                    hostFree,
                                    copyToDevice,
                                    ipcHandle,
                                    ipcOpen,
                                    ipcClose,
                                    enablePeerAccess,
                                    pciBusId,
                                    canReach,
                                    hostRegister,
                                    hostUnregister,
                                    eventCreate,
                                    eventDestroy,
                                    streamCapture,
                                    streamWaitEvent,
                                    eventRecord,
                                    eventSynchronize,
                                    launchColl,
                                    launchP2p,
                                    copyAsync,
                                    allocAsync,
                                    freeAsync,
                                    releaseGraphTables,
                                    vmmAlloc,
                                    vmmImport,
                                    vmmFree,
                                    lastError};
  return &table;
}

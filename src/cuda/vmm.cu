// The plugin's cuMem calls (libbaton-cuda.so): ncclMemAlloc's device memory as NCCL makes it, a
// physical allocation exported as a POSIX file descriptor and mapped at a reserved address, so a
// peer process can import it into its own device's address space (windows, lesson 09).
//
// Computes nothing on the device. The driver's cuMem functions are taken through the runtime's
// cudaGetDriverEntryPointByVersion, so the plugin still links no libcuda at build time.
// Memory-ordering contract: none here (a window's users synchronise through its pads, symmetric.h).
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <mutex>

#include "calls.cuh"
#include "plugin_table.h"

namespace baton {

namespace {

// cuMem calls exist since CUDA 10.2: the versioned entry points below are those signatures.
constexpr unsigned kDriverApi = 10020;

struct Vmm {
  PFN_cuMemCreate_v10020 create = nullptr;
  PFN_cuMemRelease_v10020 release = nullptr;
  PFN_cuMemAddressReserve_v10020 reserve = nullptr;
  PFN_cuMemAddressFree_v10020 addressFree = nullptr;
  PFN_cuMemMap_v10020 map = nullptr;
  PFN_cuMemUnmap_v10020 unmap = nullptr;
  PFN_cuMemSetAccess_v10020 setAccess = nullptr;
  PFN_cuMemGetAllocationGranularity_v10020 granularity = nullptr;
  PFN_cuMemExportToShareableHandle_v10020 exportHandle = nullptr;
  PFN_cuMemImportFromShareableHandle_v10020 importHandle = nullptr;
  PFN_cuDeviceGet_v2000 deviceGet = nullptr;
  PFN_cuDeviceGetAttribute_v2000 attribute = nullptr;
  bool ok = false;
};

template <typename F>
bool entry(const char* name, F* f) {
  cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  void* p = nullptr;
  if (cudaGetDriverEntryPointByVersion(name, &p, kDriverApi, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess || !p) {
    cudaGetLastError();
    return false;
  }
  *f = reinterpret_cast<F>(p);
  return true;
}

const Vmm& vmm() {
  static Vmm v;
  static std::once_flag once;
  std::call_once(once, [] {
    v.ok = entry("cuMemCreate", &v.create) && entry("cuMemRelease", &v.release) &&
           entry("cuMemAddressReserve", &v.reserve) && entry("cuMemAddressFree", &v.addressFree) &&
           entry("cuMemMap", &v.map) && entry("cuMemUnmap", &v.unmap) && entry("cuMemSetAccess", &v.setAccess) &&
           entry("cuMemGetAllocationGranularity", &v.granularity) &&
           entry("cuMemExportToShareableHandle", &v.exportHandle) &&
           entry("cuMemImportFromShareableHandle", &v.importHandle) && entry("cuDeviceGet", &v.deviceGet) &&
           entry("cuDeviceGetAttribute", &v.attribute);
  });
  return v;
}

// Never 0: a call that "succeeded" with an unusable answer (a zero granularity) is a failure too.
int driverFail(CUresult r, const char* what, int dev) {
  if (r == CUDA_SUCCESS) r = CUDA_ERROR_INVALID_VALUE;
  // Only the message uses the runtime's name for the code (the two enumerations mostly agree).
  return fail(static_cast<cudaError_t>(r), "%s on device %d (CUresult %d)", what, dev, (int)r);
}

// The driver's device for a runtime ordinal (cuMem locations name driver devices).
bool driverDevice(const Vmm& v, int dev, CUdevice* cu) { return v.deviceGet(cu, dev) == CUDA_SUCCESS; }

CUmemAllocationProp propFor(CUdevice cu) {
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = cu;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return prop;
}

// Maps `h` at a fresh address range of `bytes` and lets the driver devices `devs` load and store
// there. The handle is released once mapped: the mapping keeps the memory until it is unmapped.
int mapHandle(const Vmm& v, CUmemGenericAllocationHandle h, size_t bytes, size_t align, const CUdevice* devs, int nDevs,
              void** p) {
  CUdeviceptr va = 0;
  CUresult r = v.reserve(&va, bytes, align, 0, 0);
  if (r == CUDA_SUCCESS && (r = v.map(va, bytes, 0, h, 0)) != CUDA_SUCCESS) v.addressFree(va, bytes), va = 0;
  v.release(h);
  if (r != CUDA_SUCCESS) return driverFail(r, "cuMemAddressReserve/cuMemMap", (int)devs[0]);
  CUmemAccessDesc desc[64];
  for (int i = 0; i < nDevs; ++i) {
    desc[i] = {};
    desc[i].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc[i].location.id = devs[i];
    desc[i].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  }
  if ((r = v.setAccess(va, bytes, desc, (size_t)nDevs)) != CUDA_SUCCESS) {
    v.unmap(va, bytes);
    v.addressFree(va, bytes);
    return driverFail(r, "cuMemSetAccess", (int)devs[0]);
  }
  *p = reinterpret_cast<void*>(va);
  return 0;
}

}  // namespace

int vmmFree(void* p, size_t bytes);
cudaError_t zeroDevice(void* p, size_t bytes);  // runtime.cu

int vmmAlloc(int dev, size_t bytes, void** p, size_t* mapped, int* fd) {
  *p = nullptr;
  *fd = -1;
  const Vmm& v = vmm();
  if (!v.ok) return fail(cudaErrorNotSupported, "the driver has no cuMem entry points (cuMemCreate)");
  SCOPED(dev, "cuMem memory");
  cudaFree(nullptr);  // the device's primary context current (the driver's calls act in it)
  CUdevice cu = 0;
  int posixFd = 0;
  if (!driverDevice(v, dev, &cu) ||
      v.attribute(&posixFd, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, cu) != CUDA_SUCCESS ||
      !posixFd)
    return fail(cudaErrorNotSupported, "device %d exports no cuMem memory as file descriptors", dev);
  const CUmemAllocationProp prop = propFor(cu);
  size_t gran = 0;
  CUresult r = v.granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
  if (r != CUDA_SUCCESS || gran == 0) return driverFail(r, "cuMemGetAllocationGranularity", dev);
  *mapped = (bytes + gran - 1) / gran * gran;
  CUmemGenericAllocationHandle h = 0;
  if ((r = v.create(&h, *mapped, &prop, 0)) != CUDA_SUCCESS) return driverFail(r, "cuMemCreate", dev);
  if ((r = v.exportHandle(fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0)) != CUDA_SUCCESS) {
    v.release(h);
    *fd = -1;
    return driverFail(r, "cuMemExportToShareableHandle", dev);
  }
  // Every device that can reach `dev` may load and store here (threads of this process driving
  // ranks on other devices use the same pointer, as with peer access to cudaMalloc memory).
  CUdevice devs[64] = {cu};
  int nDevs = 1, count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
  for (int d = 0; d < count && nDevs < 64; ++d) {
    int can = 0;
    CUdevice other = 0;
    if (d != dev && cudaDeviceCanAccessPeer(&can, d, dev) == cudaSuccess && can && driverDevice(v, d, &other))
      devs[nDevs++] = other;
  }
  cudaGetLastError();
  int e = mapHandle(v, h, *mapped, gran, devs, nDevs, p);  // releases h either way
  if (e == 0) {
    // Zeroed, as deviceAlloc's, and finished before anyone (a peer process, a non-blocking stream)
    // can touch it, without waiting for other ranks' kernels on the device.
    const cudaError_t z = zeroDevice(*p, *mapped);
    if (z == cudaSuccess) return 0;
    e = fail(z, "zeroing %zu bytes of cuMem memory on device %d", *mapped, dev);
    vmmFree(*p, *mapped);
    *p = nullptr;
  }
  close(*fd);  // the descriptor alone would keep the allocation alive
  *fd = -1;
  return e;
}

int vmmImport(int dev, int fd, size_t bytes, void** p) {
  *p = nullptr;
  const Vmm& v = vmm();
  if (!v.ok) return fail(cudaErrorNotSupported, "the driver has no cuMem entry points (cuMemImport)");
  SCOPED(dev, "importing cuMem memory");
  cudaFree(nullptr);
  CUmemGenericAllocationHandle h = 0;
  CUresult r = v.importHandle(&h, reinterpret_cast<void*>((uintptr_t)fd), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  if (r != CUDA_SUCCESS) return driverFail(r, "cuMemImportFromShareableHandle", dev);
  CUdevice cu = 0;
  if (!driverDevice(v, dev, &cu)) {
    v.release(h);
    return fail(cudaErrorInvalidDevice, "cuDeviceGet(%d) failed", dev);
  }
  // The owner rounded the size up to its device's granularity, which is a multiple of the minimum.
  const CUmemAllocationProp prop = propFor(cu);
  size_t gran = 0;
  if ((r = v.granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM)) != CUDA_SUCCESS || gran == 0) {
    v.release(h);
    return driverFail(r, "cuMemGetAllocationGranularity", dev);
  }
  return mapHandle(v, h, bytes, gran, &cu, 1, p);
}

int vmmFree(void* p, size_t bytes) {
  const Vmm& v = vmm();
  if (!v.ok) return fail(cudaErrorNotSupported, "the driver has no cuMem entry points (cuMemUnmap)");
  const CUdeviceptr va = reinterpret_cast<CUdeviceptr>(p);
  CUresult r = v.unmap(va, bytes);
  if (r == CUDA_SUCCESS) r = v.addressFree(va, bytes);
  return r == CUDA_SUCCESS ? 0 : driverFail(r, "cuMemUnmap/cuMemAddressFree", -1);
}

}  // namespace baton

// The allocation table behind ncclMemAlloc / ncclMemFree (mem_alloc.h).
#include "register/mem_alloc.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include "cuda_backend.h"
#include "misc/debug.h"
#include "register/ipc_socket.h"

namespace baton {
namespace {

struct Entry {
  MemAllocation a;
  int registrations = 0;
};

std::mutex gMu;
std::map<uintptr_t, Entry> gTable;  // by base address
uint64_t gNextId = 1;

// The entry whose range holds p, or end().
std::map<uintptr_t, Entry>::iterator findLocked(const void* p) {
  const uintptr_t x = reinterpret_cast<uintptr_t>(p);
  auto it = gTable.upper_bound(x);
  if (it == gTable.begin()) return gTable.end();
  --it;
  return x < it->first + it->second.a.size ? it : gTable.end();
}

// The CUDA backend (docs/cuda-backend.md): with a device current, ncclMemAlloc returns device
// memory on it, as NCCL's does: cuMem memory in gTable (with its exported descriptor, so windows
// can map it into peers), or, where the driver cannot export it, cudaMalloc memory here.
std::mutex gDevMu;
std::map<void*, int> gDevice;  // cudaMalloc'd allocations -> their device

ncclResult_t mapShared(void** ptr, size_t size);

ncclResult_t checkAllocArgs(void** ptr, size_t size) {
  if (!ptr) return batonError(ncclInvalidArgument, "ncclMemAlloc: ptr is NULL");
  *ptr = nullptr;
  if (size == 0) return batonError(ncclInvalidArgument, "ncclMemAlloc: size is 0");
  if (size > (SIZE_MAX >> 2)) return batonError(ncclInvalidArgument, "ncclMemAlloc: size %zu is too large", size);
  return ncclSuccess;
}
}  // namespace

ncclResult_t memAllocExportable(int dev, void** ptr, size_t size) {
  BATON_CHECK(checkAllocArgs(ptr, size));
  size_t mapped = 0;
  int fd = -1;
  if (!cudaBackend() || cudaBackend()->vmmAlloc(dev, size, ptr, &mapped, &fd) != 0)
    return batonError(ncclUnhandledCudaError, "no cuMem memory on CUDA device %d: %s", dev,
                      cudaBackend() ? cudaBackend()->lastError() : cudaBackendStatus());
  if (ncclResult_t res = ipcServerStart(); res != ncclSuccess) {
    cudaBackend()->vmmFree(*ptr, mapped);
    close(fd);
    *ptr = nullptr;
    return res;
  }
  std::lock_guard<std::mutex> lock(gMu);
  Entry e;
  e.a = {gNextId++, static_cast<char*>(*ptr), mapped, fd, dev};
  gTable[reinterpret_cast<uintptr_t>(*ptr)] = e;
  BATON_INFO(kSubAlloc, "ncclMemAlloc: %zu bytes at %p on CUDA device %d (cuMem, %zu mapped, exported as fd %d)", size,
             *ptr, dev, mapped, fd);
  return ncclSuccess;
}

ncclResult_t memAlloc(void** ptr, size_t size) {
  BATON_CHECK(checkAllocArgs(ptr, size));
  char desc[256];
  if (const int dev = currentCudaDevice(desc, sizeof desc); dev >= 0) {
    if (memAllocExportable(dev, ptr, size) == ncclSuccess) return ncclSuccess;
    BATON_INFO(kSubAlloc, "ncclMemAlloc: %s: cudaMalloc, which windows cannot map into peers", lastError());
    if (cudaBackend()->deviceAlloc(dev, ptr, size) != 0)
      return batonError(ncclUnhandledCudaError, "ncclMemAlloc: %s", cudaBackend()->lastError());
    std::lock_guard<std::mutex> lock(gDevMu);
    gDevice[*ptr] = dev;
    return ncclSuccess;
  }
  return mapShared(ptr, size);
}

ncclResult_t memAllocHost(void** ptr, size_t size) {
  BATON_CHECK(checkAllocArgs(ptr, size));
  return mapShared(ptr, size);
}

// The host path of both, on checked arguments: a memfd mapping peers can map too.
namespace {
ncclResult_t mapShared(void** ptr, size_t size) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  const size_t bytes = (size + page - 1) / page * page;
  const int fd = memfd_create("baton-memalloc", MFD_CLOEXEC);
  if (fd < 0) return batonError(ncclSystemError, "ncclMemAlloc: memfd_create failed: %s", strerror(errno));
  if (ftruncate(fd, (off_t)bytes) != 0) {
    const int e = errno;
    close(fd);
    return batonError(ncclSystemError, "ncclMemAlloc: ftruncate(%zu) failed: %s", bytes, strerror(e));
  }
  // MAP_POPULATE: the pages exist before the first collective touches them (no fault per page
  // inside a timed loop, in this process or in a peer that maps them).
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED) {
    const int e = errno;
    close(fd);
    return batonError(ncclSystemError, "ncclMemAlloc: mmap of %zu bytes failed: %s", bytes, strerror(e));
  }
  // Peers ask this process for the descriptor; start answering before anyone can ask.
  if (ncclResult_t res = ipcServerStart(); res != ncclSuccess) {
    munmap(p, bytes);
    close(fd);
    return res;
  }
  {
    std::lock_guard<std::mutex> lock(gMu);
    Entry e;
    e.a = {gNextId++, static_cast<char*>(p), bytes, fd, -1};
    gTable[reinterpret_cast<uintptr_t>(p)] = e;
  }
  BATON_INFO(kSubAlloc, "ncclMemAlloc: %zu bytes at %p (memfd %d, %zu mapped)", size, p, fd, bytes);
  *ptr = p;
  return ncclSuccess;
}
}  // namespace

ncclResult_t memFree(void* ptr) {
  if (!ptr) return ncclSuccess;  // as free(NULL) and cudaFree(NULL)
  {
    std::lock_guard<std::mutex> lock(gDevMu);
    if (auto it = gDevice.find(ptr); it != gDevice.end()) {
      const int dev = it->second;
      gDevice.erase(it);
      if (cudaBackend()->deviceFree(dev, ptr) != 0)
        return batonError(ncclUnhandledCudaError, "ncclMemFree: %s", cudaBackend()->lastError());
      return ncclSuccess;
    }
  }
  MemAllocation a;
  {
    std::lock_guard<std::mutex> lock(gMu);
    auto it = findLocked(ptr);
    if (it == gTable.end())
      return batonError(ncclInvalidArgument, "ncclMemFree: %p was not returned by ncclMemAlloc (or was freed already)",
                        ptr);
    if (it->first != reinterpret_cast<uintptr_t>(ptr))
      return batonError(ncclInvalidArgument,
                        "ncclMemFree: %p lies %zu bytes inside the allocation at %p; pass the pointer ncclMemAlloc "
                        "returned",
                        ptr, (size_t)(static_cast<char*>(ptr) - it->second.a.base), (void*)it->second.a.base);
    if (it->second.registrations > 0)
      return batonError(ncclInvalidUsage,
                        "ncclMemFree: %p is still registered (%d registration(s) or window(s)); deregister it first",
                        ptr, it->second.registrations);
    a = it->second.a;
    gTable.erase(it);
  }
  if (a.device >= 0) {
    close(a.fd);
    if (cudaBackend()->vmmFree(a.base, a.size) != 0)
      return batonError(ncclUnhandledCudaError, "ncclMemFree: %s", cudaBackend()->lastError());
    return ncclSuccess;
  }
  munmap(a.base, a.size);
  close(a.fd);
  return ncclSuccess;
}

bool memFind(const void* p, size_t bytes, MemAllocation* out) {
  std::lock_guard<std::mutex> lock(gMu);
  auto it = findLocked(p);
  if (it == gTable.end()) return false;
  const size_t off = static_cast<const char*>(p) - it->second.a.base;
  if (bytes > it->second.a.size - off) return false;
  *out = it->second.a;
  return true;
}

bool memFindById(uint64_t id, MemAllocation* out) {
  std::lock_guard<std::mutex> lock(gMu);
  for (auto& [base, e] : gTable)
    if (e.a.id == id) {
      *out = e.a;
      // A descriptor of its own, taken under the lock: ncclMemFree may close the table's meanwhile
      // (and the number be reused for another file).
      out->fd = fcntl(e.a.fd, F_DUPFD_CLOEXEC, 0);
      return out->fd >= 0;
    }
  return false;
}

void memCountRegistration(const void* p, int delta) {
  std::lock_guard<std::mutex> lock(gMu);
  auto it = findLocked(p);
  if (it != gTable.end()) it->second.registrations += delta;
}

}  // namespace baton

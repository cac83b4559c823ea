// Mapping peers' ncclMemAlloc memory on demand (peer_mappings.h).
#include "register/peer_mappings.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "comm.h"
#include "cuda_backend.h"
#include "misc/debug.h"
#include "register/ipc_socket.h"

namespace baton {

PeerMappings::PeerMappings(const ncclComm* comm) : comm_(comm) { dev_ = {&PeerMappings::mapForDevice, this}; }

const int32_t* PeerMappings::peerPids() const { return comm_ ? comm_->livenessPids.data() : nullptr; }
const volatile int* PeerMappings::abortFlag() const { return comm_ ? &comm_->abortFlag : nullptr; }
int PeerMappings::cudaDevice() const { return comm_ ? comm_->gpuDev : -1; }

PeerMappings::~PeerMappings() {
  for (auto& [key, m] : maps_) {
    if (!m.device) munmap(m.local, m.size);
    else if (cudaBackend()->vmmFree(m.local, m.size) != 0)
      BATON_WARN("unmapping process %d's device allocation %llu: %s", key.first, (unsigned long long)key.second,
                 cudaBackend()->lastError());
  }
}

ncclResult_t PeerMappings::translate(int pid, uint64_t allocId, uint64_t ownerPtr, size_t bytes, void** out,
                                     bool device) {
  *out = nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = maps_.find({pid, allocId});
  if (it == maps_.end()) {
    int fd = -1, ownerDev = -1;
    uint64_t base = 0, size = 0;
    BATON_CHECK(ipcRequestAllocation(pid, allocId, abortFlag(), &fd, &base, &size, &ownerDev));
    BATON_CHECK(mapLocked(pid, allocId, fd, base, size, ownerDev));
    it = maps_.find({pid, allocId});
  }
  const Mapping& m = it->second;
  if (m.device != device)
    return batonError(ncclInvalidUsage, "IPC: process %d's allocation %llu is %s memory, where %s memory was expected",
                      pid, (unsigned long long)allocId, m.device ? "device" : "host", device ? "device" : "host");
  if (ownerPtr < m.ownerBase || bytes > m.size || ownerPtr - m.ownerBase > m.size - bytes)
    return batonError(ncclInvalidUsage, "IPC: [%p, +%zu) is outside process %d's allocation %llu (%p, %llu bytes)",
                      (void*)(uintptr_t)ownerPtr, bytes, pid, (unsigned long long)allocId,
                      (void*)(uintptr_t)m.ownerBase, (unsigned long long)m.size);
  *out = m.local + (ownerPtr - m.ownerBase);
  return ncclSuccess;
}

// Maps the descriptor a peer sent: mmap for host memory, a cuMem import for its device memory.
// Closes fd either way: the mapping keeps the memory alive, even if the owner dies or frees it.
ncclResult_t PeerMappings::mapLocked(int pid, uint64_t allocId, int fd, uint64_t base, uint64_t size, int ownerDev) {
  void* p = nullptr;
  const int cudaDev = cudaDevice();
  if (ownerDev >= 0) {
    const int e = cudaDev >= 0 ? cudaBackend()->vmmImport(cudaDev, fd, size, &p) : -1;
    close(fd);
    if (e != 0)
      return batonError(
          cudaDev < 0 ? ncclInvalidUsage : ncclUnhandledCudaError,
          "IPC: process %d's allocation %llu is memory of its CUDA device %d: %s", pid, (unsigned long long)allocId,
          ownerDev, cudaDev < 0 ? "this communicator has no CUDA device to import it for" : cudaBackend()->lastError());
    BATON_INFO(kSubAlloc, "imported process %d's cuMem allocation %llu (%llu bytes at its %p) for CUDA device %d at %p",
               pid, (unsigned long long)allocId, (unsigned long long)size, (void*)(uintptr_t)base, cudaDev, p);
  } else {
    p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    const int e = errno;
    close(fd);
    if (p == MAP_FAILED)
      return batonError(ncclSystemError, "IPC: mapping %llu bytes of process %d's allocation failed: %s",
                        (unsigned long long)size, pid, strerror(e));
    BATON_INFO(kSubAlloc, "mapped process %d's ncclMemAlloc allocation %llu (%llu bytes at its %p) at %p", pid,
               (unsigned long long)allocId, (unsigned long long)size, (void*)(uintptr_t)base, p);
  }
  maps_.emplace(std::make_pair(pid, allocId), Mapping{static_cast<char*>(p), base, size, ownerDev >= 0});
  return ncclSuccess;
}

size_t PeerMappings::mappedCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  return maps_.size();
}

void* PeerMappings::mapForDevice(const void* self, int peer, uint64_t allocId, uint64_t ownerPtr, uint64_t bytes) {
  auto* me = const_cast<PeerMappings*>(static_cast<const PeerMappings*>(self));
  void* out = nullptr;
  const int32_t* pids = me->peerPids();
  if (!pids || allocId == 0) return nullptr;
  (void)me->translate(pids[peer], allocId, ownerPtr, bytes, &out);
  return out;
}

}  // namespace baton

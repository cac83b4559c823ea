// Mapping peers' ncclMemAlloc memory on demand (peer_mappings.h).
#include "register/peer_mappings.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "misc/debug.h"
#include "register/ipc_socket.h"

namespace baton {

PeerMappings::PeerMappings() { dev_ = {&PeerMappings::mapForDevice, this}; }

PeerMappings::~PeerMappings() {
  for (auto& [key, m] : maps_) munmap(m.local, m.size);
}

ncclResult_t PeerMappings::translate(int pid, uint64_t allocId, uint64_t ownerPtr, size_t bytes, void** out) {
  *out = nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = maps_.find({pid, allocId});
  if (it == maps_.end()) {
    int fd = -1;
    uint64_t base = 0, size = 0;
    BATON_CHECK(ipcRequestAllocation(pid, allocId, abortFlag_, &fd, &base, &size));
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    const int e = errno;
    close(fd);  // the mapping keeps the memory alive, even if the owner dies or frees it
    if (p == MAP_FAILED)
      return batonError(ncclSystemError, "IPC: mapping %llu bytes of process %d's allocation failed: %s",
                        (unsigned long long)size, pid, strerror(e));
    BATON_INFO(kSubAlloc, "mapped process %d's ncclMemAlloc allocation %llu (%llu bytes at its %p) at %p", pid,
               (unsigned long long)allocId, (unsigned long long)size, (void*)(uintptr_t)base, p);
    it = maps_.emplace(std::make_pair(pid, allocId), Mapping{static_cast<char*>(p), base, size}).first;
  }
  const Mapping& m = it->second;
  if (ownerPtr < m.ownerBase || bytes > m.size || ownerPtr - m.ownerBase > m.size - bytes)
    return batonError(ncclInvalidUsage, "IPC: [%p, +%zu) is outside process %d's allocation %llu (%p, %llu bytes)",
                      (void*)(uintptr_t)ownerPtr, bytes, pid, (unsigned long long)allocId,
                      (void*)(uintptr_t)m.ownerBase, (unsigned long long)m.size);
  *out = m.local + (ownerPtr - m.ownerBase);
  return ncclSuccess;
}

size_t PeerMappings::mappedCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  return maps_.size();
}

void* PeerMappings::mapForDevice(const void* self, int peer, uint64_t allocId, uint64_t ownerPtr, uint64_t bytes) {
  auto* me = const_cast<PeerMappings*>(static_cast<const PeerMappings*>(self));
  void* out = nullptr;
  if (!me->pids_ || allocId == 0) return nullptr;
  (void)me->translate(me->pids_[peer], allocId, ownerPtr, bytes, &out);
  return out;
}

}  // namespace baton

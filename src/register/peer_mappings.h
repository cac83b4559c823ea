// A communicator's view of its peers' ncclMemAlloc memory (lesson 09): each allocation a peer
// process publishes is asked for once (ipc_socket.h), mapped into this process, and kept until
// the communicator is destroyed, aborted or shrunk away. Thread-safe: channel workers translate
// concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "coll_args.h"
#include "nccl.h"

struct ncclComm;

namespace baton {

class PeerMappings {
 public:
  // Of `comm` (attachRegistration): its peers' pids (comm->livenessPids, known once init exchanged
  // them), abort flag and CUDA device are read from it when a mapping is made. Without a
  // communicator: no pids for device code, no abort flag, no device.
  explicit PeerMappings(const ncclComm* comm = nullptr);
  ~PeerMappings();  // unmaps everything
  PeerMappings(const PeerMappings&) = delete;
  PeerMappings& operator=(const PeerMappings&) = delete;

  // Where [ownerPtr, ownerPtr + bytes) of process `pid`'s allocation `allocId` is in this process,
  // mapping it on first use. nullptr on failure (lastError says why). `device`: the caller wants
  // device memory (cuMem, imported for this communicator's CUDA device) rather than host memory;
  // an allocation of the other kind is refused, so the CPU never gets a device pointer.
  ncclResult_t translate(int pid, uint64_t allocId, uint64_t ownerPtr, size_t bytes, void** out, bool device = false);
  size_t mappedCount() const;
  // For device code: `map` calls translate; peers' pids come from the communicator.
  const PeerAddressMap* deviceMap() const { return &dev_; }

 private:
  struct Mapping {
    char* local;
    uint64_t ownerBase;
    uint64_t size;
    bool device;  // cuMem memory imported for cudaDev_ (vmmFree), else a host mmap (munmap)
  };
  ncclResult_t mapLocked(int pid, uint64_t allocId, int fd, uint64_t base, uint64_t size, int ownerDev);
  static void* mapForDevice(const void* self, int peer, uint64_t allocId, uint64_t ownerPtr, uint64_t bytes);
  // The communicator's, by rank (nullptr: none known yet).
  const int32_t* peerPids() const;
  // The communicator's abort flag: a request to a peer that does not answer ends with it.
  const volatile int* abortFlag() const;
  // The communicator's CUDA device (-1: none): peers' device allocations are imported for it.
  int cudaDevice() const;
  mutable std::mutex mu_;
  std::map<std::pair<int, uint64_t>, Mapping> maps_;  // (pid, allocation id)
  const ncclComm* comm_ = nullptr;
  PeerAddressMap dev_;
};

}  // namespace baton

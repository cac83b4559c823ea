// ncclCommRegister / ncclCommDeregister (src/api/register_api.cc): a communicator's registration
// cache (lesson 09).
//
// As in NCCL, registering is local and cheap: the range is recorded (widened to whole pages) and a
// handle returned; registering a range that an entry already covers returns that entry's handle
// with one more reference. What registration buys is decided when an operation uses the buffer:
// the planner asks `covers` for both buffers and, for processes of one host whose buffers come
// from ncclMemAlloc, the peers map them on first use (peer_mappings.h) and the ring reads and
// writes them directly. NCCL's rule holds: if one rank passes registered buffers to an operation,
// every rank must.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "comm.h"
#include "nccl.h"

namespace baton {

// The core holds it as comm->reg, by the interface it asks (comm.h's RegisteredMemory: empty,
// covers, allocationOf); registration's own code reaches the rest through regCache(comm).
class RegCache final : public RegisteredMemory {
 public:
  explicit RegCache(ncclComm* comm) : comm_(comm) {}
  ~RegCache() override;  // drops what the user did not deregister
  ncclResult_t add(void* buff, size_t size, void** handle);
  ncclResult_t remove(void* handle);
  bool covers(const void* p, size_t bytes) const override;
  // ncclMemAlloc's table (mem_alloc.h), for the planner's zero copy between processes.
  uint64_t allocationOf(const void* p, size_t bytes) const override;
  size_t size() const;

 private:
  struct Entry;
  ncclComm* comm_;
  mutable std::mutex mu_;
  std::vector<Entry*> entries_;  // sorted by start address, disjoint
};

// Makes `comm`'s registration state: its cache (comm->reg), its mappings of peers' memory
// (comm->peerMaps, and comm->peerAddressMap for device code) and its windows (comm->windows). The
// core does not know these types, so whoever makes a communicator calls this right after commAlloc
// (initRank, commInitChild); commFree releases them.
void attachRegistration(ncclComm* comm);

// The cache attachRegistration made.
inline RegCache& regCache(ncclComm* comm) { return static_cast<RegCache&>(*comm->reg); }

}  // namespace baton

// ncclCommRegister / ncclCommDeregister: a communicator's registration cache (lesson 09).
//
// As in NCCL, registering is local and cheap: the range is recorded (widened to whole pages) and a
// handle returned; registering a range that an entry already covers returns that entry's handle
// with one more reference. What registration buys is decided when an operation uses the buffer:
// the planner asks `covers` for both buffers and, for processes of one host whose buffers come
// from ncclMemAlloc, the peers map them on first use (peer_mappings.h) and the ring reads and
// writes them directly. NCCL's rule holds: if one rank passes registered buffers to an operation,
// every rank must.
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <vector>

#include "nccl.h"

struct ncclComm;

namespace baton {

class RegCache {
 public:
  explicit RegCache(ncclComm* comm) : comm_(comm) {}
  ~RegCache();  // drops what the user did not deregister
  ncclResult_t add(void* buff, size_t size, void** handle);
  ncclResult_t remove(void* handle);
  // [p, p + bytes) lies inside one registration.
  bool covers(const void* p, size_t bytes) const;
  size_t size() const;
  bool empty() const { return count_.load(std::memory_order_relaxed) == 0; }  // no lock: the planner's fast path

 private:
  struct Entry;
  ncclComm* comm_;
  mutable std::mutex mu_;
  std::vector<Entry*> entries_;  // sorted by start address, disjoint
  std::atomic<size_t> count_{0};
};

}  // namespace baton

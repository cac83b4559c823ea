// The registration cache (registration.h) and the communicator's registration state.
#include "register/registration.h"

#include <unistd.h>

#include <algorithm>
#include <set>

#include "comm.h"
#include "cuda_backend.h"
#include "misc/debug.h"
#include "register/mem_alloc.h"
#include "register/peer_mappings.h"
#include "register/window.h"

namespace baton {

struct RegCache::Entry {
  uintptr_t begin, end;  // page-widened range
  int refs;
  bool fromMemAlloc;  // inside one ncclMemAlloc allocation (peers can map it)
  ncclComm* comm;
};

namespace {
// Every live handle of every communicator: a stale or foreign handle is an error, not a crash.
std::mutex gHandlesMu;
std::set<const void*> gHandles;
}  // namespace

RegCache::~RegCache() {
  std::lock_guard<std::mutex> lock(gHandlesMu);
  for (Entry* e : entries_) {
    if (e->fromMemAlloc) memCountRegistration(reinterpret_cast<void*>(e->begin), -e->refs);
    gHandles.erase(e);
    delete e;
  }
}

ncclResult_t RegCache::add(void* buff, size_t size, void** handle) {
  if (!handle) return batonError(ncclInvalidArgument, "ncclCommRegister: handle is NULL");
  *handle = nullptr;
  if (!buff) return batonError(ncclInvalidArgument, "ncclCommRegister: buff is NULL");
  if (size == 0) return batonError(ncclInvalidArgument, "ncclCommRegister: size is 0 (buff %p)", buff);
  const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  const uintptr_t b = reinterpret_cast<uintptr_t>(buff);
  if (size > UINTPTR_MAX - b - page)
    return batonError(ncclInvalidArgument, "ncclCommRegister: buff %p + size %zu overflows", buff, size);
  const uintptr_t begin = b / page * page, end = (b + size + page - 1) / page * page;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::lower_bound(entries_.begin(), entries_.end(), begin,
                             [](const Entry* e, uintptr_t x) { return e->end <= x; });
  // `it` is the first entry that ends after `begin`: the only candidates to cover or overlap.
  if (it != entries_.end() && (*it)->begin <= begin && end <= (*it)->end) {
    (*it)->refs++;
    if ((*it)->fromMemAlloc) memCountRegistration(reinterpret_cast<void*>((*it)->begin), 1);
    *handle = *it;
    return ncclSuccess;
  }
  if (it != entries_.end() && (*it)->begin < end)
    return batonError(ncclInvalidUsage,
                      "ncclCommRegister: [%p, +%zu) overlaps the registration [%p, %p) without lying inside it; "
                      "deregister that one first or register the union",
                      buff, size, (void*)(*it)->begin, (void*)(*it)->end);
  MemAllocation a;
  auto* e = new Entry{begin, end, 1, memFind(buff, size, &a), comm_};
  if (e->fromMemAlloc) memCountRegistration(buff, 1);
  entries_.insert(it, e);
  count_ = entries_.size();
  {
    std::lock_guard<std::mutex> hl(gHandlesMu);
    gHandles.insert(e);
  }
  BATON_INFO(kSubAlloc, "ncclCommRegister: comm %p rank %d buff %p size %zu -> handle %p (%s)", (void*)comm_,
             comm_->rank, buff, size, (void*)e,
             isDeviceMemory(buff) ? "device memory: kept, but kernels do not read registered buffers in place yet "
                                    "(they go through the FIFOs)"
             : e->fromMemAlloc    ? "ncclMemAlloc memory: peers on this host can map it"
                                  : "not from ncclMemAlloc: peer processes cannot map it, so between processes it "
                                    "still travels through the FIFO");
  *handle = e;
  return ncclSuccess;
}

ncclResult_t RegCache::remove(void* handle) {
  {
    std::lock_guard<std::mutex> hl(gHandlesMu);
    if (!handle || !gHandles.count(handle))
      return batonError(ncclInvalidArgument,
                        "ncclCommDeregister: handle %p is not a live registration (deregistered already, or never "
                        "returned by ncclCommRegister)",
                        handle);
  }
  auto* e = static_cast<Entry*>(handle);
  if (e->comm != comm_)
    return batonError(ncclInvalidArgument, "ncclCommDeregister: handle %p belongs to communicator %p, not %p", handle,
                      (void*)e->comm, (void*)comm_);
  if (comm_->inflight.load() > 0)
    return batonError(ncclInvalidUsage,
                      "ncclCommDeregister: communicator %p has %d operation part(s) in flight that may use [%p, %p); "
                      "wait for them first",
                      (void*)comm_, comm_->inflight.load(), (void*)e->begin, (void*)e->end);
  std::lock_guard<std::mutex> lock(mu_);
  if (e->fromMemAlloc) memCountRegistration(reinterpret_cast<void*>(e->begin), -1);
  if (--e->refs > 0) return ncclSuccess;
  entries_.erase(std::find(entries_.begin(), entries_.end(), e));
  count_ = entries_.size();
  {
    std::lock_guard<std::mutex> hl(gHandlesMu);
    gHandles.erase(e);
  }
  delete e;
  return ncclSuccess;
}

bool RegCache::covers(const void* p, size_t bytes) const {
  const uintptr_t x = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(mu_);
  if (entries_.empty()) return false;
  auto it =
      std::upper_bound(entries_.begin(), entries_.end(), x, [](uintptr_t v, const Entry* e) { return v < e->begin; });
  if (it == entries_.begin()) return false;
  --it;
  return x >= (*it)->begin && bytes <= (*it)->end - x;
}

uint64_t RegCache::allocationOf(const void* p, size_t bytes) const {
  MemAllocation m;
  return memFind(p, bytes, &m) ? m.id : 0;
}

size_t RegCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

void attachRegistration(ncclComm* comm) {
  comm->reg = std::make_unique<RegCache>(comm);
  comm->peerMaps = makeSubsystem<PeerMappings>(comm);
  comm->peerAddressMap = comm->peerMaps->deviceMap();
  comm->windows = makeSubsystem<WindowTable>();
}

}  // namespace baton

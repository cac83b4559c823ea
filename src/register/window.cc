// Windows (window.h): the collective registration, the pads, and the lookup the planner uses.
#include "register/window.h"

#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <string>

#include "comm.h"
#include "cuda_backend.h"
#include "misc/debug.h"
#include "register/mem_alloc.h"
#include "register/pad_group.h"
#include "register/peer_mappings.h"
#include "register/registration.h"
#include "symmetric.h"

namespace baton {
namespace {

// What one rank registers, as every rank sees it.
struct WinClaim {
  uint64_t ptr, size, allocId;
  int32_t flags;
  int32_t bad;  // this rank's own arguments are wrong (it says why itself)
  uint64_t padPtr, padAlloc;
  int32_t device;                   // the window is device memory (every rank's is, or none: checked)
  int32_t pad;                      // every byte set: the struct goes through the all-gather
  uint64_t devPadPtr, devPadAlloc;  // the rank's pad in device memory (a GPU communicator's), or 0
};

// A table of n pointers in device memory on `dev` (what a kernel indexes by rank), or nullptr.
void* deviceTable(int dev, const std::vector<char*>& ptrs) {
  void* t = nullptr;
  const CudaBackend* b = cudaBackend();
  if (!b || b->deviceAlloc(dev, &t, ptrs.size() * sizeof(char*)) != 0) return nullptr;
  if (b->copyToDevice(dev, t, ptrs.data(), ptrs.size() * sizeof(char*)) != 0) {
    b->deviceFree(dev, t);
    return nullptr;
  }
  return t;
}
void freeDeviceTable(int dev, void* t) {
  if (t && cudaBackend()) cudaBackend()->deviceFree(dev, t);
}

// Where rank r's memory at (ptr, alloc) is in this process (for this rank's device when `device`),
// or nullptr.
char* reach(ncclComm* comm, int r, uint64_t ptr, uint64_t alloc, size_t bytes, bool device = false) {
  if (r == comm->rank || comm->peers[r].pidHash == comm->peers[comm->rank].pidHash) return reinterpret_cast<char*>(ptr);
  if (!comm->livenessPids[r] || !alloc) return nullptr;
  void* p = nullptr;
  if (comm->peerMaps->translate(comm->livenessPids[r], alloc, ptr, bytes, &p, device) != ncclSuccess) {
    BATON_WARN("rank %d: cannot map rank %d's window memory: %s", comm->rank, r, lastError());
    return nullptr;
  }
  return static_cast<char*>(p);
}

}  // namespace

const ncclWindow_vidmem* WindowTable::findLocked(const void* p, size_t bytes, bool device) const {
  const char* c = static_cast<const char*>(p);
  for (const auto& w : wins_)
    if ((w->flags & NCCL_WIN_COLL_SYMMETRIC) && w->allReachable && w->device == device && c >= w->base &&
        bytes <= w->size && (size_t)(c - w->base) <= w->size - bytes)
      return w.get();
  return nullptr;
}

const ncclWindow_vidmem* WindowTable::findSymmetric(const void* p, size_t bytes) const {
  std::lock_guard<std::mutex> lock(mu_);
  return findLocked(p, bytes, false);
}

const ncclWindow_vidmem* WindowTable::anySymmetric() const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& w : wins_)
    if ((w->flags & NCCL_WIN_COLL_SYMMETRIC) && w->allReachable && !w->device) return w.get();
  return nullptr;
}

const ncclWindow_vidmem* WindowTable::findSymmetricDevice(const void* p, size_t bytes) const {
  std::lock_guard<std::mutex> lock(mu_);
  const ncclWindow_vidmem* w = devPadsDev ? findLocked(p, bytes, true) : nullptr;
  return w && w->peerBaseDev ? w : nullptr;
}

void WindowTable::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& w : wins_) freeDeviceTable(cudaDev_, w->peerBaseDev);
  for (void* p : retired_) freeDeviceTable(cudaDev_, p);
  retired_.clear();
  wins_.clear();
  count_ = 0;
  pads.clear();
  freeDeviceTable(cudaDev_, devPadsDev);
  devPadsDev = nullptr;
  // Peer threads' barriers may still read our pads: the last of this process's ranks frees them.
  if (myPad_ || myDevPad_) releasePads(padGroup_, padGroupSize_, myPad_, myDevPad_);
  myPad_ = nullptr;
  myDevPad_ = nullptr;
  padGroup_ = 0;
  padGroupSize_ = 1;
}

bool WindowTable::findSerial(uint64_t serial, char** base, size_t* size) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& w : wins_)
    if (w->serial == serial && !w->device) {
      *base = w->base;
      *size = w->size;
      return true;
    }
  return false;
}

namespace {

// This rank's claim on a window, checked before any rank exchanges anything: `why` is empty, or
// says what is wrong with this rank's own arguments (it still joins the all-gather, so every rank
// fails together).
struct LocalClaim {
  std::string why;
  ncclResult_t whyCode = ncclInvalidArgument;
  MemAllocation alloc;
  bool fromMemAlloc = false, device = false;
};

LocalClaim checkOwnArguments(ncclComm* comm, void* buff, size_t size, int flags) {
  LocalClaim c;
  c.fromMemAlloc = buff && size && memFind(buff, size, &c.alloc);
  c.device = buff && isDeviceMemory(buff);
  if (!buff) c.why = "buff is NULL";
  else if (size == 0) c.why = "size is 0";
  else if (c.device && !comm->gpu)
    c.why = "buff is device memory, but this is not a GPU communicator (" + comm->gpuWhy + ")",
    c.whyCode = ncclInvalidUsage;
  else if (c.device && (!c.fromMemAlloc || c.alloc.device < 0))
    c.why =
        "buff is device memory that is not ncclMemAlloc's cuMem memory (cudaMalloc's, or a driver that cannot export "
        "cuMem memory): peers cannot map it",
    c.whyCode = ncclInvalidUsage;
  else if (flags != NCCL_WIN_DEFAULT && flags != NCCL_WIN_COLL_SYMMETRIC)
    c.why = "winFlags " + std::to_string(flags) + " is neither NCCL_WIN_DEFAULT (0) nor NCCL_WIN_COLL_SYMMETRIC (1)";
  else if ((flags & NCCL_WIN_COLL_SYMMETRIC) &&
           (reinterpret_cast<uintptr_t>(buff) % NCCL_WIN_REQUIRED_ALIGNMENT || size % NCCL_WIN_REQUIRED_ALIGNMENT))
    c.why = "a symmetric window's address and size must be multiples of NCCL_WIN_REQUIRED_ALIGNMENT (4096)";
  else if ((flags & NCCL_WIN_COLL_SYMMETRIC) && !c.fromMemAlloc)
    c.why = "a symmetric window must lie in memory from ncclMemAlloc (peers map it)";
  if (!c.why.empty())
    BATON_WARN("ncclCommWindowRegister: rank %d: %s (buff %p size %zu)", comm->rank, c.why.c_str(), buff, size);
  return c;
}

// Every rank's claims agree: nobody's arguments were bad, the flags, the kind of memory and (for
// a symmetric window) the size are the same everywhere.
ncclResult_t checkClaimsAgree(const ncclComm* comm, const std::vector<WinClaim>& claims, size_t size, int flags,
                              bool device) {
  for (int r = 0; r < comm->nRanks; ++r) {
    const WinClaim& c = claims[r];
    if (c.bad)
      return batonError(ncclInvalidArgument,
                        "ncclCommWindowRegister: rank %d passed invalid arguments (its error says which), so no rank "
                        "registers this window",
                        r);
    if (c.flags != flags)
      return batonError(ncclInvalidArgument,
                        "ncclCommWindowRegister: winFlags differ: rank %d passed %d, rank %d passed %d; every rank "
                        "must pass the same",
                        comm->rank, flags, r, c.flags);
    if (c.device != (int32_t)device)
      return batonError(ncclInvalidArgument,
                        "ncclCommWindowRegister: rank %d's window is %s memory and rank %d's is %s; every rank "
                        "registers device memory or every rank host memory",
                        comm->rank, device ? "device" : "host", r, c.device ? "device" : "host");
    if ((flags & NCCL_WIN_COLL_SYMMETRIC) && c.size != size)
      return batonError(ncclInvalidArgument,
                        "ncclCommWindowRegister: a symmetric window has the same size on every rank: rank %d passed "
                        "%zu bytes, rank %d passed %" PRIu64,
                        comm->rank, size, r, c.size);
  }
  return ncclSuccess;
}

// The window as this rank sees it: every rank's buffer as this process (or its device) reaches
// it, and whether the symmetric kernels may use it, which every rank decides alike (a mapping that
// failed on one rank only would otherwise leave the others waiting in its barriers). Registers the
// buffer in the communicator's cache.
ncclResult_t mapWindow(ncclComm* comm, const WindowTable& t, const std::vector<WinClaim>& claims, void* buff,
                       size_t size, int flags, bool device, std::unique_ptr<ncclWindow_vidmem>* out) {
  const int n = comm->nRanks;
  auto w = std::make_unique<ncclWindow_vidmem>();
  w->comm = comm;
  w->base = static_cast<char*>(buff);
  w->size = size;
  w->flags = flags;
  w->peerBase.assign(n, nullptr);
  w->allReachable = n <= kMaxSymRanks && comm->nNodes == 1;
  w->device = device;
  for (int r = 0; r < n; ++r) {
    w->peerBase[r] = reach(comm, r, claims[r].ptr, claims[r].allocId, claims[r].size, device);
    w->allReachable &= w->peerBase[r] != nullptr && t.pads[r] != nullptr;
  }
  if (device && w->allReachable) w->peerBaseDev = deviceTable(comm->gpuDev, w->peerBase);
  std::vector<int32_t> usable(n, 0);
  usable[comm->rank] = w->allReachable && (!device || (w->peerBaseDev && t.devPadsDev));
  ncclResult_t res = comm->bootstrap->allGather(usable.data(), sizeof(int32_t));
  for (int r = 0; r < n; ++r) w->allReachable &= usable[r] != 0;
  if (res == ncclSuccess) res = regCache(comm).add(buff, size, &w->regHandle);
  if (res != ncclSuccess) {
    freeDeviceTable(comm->gpuDev, w->peerBaseDev);
    return res;
  }
  *out = std::move(w);
  return ncclSuccess;
}

}  // namespace

// The steps of windowRegister that touch the table's own pads (WindowTable's friend).
struct WindowRegisterSteps {
  // This rank's pads, made with its first window: in host memory always, and in device memory for
  // the kernels of a GPU communicator's first device window (exported like the windows). Sets the
  // allocation ids peers map them by. Called with t.mu_ held.
  static ncclResult_t makeOwnPads(ncclComm* comm, WindowTable& t, bool devicePad, uint64_t* padAlloc,
                                  uint64_t* devPadAlloc) {
    if (!t.myPad_) {
      void* pad = nullptr;
      BATON_CHECK(memAllocHost(&pad, sizeof(SymPad)));  // the CPU writes it, also on a GPU machine
      t.myPad_ = static_cast<SymPad*>(pad);
    }
    MemAllocation m;
    *padAlloc = memFind(t.myPad_, sizeof(SymPad), &m) ? m.id : 0;
    if (devicePad && !t.myDevPad_) {
      void* pad = nullptr;
      t.cudaDev_ = comm->gpuDev;
      if (memAllocExportable(comm->gpuDev, &pad, sizeof(SymPad)) == ncclSuccess)
        t.myDevPad_ = static_cast<SymPad*>(pad);
      else BATON_WARN("rank %d: no pad in device memory, so no symmetric kernel: %s", comm->rank, lastError());
    }
    *devPadAlloc = t.myDevPad_ && memFind(t.myDevPad_, sizeof(SymPad), &m) ? m.id : 0;
    return ncclSuccess;
  }

  // Every rank's pads as this process reaches them, at the first window; the device pads' table at
  // the first device window. Called with t.mu_ held.
  static void reachPeersPads(ncclComm* comm, WindowTable& t, const std::vector<WinClaim>& claims, bool device) {
    const int n = comm->nRanks;
    if (t.pads.empty()) {
      t.pads.assign(n, nullptr);
      for (int r = 0; r < n; ++r)
        t.pads[r] = reinterpret_cast<SymPad*>(reach(comm, r, claims[r].padPtr, claims[r].padAlloc, sizeof(SymPad)));
      t.epochs.assign(kSymMaxChannels, 0);
      // This process's ranks: named alike in each by the first one's pad allocation (pad_group.h).
      t.padGroup_ = 0, t.padGroupSize_ = 0;
      for (int r = 0; r < n; ++r)
        if (comm->peers[r].pidHash == comm->peers[comm->rank].pidHash) {
          if (!t.padGroup_) t.padGroup_ = claims[r].padAlloc;
          ++t.padGroupSize_;
        }
    }
    if (device && !t.devPadsDev) {
      std::vector<char*> table(n, nullptr);
      bool all = true;
      for (int r = 0; r < n; ++r) {
        const WinClaim& c = claims[r];
        if (c.devPadPtr) table[r] = reach(comm, r, c.devPadPtr, c.devPadAlloc, sizeof(SymPad), true);
        all &= table[r] != nullptr;
      }
      if (all) t.devPadsDev = deviceTable(comm->gpuDev, table);
    }
  }
};

// A window is registered in five steps, every rank taking each: check our own arguments; make our
// pads; all-gather every rank's claim (a bad one included, so every rank fails together); check the
// claims agree; reach every rank's pads and buffer and agree whether the symmetric kernels may use
// the window.
ncclResult_t windowRegister(ncclComm* comm, void* buff, size_t size, ncclWindow_vidmem** win, int flags) {
  WindowTable& t = *comm->windows;
  const LocalClaim own = checkOwnArguments(comm, buff, size, flags);
  std::lock_guard<std::mutex> lock(t.mu_);
  uint64_t padAlloc = 0, devPadAlloc = 0;
  BATON_CHECK(WindowRegisterSteps::makeOwnPads(comm, t, own.device && own.why.empty(), &padAlloc, &devPadAlloc));
  std::vector<WinClaim> claims(comm->nRanks);
  claims[comm->rank] = {reinterpret_cast<uint64_t>(buff),
                        size,
                        own.fromMemAlloc ? own.alloc.id : 0,
                        flags,
                        !own.why.empty(),
                        reinterpret_cast<uint64_t>(t.myPad_),
                        padAlloc,
                        own.device,
                        0,
                        reinterpret_cast<uint64_t>(t.myDevPad_),
                        devPadAlloc};
  BATON_CHECK(comm->bootstrap->allGather(claims.data(), sizeof(WinClaim)));
  if (!own.why.empty())
    return batonError(own.whyCode, "ncclCommWindowRegister: %s (buff %p size %zu)", own.why.c_str(), buff, size);
  BATON_CHECK(checkClaimsAgree(comm, claims, size, flags, own.device));
  WindowRegisterSteps::reachPeersPads(comm, t, claims, own.device);
  std::unique_ptr<ncclWindow_vidmem> w;
  BATON_CHECK(mapWindow(comm, t, claims, buff, size, flags, own.device, &w));
  BATON_INFO(kSubAlloc, "ncclCommWindowRegister: comm %p rank %d buff %p size %zu flags %d: %s", (void*)comm,
             comm->rank, buff, size, flags,
             !w->allReachable ? "some rank's window is not reachable here (another host, or not ncclMemAlloc memory)"
             : own.device     ? "every rank's window mapped into this rank's CUDA device (kernels' loads and stores)"
                              : "every rank's window reachable by loads and stores");
  *win = w.get();
  w->serial = ++t.lastSerial_;
  t.wins_.push_back(std::move(w));
  t.count_ = t.wins_.size();
  return ncclSuccess;
}

ncclResult_t windowDeregister(ncclComm* comm, ncclWindow_vidmem* win) {
  WindowTable& t = *comm->windows;
  std::lock_guard<std::mutex> lock(t.mu_);
  auto it = std::find_if(t.wins_.begin(), t.wins_.end(), [&](const auto& w) { return w.get() == win; });
  if (it == t.wins_.end())
    return batonError(ncclInvalidArgument,
                      "ncclCommWindowDeregister: window %p is not a live window of communicator %p (deregistered "
                      "already, or another communicator's)",
                      (void*)win, (void*)comm);
  BATON_CHECK(regCache(comm).remove(win->regHandle));
  if (win->peerBaseDev) t.retired_.push_back(win->peerBaseDev);
  t.wins_.erase(it);
  t.count_ = t.wins_.size();
  return ncclSuccess;
}

}  // namespace baton

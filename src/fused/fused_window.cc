// The fused stages' symmetric window (fused_window.h).
#include "fused/fused_window.h"

#include <algorithm>

#include "device_api/dev_comm.h"
#include "misc/debug.h"
#include "register/mem_alloc.h"

namespace baton {

FusedWindow::~FusedWindow() {
  // The communicator's window table is cleared by now, so only the memory is left to free.
  if (mem_) ncclMemFree(mem_);
  for (void* m : retired_) ncclMemFree(m);
  devCommReleaseLocal(&dev_);
}

ncclResult_t FusedWindow::ensure(ncclComm* comm, size_t bytes, bool* usable, bool netPuts) {
  if (!dev_.internal) {
    // Signals: one per (pattern, source rank). One barrier ends every fused call.
    const batonDevCommRequirements reqs = {kPatterns * comm->nRanks, 1, netPuts ? 1 : 0};
    BATON_CHECK(batonDevCommCreate(comm, &reqs, &dev_));
    netPuts_ = netPuts;
    seen_.assign((size_t)reqs.signalCount, 0);
    lsaOf_.assign(comm->nRanks, -1);
    for (int l = 0; l < dev_.lsaSize; ++l) lsaOf_[dev_.lsaWorldRank[l]] = l;
  }
  *usable = dev_.lsaSize > 1 || netPuts_;
  if (bytes <= bytes_) return ncclSuccess;
  // Every rank grows at the same call (the shape is agreed), a rank alone on its host too: the
  // registration is collective over the whole communicator.
  bytes = std::max(bytes, 2 * bytes_);
  bytes = (bytes + NCCL_WIN_REQUIRED_ALIGNMENT - 1) / NCCL_WIN_REQUIRED_ALIGNMENT * NCCL_WIN_REQUIRED_ALIGNMENT;
  void* mem = nullptr;
  ncclResult_t res = memAllocHost(&mem, bytes);  // the CPU writes it, also on a GPU machine
  // Every rank joins the registration even if its allocation failed (then it fails everywhere).
  ncclWindow_t handle = nullptr;
  ncclResult_t reg =
      ncclCommWindowRegister(comm, res == ncclSuccess ? mem : nullptr, bytes, &handle, NCCL_WIN_COLL_SYMMETRIC);
  if (res == ncclSuccess) res = reg;
  batonDevWindow win{};
  if (res == ncclSuccess) res = batonDevWindowGet(&dev_, handle, &win);
  if (res != ncclSuccess) {
    // A registered window stays in the table until the communicator goes (see retired_).
    if (mem) (handle ? retired_.push_back(mem) : (void)ncclMemFree(mem));
    return res;
  }
  if (mem_) retired_.push_back(mem_);
  mem_ = mem;
  win_ = win;
  bytes_ = bytes;
  BATON_INFO(kSubInit, "fused: rank %d: symmetric window of %zu bytes, read in place by the %d ranks of its host%s",
             comm->rank, bytes, dev_.lsaSize, netPuts_ ? ", written with puts by the others" : "");
  return ncclSuccess;
}

void FusedWindow::account(Pattern p) {
  ++calls_[p];
  for (int s = 0; s < dev_.nRanks; ++s)
    if (local(s) || netPuts_) ++seen_[signal(p, s)];
}

char* FusedWindow::writable(int rank, size_t offset, size_t bytes) {
  if (local(rank)) return base(rank) + offset;
  if (stage_.size() < bytes) stage_.resize(bytes);
  return stage_.data();
}

ncclResult_t FusedWindow::deliver(int rank, Pattern p, size_t offset, size_t bytes) {
  if (local(rank)) {
    signalPeer(rank, p);
    return ncclSuccess;
  }
  return batonDevPutSignalHost(&dev_, &win_, rank, offset, stage_.data(), bytes, signal(p, dev_.rank));
}

}  // namespace baton

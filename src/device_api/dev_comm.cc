// The host side of the device-side API (include/baton/device.h, lesson 11): a device communicator's
// pads and the peer pointers device code reads.
//
// Each rank's pad is ncclMemAlloc memory registered as a symmetric window, so the window code maps
// the pads of the ranks of this host (the LSA team) and leaves the others unreachable. The pad holds
// the rank's signals, a slot per (barrier, world rank) that peers write their epochs into, and the
// rank's own barrier epochs, one 128-byte line each (baton_dev's layout). The entry points check
// their arguments (src/api/device_api.cc); this is the work.
#include "device_api/dev_comm.h"

#include <cstring>
#include <memory>

#include "comm.h"
#include "device_api/net_puts.h"
#include "misc/debug.h"
#include "register/mem_alloc.h"
#include "register/window.h"

namespace baton {
namespace {

struct DevCommState {
  void* pad = nullptr;
  ncclWindow_t win = nullptr;
  std::unique_ptr<NetPuts> netPuts;  // reqs->netPuts with ranks on other hosts
};

}  // namespace

void devCommReleaseLocal(batonDevComm* devComm) {
  auto* st = static_cast<DevCommState*>(devComm->internal);
  if (!st) return;
  st->netPuts.reset();
  ncclMemFree(st->pad);
  delete st;
  devComm->internal = nullptr;
}

ncclResult_t devCommCreate(ncclComm* comm, const batonDevCommRequirements& r, batonDevComm* devComm) {
  const char* fn = "batonDevCommCreate";
  const size_t words =
      ((size_t)r.signalCount + (size_t)r.barrierCount * comm->nRanks + r.barrierCount + 1) * baton_dev::kWordsPerLine;
  const size_t bytes = (words * sizeof(uint64_t) + NCCL_WIN_REQUIRED_ALIGNMENT - 1) / NCCL_WIN_REQUIRED_ALIGNMENT *
                       NCCL_WIN_REQUIRED_ALIGNMENT;
  auto* st = new DevCommState;
  ncclResult_t res = memAllocHost(&st->pad, bytes);  // the CPU writes it, also on a GPU machine
  // Zeroed before the window's all-gather: no peer holds a pointer to it until every rank is past it.
  if (res == ncclSuccess) memset(st->pad, 0, bytes);
  // Every rank joins the registration even if its allocation failed (it then fails everywhere).
  ncclResult_t reg =
      ncclCommWindowRegister(comm, res == ncclSuccess ? st->pad : nullptr, bytes, &st->win, NCCL_WIN_COLL_SYMMETRIC);
  if (res == ncclSuccess) res = reg;
  if (res != ncclSuccess) {
    if (st->pad) ncclMemFree(st->pad);
    delete st;
    return res;
  }
  batonDevComm d{};
  d.rank = comm->rank;
  d.nRanks = comm->nRanks;
  d.signalCount = r.signalCount;
  d.barrierCount = r.barrierCount;
  d.abortFlag = &comm->abortFlag;
  d.timeoutNs = comm->tun.waitTimeoutNs;
  d.internal = st;
  auto undo = [&](ncclResult_t why) {
    st->netPuts.reset();
    ncclCommWindowDeregister(comm, st->win);
    ncclMemFree(st->pad);
    delete st;
    return why;
  };
  for (int w = 0; w < comm->nRanks; ++w) {
    char* base = st->win->peerBase[w];
    if (!base) continue;
    if (d.lsaSize == BATON_DEV_MAX_LSA)
      return undo(batonError(ncclInvalidUsage, "%s: more than %d ranks on this host", fn, BATON_DEV_MAX_LSA));
    if (w == comm->rank) d.lsaRank = d.lsaSize;
    d.lsaWorldRank[d.lsaSize] = w;
    d.lsaPad[d.lsaSize++] = reinterpret_cast<uint64_t*>(base);
  }
  if (r.netPuts && d.lsaSize < d.nRanks)
    if (ncclResult_t pr = NetPuts::create(comm, d, &st->netPuts); pr != ncclSuccess) return undo(pr);
  BATON_INFO(kSubInit, "%s: comm %p rank %d: LSA team of %d (LSA rank %d), %d signals, %d barriers", fn, (void*)comm,
             comm->rank, d.lsaSize, d.lsaRank, r.signalCount, r.barrierCount);
  *devComm = d;
  return ncclSuccess;
}

ncclResult_t devCommDestroy(ncclComm* comm, batonDevComm* devComm) {
  auto* st = static_cast<DevCommState*>(devComm->internal);
  // No peer may still signal into this pad: every rank arrives here first, and every put sent to
  // this rank from another host is applied (its sender's end marker came after it).
  ncclResult_t res = comm->bootstrap->barrier();
  if (st->netPuts) {
    ncclResult_t f = st->netPuts->finish();
    if (res == ncclSuccess) res = f;
    st->netPuts.reset();
  }
  ncclResult_t dereg = ncclCommWindowDeregister(comm, st->win);
  ncclResult_t freed = ncclMemFree(st->pad);
  delete st;
  devComm->internal = nullptr;
  if (res == ncclSuccess) res = dereg;
  if (res == ncclSuccess) res = freed;
  return res;
}

ncclResult_t devWindowGet(const batonDevComm* devComm, ncclWindow_t win, batonDevWindow* out) {
  const char* fn = "batonDevWindowGet";
  auto* st = static_cast<DevCommState*>(devComm->internal);
  if ((int)win->peerBase.size() != devComm->nRanks || win->comm != st->win->comm)
    return batonError(ncclInvalidArgument, "%s: window %p belongs to another communicator", fn, (void*)win);
  // The device API runs on the CPU here (its puts and signals are host code): a window of device
  // memory holds pointers only kernels may use.
  if (win->device)
    return batonError(ncclInvalidUsage,
                      "%s: window %p is device memory; the device API runs on the CPU and takes windows of host "
                      "memory",
                      fn, (void*)win);
  batonDevWindow w{};
  w.size = win->size;
  w.serial = win->serial;
  for (int l = 0; l < devComm->lsaSize; ++l) {
    w.lsaBase[l] = win->peerBase[devComm->lsaWorldRank[l]];
    if (!w.lsaBase[l])
      return batonError(ncclInvalidArgument,
                        "%s: rank %d's window is not reachable by loads and stores from rank %d (register ncclMemAlloc "
                        "memory for a window peers on this host can map)",
                        fn, devComm->lsaWorldRank[l], devComm->rank);
  }
  *out = w;
  return ncclSuccess;
}

ncclResult_t devPutSignalHost(const batonDevComm* devComm, const batonDevWindow* win, int peer, size_t offset,
                              const void* src, size_t bytes, int signal) {
  const char* fn = "batonPutSignal";
  for (int l = 0; l < devComm->lsaSize; ++l)
    if (devComm->lsaWorldRank[l] == peer) {  // arguments the inline path accepts never come here; still correct
      if (bytes) memcpy(win->lsaBase[l] + offset, src, bytes);
      batonSignalAdd(*devComm, l, signal, 1);
      return ncclSuccess;
    }
  auto* st = static_cast<DevCommState*>(devComm->internal);
  if (!st->netPuts)
    return batonError(ncclInvalidUsage,
                      "%s: rank %d is on another host, and this device communicator was created without "
                      "reqs->netPuts",
                      fn, peer);
  return st->netPuts->put(peer, win->serial, offset, src, bytes, signal);
}

}  // namespace baton

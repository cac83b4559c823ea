// Checks of the device-side API (include/baton/device.h) for one rank, run by every rank of a
// communicator at once (threads or processes): a device communicator and a symmetric window, then
// rounds in which each rank stores into every LSA peer's window through batonLsaPointer and signals
// it, waits for its own signal to count every peer's store, checks what arrived, and passes a
// barrier before the next round may overwrite it. Header-only (collective_tests, fused_worker).
#pragma once

#include <cstdint>
#include <string>

#include "baton/device.h"
#include "nccl.h"

namespace devcheck {

inline std::string fail(const char* what, ncclResult_t r) {
  return std::string(what) + ": " + ncclGetErrorString(r) + ": " + ncclGetLastError(nullptr);
}

// Returns "" or the first failure. rounds: how many store/signal/barrier rounds.
inline std::string checkRank(ncclComm_t comm, int rounds) {
  batonDevCommRequirements reqs = {3, 2};
  batonDevComm dev;
  ncclResult_t r = batonDevCommCreate(comm, &reqs, &dev);
  if (r != ncclSuccess) return fail("batonDevCommCreate", r);
  std::string err;
  void* buf = nullptr;
  ncclWindow_t win = nullptr;
  const size_t bytes = 4096;  // slot l (uint64) written by LSA rank l
  r = ncclMemAlloc(&buf, bytes);
  if (r == ncclSuccess) r = ncclCommWindowRegister(comm, buf, bytes, &win, NCCL_WIN_COLL_SYMMETRIC);
  batonDevWindow w;
  if (r == ncclSuccess) r = batonDevWindowGet(&dev, win, &w);
  if (r != ncclSuccess) err = fail("window", r);
  if (err.empty() && (dev.lsaSize < 1 || dev.lsaWorldRank[dev.lsaRank] != dev.rank))
    err = "LSA team: rank " + std::to_string(dev.rank) + " is not itself in it";
  // Every round: signal 1 counts peers' stores (lsaSize per round); barrier 1 closes the round.
  for (int round = 0; err.empty() && round < rounds; ++round) {
    for (int p = 0; p < dev.lsaSize; ++p) {
      auto* slot = static_cast<uint64_t*>(batonLsaPointer(w, dev.lsaRank * sizeof(uint64_t), p));
      *slot = uint64_t(round) * 1000 + dev.rank;  // a plain store: the signal releases it
      batonSignalAdd(dev, p, 1, 1);
    }
    if (!batonWaitSignal(dev, 1, uint64_t(round + 1) * dev.lsaSize)) {
      err =
          "round " + std::to_string(round) + ": batonWaitSignal gave up at " + std::to_string(batonReadSignal(dev, 1));
      break;
    }
    for (int l = 0; l < dev.lsaSize && err.empty(); ++l) {
      const uint64_t got = static_cast<const uint64_t*>(buf)[l], want = uint64_t(round) * 1000 + dev.lsaWorldRank[l];
      if (got != want)
        err = "round " + std::to_string(round) + ": slot " + std::to_string(l) + " holds " + std::to_string(got) +
              ", expected " + std::to_string(want);
    }
    if (err.empty() && !batonLsaBarrier(dev, 1)) err = "round " + std::to_string(round) + ": batonLsaBarrier gave up";
  }
  // A signal no one adds to stays 0; the other barrier works independently.
  if (err.empty() && batonReadSignal(dev, 0) != 0) err = "signal 0 changed without an add";
  if (err.empty() && !batonLsaBarrier(dev, 0)) err = "barrier 0 gave up";
  if (win) ncclCommWindowDeregister(comm, win);
  if (buf) ncclMemFree(buf);
  r = batonDevCommDestroy(comm, &dev);
  if (err.empty() && r != ncclSuccess) err = fail("batonDevCommDestroy", r);
  return err;
}

}  // namespace devcheck

// Checks of the device-side API (include/baton/device.h) for one rank, run by every rank of a
// communicator at once (threads or processes): a device communicator and a symmetric window, then
// rounds in which each rank stores into every LSA peer's window through batonLsaPointer and signals
// it, waits for its own signal to count every peer's store, checks what arrived, and passes a
// barrier before the next round may overwrite it; then rounds of batonPutSignal to every rank of
// the world (peers of other hosts through their proxies), each round into its own slots.
// Header-only (collective_tests, fused_worker).
#pragma once

#include <algorithm>
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
  batonDevCommRequirements reqs = {4, 2, 1};  // signal 3 counts puts
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
  // Put-with-signal to every world rank (this one too): rank r's value for round i lands at slot
  // (i * nRanks + r) of the window's upper half on every rank, and signal 3 counts the puts.
  const int putRounds = std::min(50, int(bytes / 2 / sizeof(uint64_t)) / dev.nRanks);
  for (int round = 0; err.empty() && round < putRounds; ++round) {
    const uint64_t v = 1000000 + uint64_t(round) * 1000 + dev.rank;
    const size_t off = bytes / 2 + (size_t(round) * dev.nRanks + dev.rank) * sizeof(uint64_t);
    for (int p = 0; p < dev.nRanks && err.empty(); ++p)
      if (!batonPutSignal(dev, w, p, off, &v, sizeof v, 3))
        err = "round " + std::to_string(round) + ": batonPutSignal to rank " + std::to_string(p) + ": " +
              ncclGetLastError(nullptr);
  }
  if (err.empty() && !batonWaitSignal(dev, 3, uint64_t(putRounds) * dev.nRanks))
    err = "puts: batonWaitSignal gave up at " + std::to_string(batonReadSignal(dev, 3));
  for (int round = 0; err.empty() && round < putRounds; ++round)
    for (int r = 0; r < dev.nRanks && err.empty(); ++r) {
      const size_t slot = bytes / 2 / sizeof(uint64_t) + size_t(round) * dev.nRanks + r;
      const uint64_t got = static_cast<const uint64_t*>(buf)[slot], want = 1000000 + uint64_t(round) * 1000 + r;
      if (got != want)
        err = "put round " + std::to_string(round) + " from rank " + std::to_string(r) + ": " + std::to_string(got) +
              ", expected " + std::to_string(want);
    }
  // A put outside the window is refused, naming it.
  if (err.empty()) {
    const uint64_t v = 0;
    if (batonPutSignal(dev, w, dev.rank, bytes - 4, &v, sizeof v, 3)) err = "a put past the window's end was accepted";
    else if (std::string(ncclGetLastError(nullptr)).find("outside the") == std::string::npos)
      err = std::string("a put past the window's end: ") + ncclGetLastError(nullptr);
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

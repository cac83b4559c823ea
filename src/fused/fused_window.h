// The symmetric window the fused and optimized stages exchange rows through (lesson 11), and the
// device communicator whose signals say which rows are there.
//
// Made on a communicator's first fused or optimized call, collectively (every rank of the call
// reaches it with the same agreed shape, so the same size), grown the same way, released with the
// communicator (growing at least twofold). Each rank's window holds, in turn for each call:
//   gather:         this rank's row block, which its peers read in place (no gathered copy);
//   reduce-scatter: one fp32 slot per rank, which that rank's GEMM writes its partial for this
//                   rank's block into.
// Signals (one per source rank and pattern) only grow: the window counts what each call expects.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "baton/device.h"
#include "comm.h"

namespace baton {

class FusedWindow {
 public:
  enum Pattern { kGather = 0, kReduceScatter = 1 };
  ~FusedWindow();  // local: the communicator is being freed and its window table cleared

  // Collective. The device communicator on first use, then, if every rank is in this rank's LSA
  // team, a window of at least `bytes` on every rank. *usable: false when some rank is on another
  // host (its memory is not reachable by loads and stores from here).
  ncclResult_t ensure(ncclComm* comm, size_t bytes, bool* usable);

  const batonDevComm& dev() const { return dev_; }
  char* base(int rank) const { return win_.lsaBase[rank]; }  // every rank is an LSA rank, in world order
  int signal(Pattern p, int source) const { return p * dev_.nRanks + source; }
  // Signal (p, source) reaches this value once chunk `chunk` of this call has arrived.
  uint64_t target(Pattern p, int source, int chunk) const { return seen_[signal(p, source)] + chunk + 1; }
  // The call is over: every source sent `chunks` signals of pattern p to this rank.
  void account(Pattern p, int chunks);

 private:
  batonDevComm dev_{};
  void* mem_ = nullptr;
  ncclWindow_t handle_ = nullptr;
  // Windows outgrown: still registered (a fused call cannot deregister while it is itself in
  // flight), freed with the communicator. Each is at most half the next, so they cost at most as
  // much as the live one.
  std::vector<void*> retired_;
  batonDevWindow win_{};
  size_t bytes_ = 0;
  std::vector<uint64_t> seen_;
};

}  // namespace baton

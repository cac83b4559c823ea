// The symmetric window the fused and optimized stages exchange rows through (lesson 11), and the
// device communicator whose signals say which rows are there. MoE's low-latency stage (lesson 12,
// src/moe/moe_lowlatency.cc) stores tokens, weights and partials through the same window.
//
// Made on a communicator's first fused or optimized call, collectively (every rank of the call
// reaches it with the same agreed shape, so the same size), grown the same way, released with the
// communicator (growing at least twofold). Each rank's window holds, in turn for each call:
//   gather:         this rank's row block, which the peers of its host read in place (no
//                   gathered copy);
//   reduce-scatter: one fp32 slot per rank, which a peer of this host's GEMM writes its partial
//                   for this rank's block into.
// Peers on other hosts are reached through the channels instead (row_exchange.h), except by a
// window made with puts (MoE's low-latency stage across hosts): there every rank has a window and
// a rank of another host is written with batonPutSignal through the proxies (src/device_api/net_puts.h).
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
  enum Pattern { kGather, kReduceScatter, kMoeDispatch, kMoeWeights, kMoePartials, kPatterns };
  ~FusedWindow();  // local: the communicator is being freed and its window table cleared

  // Collective. The device communicator on first use, then, if this host has other ranks of the
  // communicator (an LSA team of two or more), a window of at least `bytes` on every rank.
  // *usable: false when this rank shares its host with no other (only the channels reach its peers).
  // netPuts (every rank passes the same): the device communicator also reaches the other hosts'
  // ranks, and every rank counts as usable.
  ncclResult_t ensure(ncclComm* comm, size_t bytes, bool* usable, bool netPuts = false);

  const batonDevComm& dev() const { return dev_; }
  bool local(int rank) const { return lsaOf_[rank] >= 0; }           // on this host: reached through the window
  char* base(int rank) const { return win_.lsaBase[lsaOf_[rank]]; }  // a local rank's window, mapped here
  int signal(Pattern p, int source) const { return p * dev_.nRanks + source; }
  // Adds 1 to local rank `rank`'s signal (p, this rank), releasing this thread's earlier stores.
  void signalPeer(int rank, Pattern p) const { batonSignalAdd(dev_, lsaOf_[rank], signal(p, dev_.rank), 1); }
  // Signal (p, source) reaches this value once this call's block has arrived.
  uint64_t target(Pattern p, int source) const { return seen_[signal(p, source)] + 1; }
  // The call is over: every source it reaches (local ones; every one with puts) sent its one
  // signal of pattern p to this rank.
  void account(Pattern p);
  // Where to write `bytes` for rank `rank` at `offset` of its window: the window itself on this
  // host, else a staging buffer that deliver() puts there (valid until the next writable()).
  char* writable(int rank, size_t offset, size_t bytes);
  // Signals (p, this rank) on `rank` once what was written through writable() is there: on this
  // host a release add after the stores; on another, a put of the staged bytes, then its add.
  ncclResult_t deliver(int rank, Pattern p, size_t offset, size_t bytes);
  // Calls that went through the window, per pattern (account's count): what the tests read to see
  // that the fused and optimized stages took the window and not the channels.
  uint64_t callsThrough(Pattern p) const { return calls_[p]; }
  // MoE's combine-type calls so far (the same on every rank): which half of its double buffer a
  // call uses.
  uint64_t moeCombines = 0;
  // MoE's low-latency regions (dispatch, weights, partials), in bytes: the most any call needed.
  size_t moeRegions[3] = {0, 0, 0};

 private:
  batonDevComm dev_{};
  void* mem_ = nullptr;
  // Windows outgrown: still registered (a fused call cannot deregister while it is itself in
  // flight), freed with the communicator. Each is at most half the next, so they cost at most as
  // much as the live one.
  std::vector<void*> retired_;
  batonDevWindow win_{};
  size_t bytes_ = 0;
  std::vector<uint64_t> seen_;
  std::vector<int> lsaOf_;  // world rank -> LSA index, -1 on another host
  bool netPuts_ = false;
  std::vector<char> stage_;  // what deliver() puts to a rank of another host
  uint64_t calls_[kPatterns] = {};
};

}  // namespace baton

// The window side of the fused and optimized stages (lesson 11): what a rank does for the peers of
// its own host, through the communicator's symmetric window (fused_window.h), written against the
// device-side API (include/baton/device.h) as a GPU kernel would be. row_exchange.cc combines it
// with the channels, which reach the peers of other hosts.
//
// Memory-ordering contract: a rank's stores of a block (its rows copied into its own window, or
// its partial written into the owner's window) are released by the signal add that follows them
// (one per block: on one host a block is there as soon as its copy ends, so finer signals would
// hide nothing), and acquired by the reader's batonWaitSignal before it loads the block. The LSA
// barrier that ends every call orders every load of this call before any store of the next one.
#pragma once

#include "fused/fused_call.h"
#include "fused/fused_window.h"

namespace baton {

// The i-th peer (i = 0 .. nRanks-2) a rank visits: r+1, r+2, ... when rotated (no two ranks start
// with the same peer), else 0, 1, ... (every rank reads rank 0 first).
int visitAt(const FusedCall& call, bool rotate, int i);
// The i-th rank whose partial for this rank's block is produced (the ranks that visit it i-th).
int sourceAt(const FusedCall& call, bool rotate, int i);

// This rank's rows into its own window, then a signal to every peer of this host.
void publishRows(FusedWindow& w, const void* shard, size_t blockBytes);
// Waits until local rank `source` signalled this call's block of pattern p.
ncclResult_t waitBlock(const FusedCall& call, const FusedWindow& w, FusedWindow::Pattern p, int source);
// Every local rank is done with every window before any returns (and may start the next call).
ncclResult_t endWindowCall(const FusedCall& call, FusedWindow& w, FusedWindow::Pattern p);

}  // namespace baton

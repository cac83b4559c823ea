// The fused and optimized stages' exchange on one host (lesson 11): the two patterns of
// row_exchange.h through the communicator's symmetric window (fused_window.h), written against
// the device-side API (include/baton/device.h) as a GPU kernel would be.
//
// Memory-ordering contract: a rank's stores of a chunk (its rows copied into its own window, or
// its partial written into the owner's window) are released by the batonSignalAdd that follows
// them (one signal per block: on one host a block is there as soon as its copy ends, so finer
// signals would hide nothing), and acquired by the reader's batonWaitSignal before it loads the chunk. The LSA barrier
// that ends every call orders every load of this call before any store of the next one.
#pragma once

#include "fused/fused_window.h"
#include "fused/row_exchange.h"

namespace baton {

// How the window stages walk the peers.
struct WindowPlan {
  bool rotate = false;  // rank r visits r+1, r+2, ... (else 0, 1, ...: every rank reads rank 0 first)
};

ncclResult_t windowGatherRows(const FusedCall& call, FusedWindow& w, const WindowPlan& plan, const void* shard,
                              size_t rowBytes, char* gathered, bool wantGathered, const ConsumeRows& consume);
ncclResult_t windowReduceScatterRows(const FusedCall& call, FusedWindow& w, const WindowPlan& plan, size_t rowFloats,
                                     const ProduceRows& produce, float* out);

}  // namespace baton

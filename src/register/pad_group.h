// When the pads of a communicator's thread ranks may be freed (lesson 09's symmetric barriers).
//
// A rank's pad is read by its peers' barriers, and a rank leaves a barrier as soon as it has seen
// every peer arrive, while a peer may still be polling the rank's line. A peer in another process
// reads its own mapping, which keeps the memory alive; a peer thread of this process reads the
// rank's own allocation. So the pads of one communicator's ranks in this process are freed
// together, by the last of those ranks to free its communicator, as NCCL frees what its ranks in
// one process share when the last of them is reclaimed (commReclaim, NCCL's src/init.cc).
#pragma once

#include <cstdint>

namespace baton {

// Hands this rank's pads (`hostPad`, and `devicePad` or nullptr, both from ncclMemAlloc's table)
// to the group named `group` (alike on each of its `members` ranks in this process: the first
// one's pad allocation id, which this process never reuses); the last member to hand its pads
// over frees every member's. One member, or group 0: freed now.
void releasePads(uint64_t group, int members, void* hostPad, void* devicePad);

}  // namespace baton

// Which AlltoAll algorithm (algorithms/alltoall.h) a call runs: the one BATON_ALLTOALL_ALGO forces,
// else a choice by rank layout, buffer and size measured on this machine (lesson 12, docs/perf.md):
// stores into the peers' windows where the receive buffer lies in a symmetric window every rank
// maps (one host); Bruck across hosts while the whole buffer is at most the Bruck threshold (each
// NET message has a fixed cost, and Bruck sends log2 n of them instead of n-1); direct otherwise.
// A forced window without such a buffer runs direct. The threshold is BATON_ALLTOALL_BRUCK_BYTES if
// set, else what `baton-perf alltoall --calibrate` measured at the nearest rank count (the tuning
// file), else a built-in threshold that grows with the messages Bruck saves (builtInBruckBytes).
//
// Every rank must choose alike. ncclAlltoAll's count is the same on every rank, so its size can
// decide; an AlltoAllv's sizes differ per rank, so `sizeAgreed` false leaves auto at direct, or at
// window: whether recvbuff lies in a symmetric window is alike on every rank (NCCL's rule for
// symmetric buffers: if one rank passes one, every rank does).
#pragma once

#include <cstddef>

#include "comm.h"

namespace baton {

// *why (if not NULL): the rule that decided, in words (static storage).
// Where a call's receive buffer stands for the window algorithm: the communicator has no symmetric
// window on one host (kWindowNone), recvbuff's `bytes` lie outside them (kWindowOutside), or
// inside one (kWindowInside; also a NULL recvbuff, which only a rank receiving nothing passes: it
// goes with its peers, whose buffers decide).
enum AlltoAllWindowFit { kWindowNone, kWindowOutside, kWindowInside };
AlltoAllWindowFit alltoallWindowFit(ncclComm* comm, const void* recvbuff, size_t bytes);
// A forced window runs wherever the communicator has a symmetric window (a rank whose buffer is
// outside it then fails with a message, as do its peers, instead of choosing differently).
int chooseAlltoAll(const ncclComm* comm, size_t blockBytes, bool sizeAgreed, AlltoAllWindowFit fit,
                   const char** why = nullptr);
// The Bruck threshold in bytes of the whole buffer; *source (static or the model's storage): where
// it came from.
size_t alltoallBruckBytes(const ncclComm* comm, const char** source = nullptr);
// The threshold without a calibration: Bruck saves n-1-ceil(log2 n) NET messages per rank and
// costs about ceil(log2 n)/2 extra passes over the buffer, so the buffer at which the two balance
// grows as (n-1-ceil(log2 n)) / ceil(log2 n). Scaled to 64 KiB at 4 ranks and rounded up to a power
// of two: 4 and 5 ranks 64 KiB, 6 and 7 ranks 128 KiB, 8 ranks 256 KiB, 16 ranks 512 KiB, 3 ranks 0
// (its 2 rounds save nothing). Measured between two namespaced hosts at 4 and 8 ranks (docs/perf.md).
size_t builtInBruckBytes(int nRanks);

}  // namespace baton

// Which AlltoAll algorithm (algorithms/alltoall.h) a call runs: the one BATON_ALLTOALL_ALGO forces,
// else a choice by rank layout and size measured on this machine (lesson 12, docs/perf.md):
// Bruck across hosts while the whole buffer is at most BATON_ALLTOALL_BRUCK_BYTES (each NET message
// has a fixed cost, and Bruck sends log2 n of them instead of n-1), direct otherwise.
//
// Every rank must choose alike. ncclAlltoAll's count is the same on every rank, so its size can
// decide; an AlltoAllv's sizes differ per rank, so `sizeAgreed` false leaves auto at direct.
#pragma once

#include <cstddef>

#include "comm.h"

namespace baton {

// *why (if not NULL): the rule that decided, in words (static storage).
int chooseAlltoAll(const ncclComm* comm, size_t blockBytes, bool sizeAgreed, const char** why = nullptr);

}  // namespace baton

// Which AlltoAll algorithm (algorithms/alltoall.h) a call runs: the one BATON_ALLTOALL_ALGO forces,
// else a choice by block size and rank count measured on this machine (lesson 12, docs/perf.md).
#pragma once

#include <cstddef>

#include "comm.h"

namespace baton {

int chooseAlltoAll(const ncclComm* comm, size_t blockBytes);

}  // namespace baton

// All-or-nothing AllReduce (lesson 10, BATON_ATOMIC_COLLECTIVES=1; atomic_allreduce.cc).
#pragma once

#include <functional>

#include "comm.h"
#include "task.h"

namespace baton {

// Runs `run` (the AllReduce), votes with the other ranks on the outcome, and restores the input
// unless every rank succeeded.
ncclResult_t atomicAllReduce(ncclComm* comm, const Task& t, const std::function<ncclResult_t()>& run);

}  // namespace baton

// Groups: ncclGroupStart/End and the implicit group of one around every call made outside them.
//
// Inside a group nothing runs: init jobs and operations are queued per calling thread. At the
// outermost ncclGroupEnd the init jobs run concurrently (one thread driving N ranks works), then each
// communicator's operations are planned onto its channel workers, then a blocking group waits.
#pragma once

#include <functional>

#include "comm.h"
#include "task.h"

namespace baton {

bool inGroup();
ncclResult_t groupStart();
ncclResult_t groupEnd();
// Queue an operation for `comm` in the current group (the caller wraps a lone call in start/end).
void groupAddTask(ncclComm* comm, const Task& task);
// Queue a communicator's collective init work (CommInitRank / CommSplit inside a group).
void groupAddInitJob(ncclComm* comm, std::function<ncclResult_t()> job);
// Queue a collective call that must rendezvous with its peers' (ncclCommWindowRegister inside a
// group): it runs at ncclGroupEnd beside the group's init jobs.
void groupAddCollectiveCall(ncclComm* comm, std::function<ncclResult_t()> job);
// Record an argument error seen inside a group: ncclGroupEnd reports it and drops the group.
ncclResult_t groupRecordError(ncclResult_t err);

}  // namespace baton

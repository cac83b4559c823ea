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
// Record an argument error seen inside a group: ncclGroupEnd reports it and drops the group.
ncclResult_t groupRecordError(ncclResult_t err);

// Runs `job` as `comm`'s initialisation: blocking comms inline, non-blocking ones on a thread
// (ncclCommGetAsyncError reports ncclInProgress until it is done).
ncclResult_t runInitJob(ncclComm* comm, std::function<ncclResult_t()> job);

// Planner (enqueue.cc): hand `tasks` to comm's workers; `done` counts one part per work item.
// Outside a group: runs one collective on an idle blocking communicator at once, on the calling
// thread (*handled = true, the result returned), or leaves it to the group path (*handled = false).
ncclResult_t runCollectiveNow(ncclComm* comm, const Task& task, bool* handled);
// BATON_ATOMIC_COLLECTIVES=1 (atomic_allreduce.cc): runs `run` (the AllReduce), votes with the
// other ranks on the outcome, and restores the input unless every rank succeeded.
ncclResult_t atomicAllReduce(ncclComm* comm, const Task& t, const std::function<ncclResult_t()>& run);
// callerRuns: the calling thread may run channel 0's parts itself (see enqueue.cc: the latency path).
ncclResult_t launchTasks(ncclComm* comm, std::vector<Task>& tasks, std::shared_ptr<class Completion>* done,
                         bool callerRuns);

}  // namespace baton

// How an entry point hands its tasks over: queued in the calling thread's group, or, outside a
// group, run at once as a group of one. ARGCHECK fails the group with a validation error, as NCCL
// does.
#pragma once

#include <vector>

#include "comm.h"
#include "group.h"
#include "profiler/profiler_events.h"
#include "task.h"

namespace baton {

inline ncclResult_t submit(ncclComm* comm, const std::vector<Task>& tasks) {
  const bool implicit = !inGroup();
  if (implicit) groupStart();
  for (const Task& t : tasks) groupAddTask(comm, t);
  const ncclResult_t res = implicit ? groupEnd() : ncclSuccess;
  if (comm->profiler) profileApiCallsEnd();  // the calls' CollApi / P2pApi events (profiler_events.h)
  return res;
}

}  // namespace baton

#define ARGCHECK(call)                                           \
  do {                                                           \
    ncclResult_t r_ = (call);                                    \
    if (r_ != ncclSuccess) return ::baton::groupRecordError(r_); \
  } while (0)

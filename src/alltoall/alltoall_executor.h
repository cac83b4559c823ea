// Runs an AlltoAll recorded as one task (Task::kAlltoAll): pairwise or Bruck (algorithms/alltoall.h)
// on the point-to-point connections, one round after another, each round a batch of
// sendrecv_executor.h; or by stores into the peers' windows (algorithms/alltoall_window.h).
#pragma once

#include <memory>
#include <vector>

#include "comm.h"
#include "exec_model.h"
#include "task.h"

namespace baton {

// Task::runRounds of the tasks alltoallTasks makes.
ncclResult_t runAlltoAll(ncclComm* comm, const Task& task, ExecCtx& ctx);

// The tasks of one AlltoAll(v) running `algo` (an AlltoAllAlgo other than auto): the direct one's
// sends and receives, or one task that runs the rounds. layout: task.h's Task::layout, in bytes.
std::vector<Task> alltoallTasks(ncclComm* comm, int algo, const void* sendbuff, void* recvbuff,
                                std::shared_ptr<const std::vector<size_t>> layout, bool uniform);

}  // namespace baton

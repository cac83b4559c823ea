// Runs a group's sends and receives for one communicator: connect the peers it needs, copy the
// sends to itself locally, then progress every transfer round-robin until all are done.
#pragma once

#include <vector>

#include "comm.h"
#include "exec_model.h"
#include "task.h"

namespace baton {

ncclResult_t runSendRecvBatch(ncclComm* comm, const std::vector<Task>& tasks, ExecCtx& ctx);

}  // namespace baton

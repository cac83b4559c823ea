// Runs a group's sends and receives for one communicator: connect the peers it needs, copy the
// sends to itself locally, then progress every transfer round-robin until all are done.
#pragma once

#include <vector>

#include "comm.h"
#include "exec_model.h"
#include "task.h"

namespace baton {

// A send to ourselves is a copy into the matching receive: the k-th send to self pairs with the
// k-th receive from self. Unequal numbers or sizes are ncclInvalidUsage (both backends).
struct SelfCopy {
  const void* src;
  void* dst;
  size_t bytes;
};
ncclResult_t pairSelfCopies(int rank, const std::vector<Task>& tasks, std::vector<SelfCopy>* out);

ncclResult_t runSendRecvBatch(ncclComm* comm, const std::vector<Task>& tasks, ExecCtx& ctx);

// A group's point-to-point work: its sends and receives as one batch, then its round-based
// AlltoAlls (Task::kAlltoAll, each run by its runRounds) in the order they were issued (every rank
// issues them in the same order, so both ends of a connection see the same sequence of messages).
ncclResult_t runPointToPoint(ncclComm* comm, const std::vector<Task>& tasks, ExecCtx& ctx);

}  // namespace baton

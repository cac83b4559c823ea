// The planner (enqueue.cc): a group's tasks for one communicator become work items on its channel
// workers, each collective with the algorithm, protocol and channels the tuner chose.
#pragma once

#include <memory>
#include <vector>

#include "comm.h"
#include "task.h"

namespace baton {

class Completion;

// Hands `tasks` to comm's workers; `done` counts one part per work item. callerRuns: the calling
// thread may run channel 0's parts itself (the latency path).
ncclResult_t launchTasks(ncclComm* comm, std::vector<Task>& tasks, std::shared_ptr<Completion>* done, bool callerRuns);
// Runs `tasks` now and waits for them, the calling thread taking channel 0's part (for operations
// that communicate from inside one call: the fused and MoE operations).
ncclResult_t runTasksNow(ncclComm* comm, std::vector<Task> tasks);
// Outside a group: runs one collective on an idle blocking communicator at once, on the calling
// thread (*handled = true, the result returned), or leaves it to the group path (*handled = false).
ncclResult_t runCollectiveNow(ncclComm* comm, const Task& task, bool* handled);
// The same for one ncclSend or ncclRecv whose connector to the peer exists.
ncclResult_t runSendRecvNow(ncclComm* comm, const Task& task, bool* handled);
// The execution context of channel `channel`'s work on comm (waits, abort flag, trace, jitter), for
// an operation of `opBytes` (which decides whether its waits lend the proxy a hand, proxy.h).
ExecCtx makeCtx(ncclComm* comm, int channel, size_t opBytes = 0);

}  // namespace baton

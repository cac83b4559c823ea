// BATON_CHECK_MODE=debug (lesson 14): before each collective moves data, every rank's arguments go
// around channel 0's ring (an AllGather of one 32-byte record per rank), so a rank that called it
// with another count, type, operator, root or collective fails it on every rank with
// ncclInvalidUsage naming both sides, instead of hanging or corrupting. Costs one small AllGather
// per collective: a debugging mode, off by default (the protocols' free check of each step's size
// stays on: lesson 14, "What is checked without a dump").
#pragma once

#include <cstdint>

#include "nccl.h"
#include "task.h"

struct ncclComm;

namespace baton {

// Exchanges and compares collective `t`'s arguments (operation number `seq`) on channel 0's ring,
// with `ctx` (channel 0's); call from the thread that runs channel 0's part, before the kernel.
// ncclInvalidUsage names the first rank whose arguments differ and both sides' values. An exchange
// that did not complete returns ncclSuccess with ctx.failed set: the caller reports it as any wait.
ncclResult_t checkCollArgs(ncclComm* comm, const Task& t, uint64_t seq, ExecCtx& ctx);

}  // namespace baton

// The registry of live communicators (comm_registry.cc): init registers a communicator, commFree
// takes it out, and every entry point checks its communicator argument here first, so a destroyed
// or foreign pointer is an error with a message, not a crash. Core state: the core registers at
// init, and the entry points (src/api/) and the subsystems' own checks read it.
#pragma once

#include <functional>

#include "nccl.h"

struct ncclComm;

namespace baton {

bool registerComm(ncclComm* comm);  // false: the registry is full
void unregisterComm(ncclComm* comm);
// Calls fn on every live, initialised communicator; none is freed meanwhile (a dump on a signal).
void forEachReadyComm(const std::function<void(ncclComm*)>& fn);
// Validates `comm` for API function `fn`: NULL, not live, aborted, still initialising, failed.
ncclResult_t checkCommReady(ncclComm* comm, const char* fn);
ncclResult_t checkCommLive(ncclComm* comm, const char* fn);
// A communicator that may be the parent of a split or shrink: live, initialised, not finalized;
// revoked or failed is fine (that is what shrink is for).
ncclResult_t checkCommParent(ncclComm* comm, const char* fn);

}  // namespace baton

// Child communicators of a parent (split, shrink, grow), and how a parent stops a child's init.
#pragma once

#include <functional>
#include <vector>

#include "comm.h"

namespace baton {

// Stops this rank's in-flight work on comm (raise the abort flag, wait for it to drain), then
// lowers the flag again so the bootstrap can be used: revoke and NCCL_SHRINK_ABORT.
void commQuiesce(ncclComm* comm);
// A child communicator of `parent` (split, shrink, grow): this rank is newRank of nRanks, and
// parentRanks are the parent's members in it (a member found dead aborts the child's init).
// getId fetches the child's unique id (childIdFromRank0 for split and shrink). Blocking: returns
// when the child is made; non-blocking: *newcomm at once, ncclInProgress, the init on a thread.
ncclResult_t commInitChild(ncclComm* parent, const std::vector<int>& parentRanks, int nRanks, int newRank,
                           std::function<ncclResult_t(ncclUniqueId*)> getId, const ncclConfig_t& cfg, const char* fn,
                           ncclComm_t* newcomm);
// The child's rank 0 makes a bootstrap root and sends its id to the other members over the
// parent's bootstrap (`tag`), point to point: no collective over the parent.
ncclResult_t childIdFromRank0(ncclComm* parent, const std::vector<int>& parentRanks, int newRank, uint64_t tag,
                              ncclUniqueId* id);

// The watchdog found rank `failed` of comm dead: a child being made with it as a member stops.
void commAbortChildInit(ncclComm* comm, int failed);

}  // namespace baton

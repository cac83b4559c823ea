// Membership changes (lesson 10), the work behind ncclCommRevoke, ncclCommShrink and
// batonCommGetFailedRanks (src/api/fault_api.cc checks their arguments first, and nothing changes
// before every check has passed); and ncclCommGetUniqueId / ncclCommGrow's (grow.cc).
#pragma once

#include <set>

#include "comm.h"

namespace baton {

// Revokes `comm` (live, not revoked yet): no new work from now on, the ring neighbours still
// waiting on this rank stop too, and in-flight operations end (with an error).
void commRevoke(ncclComm* comm);

// A communicator of `comm`'s ranks but `excluded` (valid ranks of comm, the caller not among them);
// `config` NULL inherits the parent's; NCCL_SHRINK_ABORT stops the parent's work first. `fn` names
// the call in messages. Blocking or not, inside a group or not, as ncclCommShrink.
ncclResult_t commShrink(ncclComm* comm, const std::set<int>& excluded, ncclComm_t* newcomm, const ncclConfig_t* config,
                        int shrinkFlags, const char* fn);

// The failed ranks the survivors agree on (the watchdog's failedRanks): the first maxRanks of them
// in `ranks`, their number in *nFailed; an error if this rank is among them, is on a minority
// side, or `ranks` is too short. Arguments checked by the caller.
ncclResult_t commFailedRanks(ncclComm* comm, int* ranks, int maxRanks, int* nFailed, const char* fn);

// A grow id (ncclCommGetUniqueId's) carries a marker in its last 8 bytes, which ncclGetUniqueId's
// ids keep zero: ncclCommInitRank refuses a grow id, and ncclCommGrow a plain one.
bool isGrowId(const ncclUniqueId* id);
// The id without the marker: what the grown communicator's ranks init over.
ncclUniqueId growIdPlain(const ncclUniqueId& id);
// ncclCommGetUniqueId on a ready communicator without an unused grow id: a fresh bootstrap root,
// marked, kept as comm's grow id until a grow uses it.
ncclResult_t commMakeGrowId(ncclComm* comm, ncclUniqueId* uniqueId);
// ncclCommGrow on an existing rank, arguments checked (uniqueId NULL, or comm's grow id): the ranks
// learn the id from the one that passed it and init the grown communicator of nRanks.
ncclResult_t commGrow(ncclComm* comm, int nRanks, const ncclUniqueId* uniqueId, ncclComm_t* newcomm,
                      const ncclConfig_t* config, const char* fn);

}  // namespace baton

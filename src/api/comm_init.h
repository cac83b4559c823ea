// ncclCommInitRank's body (comm_api.cc), shared by the entry points that make a communicator from an
// id: CommInitRank, CommInitRankConfig, CommInitAll, and a new rank's CommGrow.
#pragma once

#include "nccl.h"

namespace baton {

// Now, on a thread (non-blocking), or at ncclGroupEnd. `fn` names the entry point in errors;
// cudaDev -1: the device current on the calling thread.
ncclResult_t initRank(ncclComm_t* out, int nranks, const ncclUniqueId* commId, int rank, const ncclConfig_t* config,
                      const char* fn, int cudaDev);

}  // namespace baton

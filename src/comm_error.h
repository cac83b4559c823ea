// A communicator's error state (comm_error.cc): the first failure wins and stops the rest.
#pragma once

#include <string>

#include "nccl.h"

struct ncclComm;

namespace baton {

// Records the communicator's first failure (code and message) and raises its abort flag so this
// rank's other channels drain instead of waiting for a peer that will not come.
void commSetError(ncclComm* comm, ncclResult_t err, const char* message);
// Marks this rank's ring FIFOs with abortedBy (failure, revoke, abort): neighbours stop. The word
// holds rank + 1 and, in its upper half, the failure's cause (commNoteFailureCause) + 1, if known.
void commAnnounceFailure(ncclComm* comm);
// Records `peer` as the rank whose failure stops this communicator (the first one noted stays).
// Call before commSetError, so the announcement carries it.
void commNoteFailureCause(ncclComm* comm, int peer);
// The first failure's message ("" if none).
std::string commFirstError(ncclComm* comm);

}  // namespace baton

// The NCCL 2.28 functions baton does not implement yet.
//
// Each one is exported like any other API function (strong `pncclX`, weak `ncclX`) so programs
// link and run, and each fails loudly: it returns ncclInvalidUsage and leaves a message naming the
// function in ncclGetLastError. None of them touches its output arguments. When a feature lands,
// its function moves out of this file into src/api/'s file for the subsystem that implements it.
#include "api/api.h"
#include "misc/debug.h"

// ---- Communicator lifetime --------------------------------------------------------------------

NCCL_API(ncclResult_t, ncclCommInitRankScalable, ncclComm_t* newcomm, int nranks, int myrank, int nId,
         ncclUniqueId* commIds, ncclConfig_t* config);
ncclResult_t pncclCommInitRankScalable(ncclComm_t* /*newcomm*/, int /*nranks*/, int /*myrank*/, int /*nId*/,
                                       ncclUniqueId* /*commIds*/, ncclConfig_t* /*config*/) {
  return batonError(ncclInvalidUsage,
                    "ncclCommInitRankScalable is not implemented yet in baton (bootstrap has a "
                    "single root; use ncclCommInitRankConfig with one ncclUniqueId)");
}

// ---- Groups -----------------------------------------------------------------------------------

NCCL_API(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t* simInfo);
ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t* /*simInfo*/) {
  return batonError(ncclInvalidUsage,
                    "ncclGroupSimulateEnd is not implemented yet in baton (the group stays open; "
                    "close it with ncclGroupEnd)");
}

// The NCCL 2.28 functions baton does not implement yet.
//
// Each one is exported like any other API function (strong `pncclX`, weak `ncclX`) so programs
// link and run, and each fails loudly: it returns ncclInvalidUsage and leaves a message naming the
// function in ncclGetLastError. None of them touches its output arguments. When a feature lands,
// its function moves out of this file into the one that implements it.
#include "api/api.h"
#include "misc/debug.h"

// ---- Memory -----------------------------------------------------------------------------------

NCCL_API(ncclResult_t, ncclMemAlloc, void** ptr, size_t size);
ncclResult_t pncclMemAlloc(void** /*ptr*/, size_t /*size*/) {
  return batonError(ncclInvalidUsage,
                    "ncclMemAlloc is not implemented yet in baton (in host mode allocate buffers "
                    "with malloc or new)");
}

NCCL_API(ncclResult_t, ncclMemFree, void* ptr);
ncclResult_t pncclMemFree(void* /*ptr*/) {
  return batonError(ncclInvalidUsage,
                    "ncclMemFree is not implemented yet in baton (ncclMemAlloc is not either, so "
                    "there is nothing it could free)");
}

// ---- Communicator lifetime --------------------------------------------------------------------

NCCL_API(ncclResult_t, ncclCommInitRankScalable, ncclComm_t* newcomm, int nranks, int myrank, int nId,
         ncclUniqueId* commIds, ncclConfig_t* config);
ncclResult_t pncclCommInitRankScalable(ncclComm_t* /*newcomm*/, int /*nranks*/, int /*myrank*/, int /*nId*/,
                                       ncclUniqueId* /*commIds*/, ncclConfig_t* /*config*/) {
  return batonError(ncclInvalidUsage,
                    "ncclCommInitRankScalable is not implemented yet in baton (bootstrap has a "
                    "single root; use ncclCommInitRankConfig with one ncclUniqueId)");
}

// ---- Buffer registration ----------------------------------------------------------------------

NCCL_API(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void* buff, size_t size, void** handle);
ncclResult_t pncclCommRegister(const ncclComm_t /*comm*/, void* /*buff*/, size_t /*size*/, void** /*handle*/) {
  return batonError(ncclInvalidUsage,
                    "ncclCommRegister is not implemented yet in baton (buffer registration "
                    "arrives with its own issue)");
}

NCCL_API(ncclResult_t, ncclCommDeregister, const ncclComm_t comm, void* handle);
ncclResult_t pncclCommDeregister(const ncclComm_t /*comm*/, void* /*handle*/) {
  return batonError(ncclInvalidUsage,
                    "ncclCommDeregister is not implemented yet in baton (buffer registration "
                    "arrives with its own issue)");
}

NCCL_API(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
         int winFlags);
ncclResult_t pncclCommWindowRegister(ncclComm_t /*comm*/, void* /*buff*/, size_t /*size*/, ncclWindow_t* /*win*/,
                                     int /*winFlags*/) {
  return batonError(ncclInvalidUsage,
                    "ncclCommWindowRegister is not implemented yet in baton (symmetric-memory "
                    "windows arrive with their own issue)");
}

NCCL_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win);
ncclResult_t pncclCommWindowDeregister(ncclComm_t /*comm*/, ncclWindow_t /*win*/) {
  return batonError(ncclInvalidUsage,
                    "ncclCommWindowDeregister is not implemented yet in baton (symmetric-memory "
                    "windows arrive with their own issue)");
}

// ---- Groups -----------------------------------------------------------------------------------

NCCL_API(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t* simInfo);
ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t* /*simInfo*/) {
  return batonError(ncclInvalidUsage,
                    "ncclGroupSimulateEnd is not implemented yet in baton (the group stays open; "
                    "close it with ncclGroupEnd)");
}

// Buffer registration and windows (lesson 09): ncclMemAlloc / ncclMemFree, ncclCommRegister /
// ncclCommDeregister, ncclCommWindowRegister / ncclCommWindowDeregister. The work is src/register/'s.
#include "api/api.h"
#include "api/argcheck.h"
#include "comm.h"
#include "group.h"
#include "misc/debug.h"
#include "register/mem_alloc.h"
#include "register/registration.h"
#include "register/window.h"

NCCL_API(ncclResult_t, ncclMemAlloc, void** ptr, size_t size);
ncclResult_t pncclMemAlloc(void** ptr, size_t size) { return baton::memAlloc(ptr, size); }

NCCL_API(ncclResult_t, ncclMemFree, void* ptr);
ncclResult_t pncclMemFree(void* ptr) { return baton::memFree(ptr); }

NCCL_API(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void* buff, size_t size, void** handle);
ncclResult_t pncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  BATON_CHECK(baton::checkCommReady(comm, "ncclCommRegister"));
  return baton::regCache(comm).add(buff, size, handle);
}

NCCL_API(ncclResult_t, ncclCommDeregister, const ncclComm_t comm, void* handle);
ncclResult_t pncclCommDeregister(const ncclComm_t comm, void* handle) {
  BATON_CHECK(baton::checkCommLive(comm, "ncclCommDeregister"));
  return baton::regCache(comm).remove(handle);
}

NCCL_API(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
         int winFlags);
ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags) {
  BATON_CHECK(baton::checkCommReady(comm, "ncclCommWindowRegister"));
  if (!win) return batonError(ncclInvalidArgument, "ncclCommWindowRegister: win is NULL");
  *win = nullptr;
  if (baton::inGroup()) {  // as in NCCL, it joins the group and happens at ncclGroupEnd
    baton::groupAddCollectiveCall(comm, [=] { return baton::windowRegister(comm, buff, size, win, winFlags); });
    return ncclSuccess;
  }
  return baton::windowRegister(comm, buff, size, win, winFlags);
}

NCCL_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win);
ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  BATON_CHECK(baton::checkCommLive(comm, "ncclCommWindowDeregister"));
  return baton::windowDeregister(comm, win);
}

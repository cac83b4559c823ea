// Child communicators (split, shrink, grow): one way to make them, blocking or on a thread, and the
// hooks that let a parent stop a child's init when one of its members dies (NCCL's childAbortFlag).
#include "fault/child_comm.h"

#include <mutex>
#include <string>

#include "bootstrap/bootstrap.h"
#include "fault/watchdog.h"
#include "misc/debug.h"
#include "register/registration.h"

namespace baton {

ncclResult_t childIdFromRank0(ncclComm* parent, const std::vector<int>& parentRanks, int newRank, uint64_t tag,
                              ncclUniqueId* id) {
  if (newRank != 0) return parent->bootstrap->recv(parentRanks[0], tag, id, sizeof *id);
  BATON_CHECK(bootstrapGetUniqueIdFresh(id));
  for (size_t i = 1; i < parentRanks.size(); ++i)
    BATON_CHECK(parent->bootstrap->send(parentRanks[i], tag, id, sizeof *id));
  return ncclSuccess;
}

ncclResult_t commInitChild(ncclComm* parent, const std::vector<int>& parentRanks, int nRanks, int newRank,
                           std::function<ncclResult_t(ncclUniqueId*)> getId, const ncclConfig_t& cfg, const char* fn,
                           ncclComm_t* newcomm) {
  ncclComm* child = nullptr;
  BATON_CHECK(commAlloc(&child, nRanks, newRank, &cfg, fn));
  attachRegistration(child);
  child->cudaDev = parent->cudaDev;
  child->gpuDev = parent->gpuDev;
  auto job = [parent, parentRanks, child, getId, fn]() -> ncclResult_t {
    ncclUniqueId id;
    BATON_CHECK(getId(&id));
    BootstrapHandle h;
    BATON_CHECK(bootstrapParseId(&id, &h));
    {
      std::lock_guard<std::mutex> lock(parent->childMu);
      parent->childAbortFlag = &child->abortFlag;
      parent->childMembers = parentRanks;
    }
    // A member that died before the flag was registered is not reported again: look now.
    if (parent->watchdog && parent->watchdog->anyDead(parentRanks)) storeFlag(&child->abortFlag, 1);
    ncclResult_t res = commInitJob(child, h);
    {
      std::lock_guard<std::mutex> lock(parent->childMu);
      parent->childAbortFlag = nullptr;
    }
    if (res != ncclSuccess && flagIsSet(&child->abortFlag))
      res = batonError(ncclRemoteError,
                       "%s: a member failed while the new communicator was being made (%s); agree on "
                       "the failed ranks again and retry",
                       fn, std::string(lastError()).c_str());
    return res;
  };
  // Non-blocking (NCCL's semantics): the caller gets the communicator now and polls
  // ncclCommGetAsyncError(newcomm) until it leaves ncclInProgress. The parent must outlive it.
  if (!child->blocking) *newcomm = child;
  const ncclResult_t res = runInitJob(child, job);
  if (res == ncclInProgress) return res;
  if (res != ncclSuccess) {
    commFree(child);
    return res;
  }
  *newcomm = child;
  return ncclSuccess;
}

void commQuiesce(ncclComm* comm) {
  storeFlag(&comm->abortFlag, 1);
  uint32_t it = 0;
  while (comm->inflight.load() > 0) waitBackoff(it);
  storeFlag(&comm->abortFlag, 0);
}

void commAbortChildInit(ncclComm* comm, int failed) {
  std::lock_guard<std::mutex> lock(comm->childMu);
  if (!comm->childAbortFlag) return;
  for (int r : comm->childMembers)
    if (r == failed) storeFlag(comm->childAbortFlag, 1);
}

}  // namespace baton

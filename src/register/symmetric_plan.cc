// The symmetric kernels' shared choice (symmetric_plan.h).
#include "register/symmetric_plan.h"

#include "comm.h"
#include "register/window.h"

namespace baton {

bool symTwoShotAllowed(int setting, bool device) { return setting < 0 ? device : setting != 0; }

bool symmetricAlgo(CollFunc func, size_t totalBytes, size_t oneShotBytes, bool twoShot, CollAlgo* algo) {
  switch (func) {
    case kFuncAllGather: *algo = kAlgoSymStore; return true;
    case kFuncReduceScatter: *algo = kAlgoSymLoad; return true;
    case kFuncAllReduce:
      if (totalBytes <= oneShotBytes) return *algo = kAlgoSymOneShot, true;
      if (twoShot) return *algo = kAlgoSymTwoShot, true;
      return false;
    default: return false;
  }
}

bool symmetricEligible(const ncclComm* comm) {
  return !comm->windows->empty() && comm->tun.symmetric && comm->nRanks >= 2 && comm->nRanks <= kMaxSymRanks &&
         comm->nNodes == 1;
}

bool planSymmetricWindows(const ncclComm* comm, const Task& t, const CollShape& shape, bool device,
                          SymmetricPlan* out) {
  if (t.count == 0 || !symmetricEligible(comm)) return false;
  const bool twoShot = symTwoShotAllowed(comm->tun.symTwoShot, device);
  if (!symmetricAlgo(t.func, shape.totalBytes, comm->tun.symOneShotBytes, twoShot, &out->algo)) return false;
  const size_t sb = shape.sendBytes, rb = shape.recvBytes;
  auto find = [&](const void* p, size_t bytes) {
    return device ? comm->windows->findSymmetricDevice(p, bytes) : comm->windows->findSymmetric(p, bytes);
  };
  out->send = find(t.sendbuff, sb);
  out->recv = out->send ? find(t.recvbuff, rb) : nullptr;
  if (!out->recv) return false;
  out->sendPeers = out->send->peerBase.data();
  out->recvPeers = out->recv->peerBase.data();
  out->sendOffset = static_cast<const char*>(t.sendbuff) - out->send->base;
  out->recvOffset = static_cast<const char*>(t.recvbuff) - out->recv->base;
  return true;
}

SymPad* const* symmetricPads(ncclComm* comm) { return comm->windows->pads.data(); }

uint64_t nextSymmetricEpoch(ncclComm* comm, int channel) { return ++comm->windows->epochs[channel]; }

}  // namespace baton

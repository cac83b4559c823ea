// The AlltoAll algorithm choice (alltoall_choice.h).
#include "tuner/alltoall_choice.h"

#include "alltoall.h"

namespace baton {

int chooseAlltoAll(const ncclComm* comm, size_t blockBytes, bool sizeAgreed) {
  if (comm->tun.alltoallAlgo != kAlltoAllAuto) return comm->tun.alltoallAlgo;
  // On one host direct measured fastest or level at every size (its n-1 transfers overlap); across
  // two hosts Bruck took 0.45-0.97 of direct's time up to 64 KiB for 4 and 8 ranks, direct won from
  // 256 KiB.
  if (sizeAgreed && comm->nNodes > 1 && comm->nRanks > 2 && blockBytes * comm->nRanks <= comm->tun.alltoallBruckBytes)
    return kAlltoAllBruck;
  return kAlltoAllDirect;
}

}  // namespace baton

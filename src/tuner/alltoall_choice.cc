// The AlltoAll algorithm choice (alltoall_choice.h).
#include "tuner/alltoall_choice.h"

#include "alltoall.h"

namespace baton {

int chooseAlltoAll(const ncclComm* comm, size_t blockBytes) {
  if (comm->tun.alltoallAlgo != kAlltoAllAuto) return comm->tun.alltoallAlgo;
  (void)blockBytes;
  return kAlltoAllDirect;
}

}  // namespace baton

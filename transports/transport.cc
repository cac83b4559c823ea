#include "transport.h"

#include "debug.h"

namespace baton {

const std::vector<Transport*>& transports() {
  static const std::vector<Transport*> kAll = {makeP2pTransport(), makeShmTransport()};
  return kAll;
}

ncclResult_t selectTransport(const PeerInfo& self, const PeerInfo& peer, bool p2pOff, bool shmOff, int* index) {
  const auto& all = transports();
  for (size_t i = 0; i < all.size(); ++i) {
    if (i == 0 && p2pOff) continue;
    if (i == 1 && shmOff) continue;
    if (all[i]->canConnect(self, peer)) {
      *index = (int)i;
      return ncclSuccess;
    }
  }
  return batonError(ncclInvalidUsage,
                    "no transport connects rank %d (host 0x%llx, pid %d) to rank %d (host 0x%llx, pid %d): ranks on "
                    "different hosts need the NET transport, which baton does not have yet%s",
                    self.rank, (unsigned long long)self.hostHash, self.pid, peer.rank,
                    (unsigned long long)peer.hostHash, peer.pid,
                    (p2pOff || shmOff) ? " (NCCL_P2P_DISABLE / NCCL_SHM_DISABLE are set)" : "");
}

}  // namespace baton

// The transport table (transport.h): which transport serves a connection between two ranks.
#include "transport.h"

#include "misc/debug.h"

namespace baton {

const std::vector<Transport*>& transports() {
  static const std::vector<Transport*> kAll = {makeP2pTransport(), makeShmTransport(), makeNetTransport()};
  return kAll;
}

ncclResult_t selectTransport(const PeerInfo& self, const PeerInfo& peer, bool p2pOff, bool shmOff, int* index) {
  const auto& all = transports();
  for (size_t i = 0; i < all.size(); ++i) {
    if (i == kTransportP2p && p2pOff) continue;
    if (i == kTransportShm && shmOff) continue;
    if (all[i]->canConnect(self, peer)) {
      *index = (int)i;
      return ncclSuccess;
    }
  }
  return batonError(
      ncclSystemError, "no transport connects rank %d (host 0x%llx, pid %d) to rank %d (host 0x%llx, pid %d)",
      self.rank, (unsigned long long)self.hostHash, self.pid, peer.rank, (unsigned long long)peer.hostHash, peer.pid);
}

}  // namespace baton

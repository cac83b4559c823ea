// Connections: how two ranks build one FIFO, and the ring, tree and point-to-point connections
// made of them. The receiver creates the FIFO in its transport (p2p heap or shm segment) and sends
// the 256-byte connect info through the bootstrap; the sender attaches to it.
//
// Rings are connected at init (every collective uses them); point-to-point connections on the
// first Send/Recv between two ranks; a channel's tree on its first tree operation, by that
// channel's worker on every rank (all ranks run every collective, so all reach it), because only
// the AllReduces the tuner sends to trees need them and each FIFO holds all three protocols.
#include "comm.h"
#include "misc/debug.h"
#include "proxy.h"

namespace baton {
namespace {

// Bootstrap tags of connect infos (below the collective tags, which start at 1 << 20).
constexpr uint64_t kTagRing = 1u << 16;      // + channel
constexpr uint64_t kTagPeer = 2u << 16;      // a peer connector (send/recv)
constexpr uint64_t kTagTreeUp = 3u << 16;    // + channel: child -> parent FIFO (parent receives)
constexpr uint64_t kTagTreeDown = 4u << 16;  // + channel: parent -> child FIFO (child receives)

// The receiving half: create the FIFO for data from `peer`, send it the connect info.
ncclResult_t connectRecvSide(ncclComm* comm, int peer, int channel, uint64_t tag, const FifoLayout& layout,
                             std::unique_ptr<Connection>* conn) {
  int tr = 0;
  ConnectInfo info{};
  BATON_CHECK(
      selectTransport(comm->peers[comm->rank], comm->peers[peer], comm->tun.p2pDisable, comm->tun.shmDisable, &tr));
  BATON_CHECK(transports()[tr]->createRecv(connSetupFor(comm, peer, channel), layout, &info, conn));
  info.transport = tr;
  return comm->bootstrap->send(peer, tag, &info, sizeof info);
}

// The sending half: wait for `peer`'s connect info, attach to its FIFO. *transport: which one.
ncclResult_t connectSendSide(ncclComm* comm, int peer, int channel, uint64_t tag, std::unique_ptr<Connection>* conn,
                             int* transport) {
  ConnectInfo info{};
  BATON_CHECK(comm->bootstrap->recv(peer, tag, &info, sizeof info));
  if (info.transport < 0 || info.transport >= (int)transports().size())
    return batonError(ncclInternalError, "connect info from rank %d (tag 0x%llx) names transport %d", peer,
                      (unsigned long long)tag, info.transport);
  *transport = info.transport;
  return transports()[info.transport]->connectSend(connSetupFor(comm, peer, channel), info, conn);
}

}  // namespace

ConnSetup connSetupFor(ncclComm* comm, int peer, int channel) {
  ConnSetup s;
  s.proxy = comm->proxy.get();
  s.abortFlag = &comm->abortFlag;
  s.rank = comm->rank;
  s.peer = peer;
  s.channel = channel;
  return s;
}

FifoLayout collFifoLayout(const ncclComm* comm) {
  FifoLayout layout;
  layout.stepBytes[kProtoSimple] = comm->tun.stepBytes;
  layout.stepBytes[kProtoLL] = comm->tun.llStepBytes;
  layout.stepBytes[kProtoLL128] = comm->tun.ll128StepBytes;
  return layout;
}

ncclResult_t connectRing(ncclComm* comm, Channel& ch) {
  const int n = comm->nRanks;
  const int next = ch.ringUserRanks[(ch.ringIndex + 1) % n];
  const int prev = ch.ringUserRanks[(ch.ringIndex + n - 1) % n];
  int tr = 0;
  BATON_CHECK(connectRecvSide(comm, prev, ch.id, kTagRing + ch.id, collFifoLayout(comm), &ch.recvConn));
  BATON_CHECK(connectSendSide(comm, next, ch.id, kTagRing + ch.id, &ch.sendConn, &tr));
  ch.ringSend = ch.sendConn->dev(next, comm->tun.fifoDepth);
  ch.ringRecv = ch.recvConn->dev(prev, comm->tun.fifoDepth);
  BATON_INFO(kSubInit, "Channel %02d/%d : %d[%d] -> %d[%d] via %s", ch.id, comm->nChannels, comm->rank, comm->cudaDev,
             next, comm->peers[next].cudaDev, transports()[tr]->name());
  return ncclSuccess;
}

ncclResult_t connectPeers(ncclComm* comm, const std::vector<int>& sendPeers, const std::vector<int>& recvPeers) {
  FifoLayout layout;
  layout.stepBytes[kProtoSimple] = comm->tun.sendrecvStepBytes;
  layout.stepBytes[kProtoLL] = comm->tun.oneShotStepBytes;  // one-shot AllReduce (lesson 09)
  for (int p : recvPeers) {
    if (p == comm->rank || comm->peerRecvConn[p]) continue;
    BATON_CHECK(connectRecvSide(comm, p, 0, kTagPeer, layout, &comm->peerRecvConn[p]));
    comm->peerRecv[p] = comm->peerRecvConn[p]->dev(p, kSteps);
  }
  for (int p : sendPeers) {
    if (p == comm->rank || comm->peerSendConn[p]) continue;
    int tr = 0;
    BATON_CHECK(connectSendSide(comm, p, 0, kTagPeer, &comm->peerSendConn[p], &tr));
    comm->peerSend[p] = comm->peerSendConn[p]->dev(p, comm->tun.fifoDepth);
    BATON_INFO(kSubP2p, "Channel 00/1 : %d[%d] -> %d[%d] via %s (p2p)", comm->rank, comm->cudaDev, p,
               comm->peers[p].cudaDev, transports()[tr]->name());
  }
  return ncclSuccess;
}

ncclResult_t connectTree(ncclComm* comm, Channel& ch) {
  TreeConns& t = ch.tree;
  if (t.connected) return ncclSuccess;
  const uint64_t up = kTagTreeUp + ch.id, down = kTagTreeDown + ch.id;
  const FifoLayout layout = collFifoLayout(comm);
  int tr = 0;
  // Receivers first (their infos are small messages the peer collects when it gets there).
  for (int c = 0; c < t.nDown; ++c) BATON_CHECK(connectRecvSide(comm, t.down[c], ch.id, up, layout, &t.upRecvConn[c]));
  if (t.up >= 0) BATON_CHECK(connectRecvSide(comm, t.up, ch.id, down, layout, &t.downRecvConn));
  if (t.up >= 0) BATON_CHECK(connectSendSide(comm, t.up, ch.id, up, &t.upSendConn, &tr));
  for (int c = 0; c < t.nDown; ++c) BATON_CHECK(connectSendSide(comm, t.down[c], ch.id, down, &t.downSendConn[c], &tr));
  const int depth = comm->tun.fifoDepth;
  for (int c = 0; c < t.nDown; ++c) {
    t.upRecv[c] = t.upRecvConn[c]->dev(t.down[c], depth);
    t.downSend[c] = t.downSendConn[c]->dev(t.down[c], depth);
  }
  if (t.up >= 0) {
    t.upSend = t.upSendConn->dev(t.up, depth);
    t.downRecv = t.downRecvConn->dev(t.up, depth);
  }
  t.connected = true;
  BATON_INFO(kSubInit, "Channel %02d : tree %d up %d down %d/%d/%d (connected on first use)", ch.id, ch.treeIndex, t.up,
             t.down[0], t.down[1], t.down[2]);
  return ncclSuccess;
}

}  // namespace baton

// Tree connections: one FIFO per direction of every tree edge of a channel (lesson 07).
//
// Made lazily, on the channel's first tree operation, by that channel's worker on every rank (all
// ranks run every collective, so all reach it): rings are used by every collective, trees only by
// the AllReduces the tuner sends to them, and each FIFO holds buffers for all three protocols.
// As for rings and p2p: a receiver creates its FIFO and sends the connect info to the sender.
#include "comm.h"
#include "debug.h"

namespace baton {
namespace {

constexpr uint64_t kTagTreeUp = 3u << 16;    // + channel: child -> parent FIFO (parent receives)
constexpr uint64_t kTagTreeDown = 4u << 16;  // + channel: parent -> child FIFO (child receives)

ncclResult_t createRecv(ncclComm* comm, int peer, uint64_t tag, std::unique_ptr<Connection>* conn) {
  int tr = 0;
  ConnectInfo info{};
  BATON_CHECK(selectTransport(comm->peers[comm->rank], comm->peers[peer], comm->tun.p2pDisable, comm->tun.shmDisable, &tr));
  BATON_CHECK(transports()[tr]->createRecv(collFifoLayout(comm), &info, conn));
  info.transport = tr;
  return comm->bootstrap->send(peer, tag, &info, sizeof info);
}

ncclResult_t connectSend(ncclComm* comm, int peer, uint64_t tag, std::unique_ptr<Connection>* conn) {
  ConnectInfo info{};
  BATON_CHECK(comm->bootstrap->recv(peer, tag, &info, sizeof info));
  if (info.transport < 0 || info.transport >= (int)transports().size())
    return batonError(ncclInternalError, "tree connect info from rank %d names transport %d", peer, info.transport);
  return transports()[info.transport]->connectSend(info, conn);
}

}  // namespace

FifoLayout collFifoLayout(const ncclComm* comm) {
  FifoLayout layout;
  layout.stepBytes[kProtoSimple] = comm->tun.stepBytes;
  layout.stepBytes[kProtoLL] = comm->tun.llStepBytes;
  layout.stepBytes[kProtoLL128] = comm->tun.ll128StepBytes;
  return layout;
}

ncclResult_t connectTree(ncclComm* comm, Channel& ch) {
  TreeConns& t = ch.tree;
  if (t.connected) return ncclSuccess;
  const uint64_t up = kTagTreeUp + ch.id, down = kTagTreeDown + ch.id;
  // Receivers first (their infos are small messages the peer collects when it gets there).
  for (int c = 0; c < t.nDown; ++c) BATON_CHECK(createRecv(comm, t.down[c], up, &t.upRecvConn[c]));
  if (t.up >= 0) BATON_CHECK(createRecv(comm, t.up, down, &t.downRecvConn));
  if (t.up >= 0) BATON_CHECK(connectSend(comm, t.up, up, &t.upSendConn));
  for (int c = 0; c < t.nDown; ++c) BATON_CHECK(connectSend(comm, t.down[c], down, &t.downSendConn[c]));
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
  BATON_INFO(kSubInit, "Channel %02d : tree %d up %d down %d/%d/%d (connected on first use)", ch.id, ch.treeIndex,
             t.up, t.down[0], t.down[1], t.down[2]);
  return ncclSuccess;
}

}  // namespace baton

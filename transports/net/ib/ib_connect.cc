// IB back-end, connection setup over an out-of-band TCP socket (baton's socket helpers, type 4):
//
//   sender (connect)                         receiver (accept)
//   TCP connect + handshake, build QP (INIT)
//   send ConnInfo                   ------>  accept, check handshake, build QP (INIT)
//                                            recv ConnInfo, QP -> RTR -> RTS
//   recv ConnInfo, QP -> RTR -> RTS <------  send ConnInfo
//   send "ready", return the comm   ------>  recv "ready", return the comm
//
// "ready" keeps the receiver from RDMA-writing a CTS entry before the sender's QP can take it.
// Waiting for the peer's bytes is non-blocking (null comm, call again; a comm in progress lives in
// the listen comm, or for the sender in a table keyed by the handle). Two steps do block, briefly:
// the TCP connect (the peer's listening socket exists, so the kernel completes it from its backlog;
// retried up to BATON_BOOTSTRAP_TIMEOUT) and reading the 12-byte handshake (at most 5 s).
// Protocol and ordering: ib_backend.cc.
#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>

#include "exec_model.h"
#include "ib_comm.h"
#include "misc/debug.h"

namespace baton {
namespace netib {

namespace {
uint64_t randomBits() {
  static std::mutex mu;
  static std::mt19937_64 rng(std::random_device{}() ^ nowNs());
  std::lock_guard<std::mutex> lock(mu);
  return rng();
}

ncclResult_t commDestroy(Comm* c) {
  ncclResult_t res = ncclSuccess;
  auto fail = [&](const char* call, int rc) {
    res = batonError(ncclSystemError, "IB close (peer %s): %s failed: %s", c->peer.c_str(), call, strerror(rc));
  };
  if (c->qp)
    if (int rc = ibv_destroy_qp(c->qp)) fail("ibv_destroy_qp", rc);
  if (c->cq)
    if (int rc = ibv_destroy_cq(c->cq)) fail("ibv_destroy_cq", rc);
  if (c->memMr)
    if (int rc = ibv_dereg_mr(c->memMr)) fail("ibv_dereg_mr", rc);
  free(c->mem);
  if (c->pdHeld && pdPut(c->dev) != ncclSuccess) res = ncclSystemError;
  socketClose(c->fd);
  delete c;
  return res;
}

// PD reference, CQ, the comm's registered block, an RC QP in INIT; fills c->local.
ncclResult_t commCreate(Comm* c) {
  IbDev* d = c->dev;
  const char* side = c->isSend ? "connect" : "accept";
  BATON_CHECK(pdGet(d));
  c->pdHeld = true;
  const int sendWr = 2 * kMaxRequests, recvWr = kMaxRequests;  // sender: 2 WRs a message; receiver: 1 CTS
  if (!(c->cq = ibv_create_cq(d->ctx, sendWr + recvWr, nullptr, nullptr, 0)))
    return batonError(ncclSystemError, "IB %s on %s: ibv_create_cq failed: %s", side, d->name.c_str(), strerror(errno));
  const size_t bytes = (sizeof(CommMem) + 4095) & ~size_t(4095);
  if (!(c->mem = static_cast<CommMem*>(aligned_alloc(4096, bytes))))
    return batonError(ncclSystemError, "IB %s: cannot allocate %zu bytes", side, bytes);
  memset(c->mem, 0, bytes);
  if (!(c->memMr = ibv_reg_mr(d->pd, c->mem, bytes, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)))
    return batonError(ncclSystemError, "IB %s on %s: ibv_reg_mr failed: %s", side, d->name.c_str(), strerror(errno));
  ibv_qp_init_attr qa{};
  qa.send_cq = qa.recv_cq = c->cq;
  qa.qp_type = IBV_QPT_RC;
  qa.cap.max_send_wr = sendWr;
  qa.cap.max_recv_wr = recvWr;
  qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
  if (!(c->qp = ibv_create_qp(d->pd, &qa)))
    return batonError(ncclSystemError, "IB %s on %s: ibv_create_qp failed: %s", side, d->name.c_str(), strerror(errno));
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = ibParams().pkey;
  a.port_num = d->port;
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  if (int rc = ibv_modify_qp(c->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    return batonError(ncclSystemError, "IB %s on %s: ibv_modify_qp(INIT) failed: %s", side, d->name.c_str(),
                      strerror(rc));
  ConnInfo& l = c->local;
  l.version = kWireVersion;
  l.qpn = c->qp->qp_num;
  l.psn = (uint32_t)randomBits() & 0xffffff;
  l.lid = d->attr.lid;
  l.linkLayer = d->attr.link_layer;
  l.mtu = d->attr.active_mtu;
  memcpy(l.gid, d->gid.raw, 16);
  l.memAddr = (uint64_t)(uintptr_t)c->mem;
  l.memRkey = c->memMr->rkey;
  return ncclSuccess;
}

// RTR needs the peer's address (GID for RoCE, LID for IB), QP number and PSN; RTS our timeouts.
ncclResult_t qpConnect(Comm* c) {
  const ConnInfo& r = c->remote;
  const IbParams& p = ibParams();
  if (r.version != kWireVersion || r.linkLayer != c->local.linkLayer)
    return batonError(ncclRemoteError, "IB %s: peer %s sent version %u link layer %u (we run %u, %u)",
                      c->isSend ? "connect" : "accept", c->peer.c_str(), r.version, r.linkLayer, kWireVersion,
                      c->local.linkLayer);
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = (ibv_mtu)std::min(c->local.mtu, r.mtu);
  a.dest_qp_num = r.qpn;
  a.rq_psn = r.psn;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr.port_num = c->dev->port;
  a.ah_attr.sl = p.sl;
  if (r.linkLayer == IBV_LINK_LAYER_ETHERNET) {
    a.ah_attr.is_global = 1;
    memcpy(a.ah_attr.grh.dgid.raw, r.gid, 16);
    a.ah_attr.grh.sgid_index = c->dev->gidIndex;
    a.ah_attr.grh.hop_limit = 255;
    a.ah_attr.grh.traffic_class = p.tc;
  } else {
    a.ah_attr.dlid = r.lid;
  }
  if (int rc = ibv_modify_qp(c->qp, &a,
                             IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
    return batonError(ncclSystemError, "IB: ibv_modify_qp(RTR) towards %s failed: %s", c->peer.c_str(), strerror(rc));
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = p.timeout;
  a.retry_cnt = p.retryCnt;
  a.rnr_retry = 7;  // infinite; receive WRs are posted before each CTS, so RNR should not happen
  a.sq_psn = c->local.psn;
  a.max_rd_atomic = 1;
  if (int rc = ibv_modify_qp(c->qp, &a,
                             IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                                 IBV_QP_MAX_QP_RD_ATOMIC))
    return batonError(ncclSystemError, "IB: ibv_modify_qp(RTS) towards %s failed: %s", c->peer.c_str(), strerror(rc));
  return ncclSuccess;
}

// Reads what has arrived of an n-byte message into buf (c->got bytes so far); *done when complete.
ncclResult_t recvSome(Comm* c, void* buf, size_t n, bool* done) {
  *done = false;
  while (c->got < n) {
    ssize_t r = recv(c->fd, static_cast<char*>(buf) + c->got, n - c->got, MSG_DONTWAIT);
    if (r > 0) {
      c->got += r;
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (nowNs() < c->deadlineNs) return ncclSuccess;
      return batonError(ncclRemoteError, "IB %s: peer %s sent nothing for %llus (BATON_BOOTSTRAP_TIMEOUT)",
                        c->isSend ? "connect" : "accept", c->peer.c_str(),
                        (unsigned long long)bootstrapTimeoutSecUsed());
    }
    return batonError(ncclRemoteError, "IB %s: connection to peer %s %s during setup", c->isSend ? "connect" : "accept",
                      c->peer.c_str(), r == 0 ? "closed" : strerror(errno));
  }
  c->got = 0;
  *done = true;
  return ncclSuccess;
}
}  // namespace

ncclResult_t ibListen(int dev, NetHandle* handle, NetListenComm** out) {
  IbDev* d = nullptr;
  BATON_CHECK(ibDevice("listen", dev, &d));
  Handle h;
  memset(&h, 0, sizeof h);  // padding too: the connector keys its pending table on these bytes
  BATON_CHECK(chooseBindAddress(nullptr, &h.addr, nullptr));
  int fd = -1;
  BATON_CHECK(socketListen(&h.addr, &fd));
  h.magic = randomBits();
  memset(handle, 0, sizeof *handle);
  memcpy(handle->data, &h, sizeof h);
  *out = reinterpret_cast<NetListenComm*>(new ListenComm{d, fd, h.magic, nullptr});
  return ncclSuccess;
}

// Sender comms in progress, keyed by device and handle bytes.
namespace {
std::mutex gPendingMu;
std::map<std::string, Comm*> gPending;

ncclResult_t connectStep(Comm* c, bool* done) {
  *done = false;
  if (c->stage == 0) {
    bool got;
    BATON_CHECK(recvSome(c, &c->remote, sizeof c->remote, &got));
    if (!got) return ncclSuccess;
    BATON_CHECK(qpConnect(c));
    c->ready = kWireVersion;
    BATON_CHECK(socketSendAll(c->fd, &c->ready, sizeof c->ready, c->deadlineNs));
    c->stage = 1;
  }
  *done = true;
  return ncclSuccess;
}
}  // namespace

ncclResult_t ibConnect(int dev, const NetHandle& handle, NetSendComm** out) {
  *out = nullptr;
  IbDev* d = nullptr;
  BATON_CHECK(ibDevice("connect", dev, &d));
  const std::string key = std::to_string(dev) + ":" + std::string(handle.data, sizeof(Handle));
  Comm* c = nullptr;
  {
    std::lock_guard<std::mutex> lock(gPendingMu);
    if (auto it = gPending.find(key); it != gPending.end()) c = it->second;
  }
  ncclResult_t res = ncclSuccess;
  if (!c) {
    Handle h;
    memcpy(&h, handle.data, sizeof h);
    c = new Comm;
    c->dev = d;
    c->isSend = true;
    c->peer = addressToString(h.addr);
    c->deadlineNs = bootstrapDeadline();
    res = socketConnect(h.addr, h.magic, kIbSocketType, c->deadlineNs, nullptr, &c->fd);
    if (res != ncclSuccess) {
      const std::string why = lastError();
      commDestroy(c);
      return batonError(ncclRemoteError, "IB connect: cannot reach peer %s: %s", addressToString(h.addr).c_str(),
                        why.c_str());
    }
    if ((res = commCreate(c)) == ncclSuccess) res = socketSendAll(c->fd, &c->local, sizeof c->local, c->deadlineNs);
    if (res != ncclSuccess) return commDestroy(c), res;
    std::lock_guard<std::mutex> lock(gPendingMu);
    gPending[key] = c;
  }
  bool done = false;
  res = connectStep(c, &done);
  if (res != ncclSuccess || done) {
    std::lock_guard<std::mutex> lock(gPendingMu);
    gPending.erase(key);
  }
  if (res != ncclSuccess) return commDestroy(c), res;
  if (done) {
    BATON_INFO(kSubNet, "IB: connected %s to %s (QP %u -> %u)", d->name.c_str(), c->peer.c_str(), c->local.qpn,
               c->remote.qpn);
    *out = reinterpret_cast<NetSendComm*>(c);
  }
  return ncclSuccess;
}

// A new connection on the listening socket, if one is waiting and says our magic.
namespace {
ncclResult_t acceptStart(ListenComm* l) {
  pollfd pfd{l->fd, POLLIN, 0};
  int rc = poll(&pfd, 1, 0);
  if (rc < 0 && errno != EINTR) return batonError(ncclSystemError, "IB accept: poll failed: %s", strerror(errno));
  if (rc <= 0) return ncclSuccess;
  int fd = -1;
  BATON_CHECK(socketAccept(l->fd, bootstrapDeadline(), nullptr, &fd));
  SocketAddress peer{};
  socklen_t len = sizeof peer;
  getpeername(fd, &peer.sa, &len);
  // The connector sends its handshake right after connecting: a few seconds is plenty, and a silent
  // stranger cannot stall the proxy for the whole bootstrap timeout.
  if (!socketCheckHandshake(fd, l->magic, kIbSocketType, nowNs() + 5000000000ull)) {
    BATON_WARN("IB accept: dropped a connection from %s (wrong magic or socket type)", addressToString(peer).c_str());
    socketClose(fd);
    return ncclSuccess;
  }
  Comm* c = new Comm;
  c->dev = l->dev;
  c->fd = fd;
  c->peer = addressToString(peer);
  c->deadlineNs = bootstrapDeadline();
  if (ncclResult_t res = commCreate(c); res != ncclSuccess) return commDestroy(c), res;
  l->pending = c;
  return ncclSuccess;
}
}  // namespace

ncclResult_t ibAccept(NetListenComm* listen, NetRecvComm** out) {
  *out = nullptr;
  ListenComm* l = reinterpret_cast<ListenComm*>(listen);
  if (!l->pending) BATON_CHECK(acceptStart(l));
  Comm* c = l->pending;
  if (!c) return ncclSuccess;
  ncclResult_t res = ncclSuccess;
  bool got = false;
  if (c->stage == 0) {
    res = recvSome(c, &c->remote, sizeof c->remote, &got);
    if (res == ncclSuccess && got && (res = qpConnect(c)) == ncclSuccess &&
        (res = socketSendAll(c->fd, &c->local, sizeof c->local, c->deadlineNs)) == ncclSuccess)
      c->stage = 1;
  }
  if (res == ncclSuccess && c->stage == 1) {
    res = recvSome(c, &c->ready, sizeof c->ready, &got);
    if (res == ncclSuccess && got && c->ready != kWireVersion)
      res =
          batonError(ncclRemoteError, "IB accept: peer %s sent a malformed ready word 0x%x", c->peer.c_str(), c->ready);
    if (res == ncclSuccess && got) {
      l->pending = nullptr;
      BATON_INFO(kSubNet, "IB: accepted %s on %s (QP %u <- %u)", c->peer.c_str(), c->dev->name.c_str(), c->local.qpn,
                 c->remote.qpn);
      *out = reinterpret_cast<NetRecvComm*>(c);
    }
  }
  if (res != ncclSuccess) {
    l->pending = nullptr;
    commDestroy(c);
  }
  return res;
}

ncclResult_t ibCloseComm(Comm* c) { return c ? commDestroy(c) : ncclSuccess; }

ncclResult_t ibCloseListen(NetListenComm* listen) {
  ListenComm* l = reinterpret_cast<ListenComm*>(listen);
  if (!l) return ncclSuccess;
  ncclResult_t res = l->pending ? commDestroy(l->pending) : ncclSuccess;
  socketClose(l->fd);
  delete l;
  return res;
}

}  // namespace netib
}  // namespace baton

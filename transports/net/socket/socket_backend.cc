// The socket back-end (NCCL's built-in "Socket" network, lesson 08): devices are the interfaces
// NCCL_SOCKET_IFNAME selects; a connection is a control socket plus NCCL_SOCKET_NTHREADS x
// NCCL_NSOCKS_PERTHREAD data sockets. This file sets connections up and tears them down;
// socket_data.cc moves messages; socket_helper.cc runs the helper threads.
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>

#include "exec_model.h"
#include "misc/debug.h"
#include "misc/param.h"
#include "socket_comm.h"

namespace baton {
namespace netsock {

std::string describeSocketError(int e) {
  switch (e) {
    case ECONNREFUSED: return "connection refused";
    case ECONNRESET: return "connection reset by peer";
    case EPIPE: return "connection closed by peer";
    case ETIMEDOUT: return "connection timed out";
    case EHOSTUNREACH: return "host unreachable";
    case ENETUNREACH: return "network unreachable";
    default: return strerror(e);
  }
}

void Comm::fail(ncclResult_t code, const std::string& msg) {
  std::lock_guard<std::mutex> lock(errMu);
  if (failed.load()) return;
  errCode = code;
  error = msg;
  failed.store(true);
}

Comm::~Comm() {
  // Shut the sockets first: a helper blocked in poll() wakes up and sees them closed.
  for (int fd : data) shutdown(fd, SHUT_RDWR);
  helpers.clear();  // joins
  for (int& fd : data) socketClose(fd);
  socketClose(ctrl);
  for (Request* r : queue) delete r;
}

namespace {

void tuneSocket(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

// One non-blocking connect attempt, waited for until `deadline`: 0 or the errno that ended it
// (a SYN nobody answers would otherwise block connect() for the kernel's two minutes).
int connectAttempt(int s, const SocketAddress& addr, uint64_t deadline, const volatile int* abortFlag) {
  fcntl(s, F_SETFL, fcntl(s, F_GETFL) | O_NONBLOCK);
  if (::connect(s, &addr.sa, socketAddrLen(addr)) == 0) return 0;
  if (errno != EINPROGRESS) return errno;
  while (true) {
    pollfd pfd{s, POLLOUT, 0};
    const uint64_t now = nowNs();
    if (now >= deadline) return ETIMEDOUT;
    if (abortRequested(abortFlag)) return ECANCELED;
    const int ms = (int)std::min<uint64_t>((deadline - now) / 1000000 + 1, 100);
    if (poll(&pfd, 1, ms) > 0) {
      int err = 0;
      socklen_t len = sizeof err;
      getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len);
      return err;
    }
  }
}

// Connects one socket and sends its hello. Refusals are retried for about 0.5 s (a listener that
// exists refuses only while its backlog is full); an unreachable or silent peer until the
// bootstrap deadline (BATON_BOOTSTRAP_TIMEOUT).
ncclResult_t connectOne(const SocketAddress& addr, const Hello& hello, const volatile int* abortFlag, int* out) {
  const uint64_t deadline = bootstrapDeadline();
  int refusals = 0;
  while (true) {
    int s = socket(addr.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) return batonError(ncclSystemError, "NET/Socket: socket() failed: %s", strerror(errno));
    const int e = connectAttempt(s, addr, deadline, abortFlag);
    if (e == 0) {
      tuneSocket(s);
      ncclResult_t res = socketSendAll(s, &hello, sizeof hello, deadline);
      if (res != ncclSuccess) {
        close(s);
        return batonError(ncclRemoteError, "NET/Socket: cannot send the handshake to %s: %s",
                          addressToString(addr).c_str(), lastError());
      }
      *out = s;
      return ncclSuccess;
    }
    close(s);
    if (e == ECANCELED)
      return batonError(ncclInvalidUsage, "NET/Socket: connect to %s aborted", addressToString(addr).c_str());
    const bool retry = (e == ECONNREFUSED && ++refusals < 10) || e == EINTR || e == EAGAIN ||
                       ((e == EHOSTUNREACH || e == ENETUNREACH) && nowNs() < deadline);
    if (!retry)
      return batonError(
          ncclRemoteError, "NET/Socket: cannot connect to peer %s: %s%s", addressToString(addr).c_str(),
          describeSocketError(e).c_str(),
          e == ETIMEDOUT ? " (no answer within BATON_BOOTSTRAP_TIMEOUT: is the peer's host reachable?)" : "");
    usleep(50 * 1000);
  }
}

// Reads more of a half-accepted socket's hello without blocking. 1: complete and ours, 0: not
// yet, -1: a stranger, or nothing within 2 s (dropped after a warning).
int readHello(PendingSocket& p, uint64_t magic, int nIndices) {
  char* dst = reinterpret_cast<char*>(&p.hello);
  while (p.got < sizeof p.hello) {
    ssize_t r = recv(p.fd, dst + p.got, sizeof p.hello - p.got, MSG_DONTWAIT);
    if (r > 0) {
      p.got += r;
      continue;
    }
    if (r < 0 && (errno == EAGAIN || errno == EINTR) && nowNs() < p.since + 2000000000ull) return 0;
    break;
  }
  const Hello& h = p.hello;
  if (p.got == sizeof h && h.magic == magic && h.type == kSocketNet && (int)h.index < nIndices) return 1;
  BATON_WARN("NET/Socket: dropped a connection from %s to a data port: not this connection's peer (%s)",
             addressToString(p.from).c_str(),
             p.got < sizeof h   ? "no handshake"
             : h.magic != magic ? "wrong magic"
                                : "bad socket index");
  return -1;
}

class SocketBackend : public NetBackend {
 public:
  const char* name() const override { return "Socket"; }

  ncclResult_t init() override {
    BATON_CHECK(findNetInterfaces(&ifs_));
    for (size_t i = 0; i < ifs_.size(); ++i)
      BATON_INFO(kSubNet, "NET/Socket : dev %zu %s %s", i, ifs_[i].name.c_str(), addressToString(ifs_[i].addr).c_str());
    delayedAck_ = envInt("BATON_SOCKET_DELAYED_ACK", 1) != 0;
    BATON_INFO(kSubNet, "NET/Socket : receiving control sockets %s (BATON_SOCKET_DELAYED_ACK=%d)",
               delayedAck_ ? "delay their ACKs" : "acknowledge at once", delayedAck_ ? 1 : 0);
    return ncclSuccess;
  }
  int devices() const override { return (int)ifs_.size(); }

  ncclResult_t getProperties(int dev, NetProperties* p) const override {
    BATON_CHECK(checkDev(dev));
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", ifs_[dev].name.c_str());
    std::ifstream speed("/sys/class/net/" + ifs_[dev].name + "/speed");
    int mbps = 0;
    if (!(speed >> mbps) || mbps <= 0) mbps = 10000;  // unknown (virtual NICs): NCCL assumes 10 Gb/s
    p->speedMbps = mbps;
    p->ptrSupport = kNetPtrHost;
    p->maxComms = 65536;
    p->maxRecvs = kNetMaxRecvs;
    return ncclSuccess;
  }

  ncclResult_t listen(int dev, NetHandle* handle, NetListenComm** out) override {
    BATON_CHECK(checkDev(dev));
    auto* l = new ListenComm;
    l->handle.addr = ifs_[dev].addr;
    ncclResult_t res = socketListen(&l->handle.addr, &l->fd);
    if (res != ncclSuccess) {
      delete l;
      return res;
    }
    fcntl(l->fd, F_SETFL, fcntl(l->fd, F_GETFL) | O_NONBLOCK);
    l->handle.magic = std::random_device{}() | (uint64_t)std::random_device{}() << 32;
    socksAndThreads(&l->handle.nSocks, &l->handle.nThreads);
    l->fds.assign(1 + l->handle.nSocks, -1);
    memset(handle, 0, sizeof *handle);
    memcpy(handle->data, &l->handle, sizeof l->handle);
    *out = reinterpret_cast<NetListenComm*>(l);
    return ncclSuccess;
  }

  ncclResult_t connect(int, const NetHandle& handle, const volatile int* abortFlag, NetSendComm** out) override {
    Handle h;
    memcpy(&h, handle.data, sizeof h);
    if (h.nSocks < 0 || h.nSocks > kMaxSocks || h.nThreads < 0 || h.nThreads > kMaxThreads)
      return batonError(ncclInternalError, "NET/Socket: handle for %s has %d sockets, %d threads",
                        addressToString(h.addr).c_str(), h.nSocks, h.nThreads);
    auto c = std::make_unique<Comm>();
    c->isSend = true;
    c->peer = h.addr;
    c->nThreads = h.nThreads;
    for (int i = 0; i <= h.nSocks; ++i) {
      int fd = -1;
      BATON_CHECK(connectOne(h.addr, Hello{h.magic, kSocketNet, (uint32_t)i}, abortFlag, &fd));
      if (i == 0) c->ctrl = fd;
      else c->data.push_back(fd);
    }
    startHelpers(c.get());
    *out = reinterpret_cast<NetSendComm*>(c.release());
    return ncclSuccess;
  }

  // Runs on the proxy thread, so it never blocks: sockets whose hello has not arrived wait in
  // the listener's pending list. No deadline of its own: a peer that never comes leaves the ranks
  // waiting, and their BATON_WAIT_TIMEOUT decides.
  ncclResult_t accept(NetListenComm* lc, NetRecvComm** out) override {
    auto* l = reinterpret_cast<ListenComm*>(lc);
    *out = nullptr;
    while (true) {
      PendingSocket p{};
      socklen_t len = sizeof p.from;
      p.fd = accept4(l->fd, &p.from.sa, &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (p.fd < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED) break;
        return batonError(ncclSystemError, "NET/Socket: accept() on %s failed: %s",
                          addressToString(l->handle.addr).c_str(), strerror(errno));
      }
      p.since = nowNs();
      l->pending.push_back(p);
    }
    for (size_t i = 0; i < l->pending.size();) {
      PendingSocket& p = l->pending[i];
      const int st = readHello(p, l->handle.magic, (int)l->fds.size());
      if (st == 0) {
        ++i;
        continue;
      }
      if (st == 1 && l->fds[p.hello.index] < 0) {
        tuneSocket(p.fd);
        l->fds[p.hello.index] = p.fd;
        l->peer = p.from;
      } else {
        close(p.fd);  // a stranger, or a second socket with the same index
      }
      l->pending.erase(l->pending.begin() + i);
    }
    for (int fd : l->fds)
      if (fd < 0) return ncclSuccess;  // not yet
    auto* c = new Comm;
    c->peer = l->peer;
    c->ctrl = l->fds[0];
    c->data.assign(l->fds.begin() + 1, l->fds.end());
    c->nThreads = l->handle.nThreads;
    c->delayedAck = delayedAck_;
    if (c->delayedAck) delayAcks(c->ctrl), c->delayedAckAt = nowNs();
    l->fds.assign(l->fds.size(), -1);
    startHelpers(c);
    *out = reinterpret_cast<NetRecvComm*>(c);
    return ncclSuccess;
  }

  ncclResult_t regMr(NetSendComm*, NetRecvComm*, void*, size_t, int type, NetMemHandle** mh) override {
    if (type != kNetPtrHost)
      return batonError(ncclInvalidUsage, "NET/Socket: can only send host memory (type %d)", type);
    *mh = nullptr;  // sockets need no registration
    return ncclSuccess;
  }
  ncclResult_t deregMr(NetSendComm*, NetRecvComm*, NetMemHandle*) override { return ncclSuccess; }

  ncclResult_t isend(NetSendComm* comm, void* data, size_t size, uint64_t tag, NetMemHandle*,
                     NetRequest** req) override {
    return postSend(reinterpret_cast<Comm*>(comm), data, size, tag, reinterpret_cast<Request**>(req));
  }
  // As NCCL's socket transport: one NetPlugin event per profiled send, from post to completion.
  ncclResult_t isendProfiled(NetSendComm* comm, void* data, size_t size, uint64_t tag, NetMemHandle*, void* phandle,
                             NetRequest** req) override {
    Comm* c = reinterpret_cast<Comm*>(comm);
    BATON_CHECK(postSend(c, data, size, tag, reinterpret_cast<Request**>(req)));
    if (*req) profileRequestStart(reinterpret_cast<Request*>(*req), static_cast<NetProfileRef*>(phandle), c->ctrl);
    return ncclSuccess;
  }
  ncclResult_t irecv(NetRecvComm* comm, int n, void** data, const size_t* sizes, const uint64_t* tags, NetMemHandle**,
                     NetRequest** req) override {
    return postRecv(reinterpret_cast<Comm*>(comm), n, data, sizes, tags, reinterpret_cast<Request**>(req));
  }
  ncclResult_t test(NetRequest* req, int* done, size_t* size, int* index, uint64_t* tag) override {
    return testRequest(reinterpret_cast<Request*>(req), done, size, index, tag);
  }

  void shutdown(NetSendComm* c) override { shutdownComm(reinterpret_cast<Comm*>(c)); }
  void shutdown(NetRecvComm* c) override { shutdownComm(reinterpret_cast<Comm*>(c)); }
  static void shutdownComm(Comm* c) {
    ::shutdown(c->ctrl, SHUT_RDWR);
    for (int fd : c->data) ::shutdown(fd, SHUT_RDWR);
  }

  int pollFd(NetRecvComm* c) const override { return recvPollFd(reinterpret_cast<Comm*>(c)); }
  int pollFd(NetListenComm* l) const override { return reinterpret_cast<ListenComm*>(l)->fd; }

  ncclResult_t closeSend(NetSendComm* c) override {
    delete reinterpret_cast<Comm*>(c);
    return ncclSuccess;
  }
  ncclResult_t closeRecv(NetRecvComm* c) override {
    delete reinterpret_cast<Comm*>(c);
    return ncclSuccess;
  }
  ncclResult_t closeListen(NetListenComm* lc) override {
    auto* l = reinterpret_cast<ListenComm*>(lc);
    for (int& fd : l->fds) socketClose(fd);
    for (PendingSocket& p : l->pending) socketClose(p.fd);
    socketClose(l->fd);
    delete l;
    return ncclSuccess;
  }

 private:
  ncclResult_t checkDev(int dev) const {
    if (dev < 0 || dev >= (int)ifs_.size())
      return batonError(ncclInternalError, "NET/Socket: device %d does not exist (%zu devices)", dev, ifs_.size());
    return ncclSuccess;
  }
  // NCCL_SOCKET_NTHREADS helper threads with NCCL_NSOCKS_PERTHREAD data sockets each (at most 64
  // sockets, 16 threads). Default 0: the proxy thread moves everything on the control socket,
  // which is fastest on a machine with few cores (docs/perf.md).
  static void socksAndThreads(int32_t* nSocks, int32_t* nThreads) {
    int64_t t = envInt("NCCL_SOCKET_NTHREADS", 0), s = envInt("NCCL_NSOCKS_PERTHREAD", 1);
    if (t < 0) t = 0;
    if (t > kMaxThreads) t = kMaxThreads;
    if (s < 1) s = 1;
    if (t * s > kMaxSocks) s = kMaxSocks / (t ? t : 1);
    *nThreads = (int32_t)t;
    *nSocks = (int32_t)(t * s);
  }
  static void startHelpers(Comm* c) {
    for (int i = 0; i < c->nThreads && !c->data.empty(); ++i) c->helpers.push_back(std::make_unique<Helper>(c, i));
  }

  std::vector<NetInterface> ifs_;
  bool delayedAck_ = true;
};

}  // namespace

NetBackend* makeSocketBackend() { return new SocketBackend; }

}  // namespace netsock

NetBackend* socketNetBackend() {
  static NetBackend* b = netsock::makeSocketBackend();
  return b;
}

}  // namespace baton

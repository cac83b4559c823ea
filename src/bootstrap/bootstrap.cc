// Bootstrap between ranks: check-in with the root, then tagged send/recv, allGather and barrier.
#include "bootstrap/bootstrap.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "bootstrap/bootstrap_wire.h"
#include "bootstrap/rendezvous.h"
#include "exec_model.h"
#include "misc/debug.h"

namespace baton {

ncclResult_t Bootstrap::create(const BootstrapHandle& handle, int rank, int nranks, const volatile int* abortFlag,
                               std::unique_ptr<Bootstrap>* out) {
  std::unique_ptr<Bootstrap> b(new Bootstrap());
  b->rank_ = rank;
  b->nranks_ = nranks;
  b->magic_ = handle.magic;
  b->abortFlag_ = abortFlag;
  const uint64_t deadline = bootstrapDeadline();

  // With NCCL_COMM_ID nobody called ncclGetUniqueId's root: rank 0 starts it at the given address.
  if (handle.magic == kNcclMagic && rank == 0) {
    BootstrapHandle h = handle;
    BATON_CHECK(bootstrapStartRoot(&h, RootBind::kGivenAddress));
  }
  SocketAddress listen{};
  BATON_CHECK(chooseBindAddress(&handle.addr, &listen, nullptr));
  BATON_CHECK(socketListen(&listen, &b->listenFd_));

  int fd = -1;
  BATON_CHECK(socketConnect(handle.addr, handle.magic, kSocketBootstrap, deadline, abortFlag, &fd));
  uint32_t len = sizeof(CheckIn);
  CheckIn ci{rank, nranks, listen};
  ncclResult_t res = socketSendAll(fd, &len, sizeof len, deadline);
  if (res == ncclSuccess) res = socketSendAll(fd, &ci, sizeof ci, deadline);
  CheckInReply reply{};
  if (res == ncclSuccess) res = socketRecvAll(fd, &reply, sizeof reply, deadline, abortFlag);
  if (res != ncclSuccess) {
    socketClose(fd);
    return batonError(res, "rank %d: bootstrap rendezvous with root %s failed: %s", rank,
                      addressToString(handle.addr).c_str(), lastError());
  }
  if (reply.status != ncclSuccess) {
    socketClose(fd);
    reply.message[sizeof reply.message - 1] = 0;
    return batonError((ncclResult_t)reply.status, "rank %d: bootstrap rendezvous failed: %s", rank, reply.message);
  }
  b->peers_.resize(nranks);
  res = socketRecvAll(fd, b->peers_.data(), nranks * sizeof(SocketAddress), deadline, abortFlag);
  socketClose(fd);
  BATON_CHECK(res);
  if (const int bad = firstUnusableAddress(b->peers_); bad >= 0)
    return batonError(ncclSystemError,
                      "rank %d: the bootstrap root at %s sent an unusable address for rank %d "
                      "(address family %d): is another program listening there?",
                      rank, addressToString(handle.addr).c_str(), bad, (int)b->peers_[bad].sa.sa_family);
  BATON_INFO(kSubBootstrap, "rank %d/%d: bootstrap done, listening on %s", rank, nranks,
             addressToString(listen).c_str());
  *out = std::move(b);
  return ncclSuccess;
}

Bootstrap::~Bootstrap() { socketClose(listenFd_); }

ncclResult_t Bootstrap::send(int peer, uint64_t tag, const void* data, size_t size) {
  const uint64_t deadline = bootstrapDeadline();
  int fd = -1;
  // The peer's listener was up before the root sent its address: a refusal means it has exited.
  if (ncclResult_t res = socketConnect(peers_[peer], magic_, kSocketBootstrap, deadline, abortFlag_, &fd, true);
      res != ncclSuccess) {
    const std::string why = lastError();
    if (res == ncclRemoteError && peerGone_) peerGone_(peer, "a bootstrap connection to it failed (" + why + ")");
    return batonError(res, "rank %d: bootstrap send to rank %d (tag 0x%llx) failed: %s%s", rank_, peer,
                      (unsigned long long)tag, why.c_str(),
                      res == ncclRemoteError ? ": that process has exited or closed its communicator" : "");
  }
  PeerHeader h{rank_, 0, tag, size};
  ncclResult_t res = socketSendAll(fd, &h, sizeof h, deadline);
  if (res == ncclSuccess && size) res = socketSendAll(fd, data, size, deadline);
  socketClose(fd);
  if (res != ncclSuccess)
    return batonError(res, "rank %d: bootstrap send to rank %d (tag 0x%llx) failed: %s", rank_, peer,
                      (unsigned long long)tag, lastError());
  return ncclSuccess;
}

ncclResult_t Bootstrap::recv(int peer, uint64_t tag, void* data, size_t size) {
  std::lock_guard<std::mutex> lk(recvMu_);
  auto deliver = [&](const std::vector<char>& payload) -> ncclResult_t {
    if (payload.size() != size)
      return batonError(ncclInternalError,
                        "rank %d: bootstrap message from rank %d (tag 0x%llx) has %zu bytes, expected %zu", rank_, peer,
                        (unsigned long long)tag, payload.size(), size);
    if (size) memcpy(data, payload.data(), size);
    return ncclSuccess;
  };
  for (auto it = parked_.begin(); it != parked_.end(); ++it) {
    if (it->peer == peer && it->tag == tag) {
      ncclResult_t res = deliver(it->data);
      parked_.erase(it);
      return res;
    }
  }
  const uint64_t deadline = bootstrapDeadline();
  uint64_t probeEveryNs = kFirstProbeNs, probeAtNs = nowNs() + probeEveryNs;
  while (true) {
    // A peer that dies before sending leaves nothing to accept: every so often (1 s, doubling up
    // to 8 s) ask whether its listener still answers, so the rank fails in seconds, naming it,
    // rather than after BATON_BOOTSTRAP_TIMEOUT.
    // An abort, the bootstrap deadline or a waiting connection: socketAccept below deals with it.
    if (socketWaitReadable(listenFd_, std::min(deadline, probeAtNs), abortFlag_) == SocketWait::kDeadline &&
        nowNs() < deadline) {
      BATON_CHECK(checkPeerListening(peer, tag));
      probeEveryNs = std::min(2 * probeEveryNs, kLastProbeNs);
      probeAtNs = nowNs() + probeEveryNs;
      continue;
    }
    int fd = -1;
    ncclResult_t res = socketAccept(listenFd_, deadline, abortFlag_, &fd);
    if (res != ncclSuccess)
      return batonError(res, "rank %d: waiting for bootstrap message from rank %d (tag 0x%llx): %s", rank_, peer,
                        (unsigned long long)tag, lastError());
    // A message once accepted is read whole, abort or not (bounded by its own deadline): it may be
    // another caller's (a shrink's id while this rank's aborted operation still waits here), and
    // dropping it would lose it for good.
    const uint64_t connDeadline = std::min<uint64_t>(deadline, nowNs() + 5000000000ull);
    PeerHeader h{};
    if (!socketCheckHandshake(fd, magic_, kSocketBootstrap, connDeadline) ||
        socketRecvAll(fd, &h, sizeof h, connDeadline, nullptr) != ncclSuccess || !peerHeaderValid(h, nranks_)) {
      BATON_INFO(kSubBootstrap, "rank %d: dropped a malformed bootstrap message (src %d, size %llu)", rank_, h.srcRank,
                 (unsigned long long)h.size);
      socketClose(fd);
      continue;
    }
    if (h.tag == kBootstrapProbeTag) {  // a waiting peer asking whether this rank is alive
      socketClose(fd);
      continue;
    }
    Parked p{h.srcRank, h.tag, std::vector<char>(h.size)};
    res = h.size ? socketRecvAll(fd, p.data.data(), h.size, connDeadline, nullptr) : ncclSuccess;
    socketClose(fd);
    if (res != ncclSuccess) continue;  // truncated: drop it, keep serving
    if (p.peer == peer && p.tag == tag) return deliver(p.data);
    parked_.push_back(std::move(p));
  }
}

ncclResult_t Bootstrap::checkPeerListening(int peer, uint64_t tag) {
  int fd = -1;
  const ListenerState st = socketProbeListener(peers_[peer], 1000, &fd);
  // A peer that sent its message and then closed its communicator refuses too, but what it sent
  // is queued here already (its connect completed before its listener closed): take that first.
  pollfd queued{listenFd_, POLLIN, 0};
  if (st == ListenerState::kRefused && poll(&queued, 1, 0) <= 0) {
    if (peerGone_)
      peerGone_(peer, "its bootstrap listener at " + addressToString(peers_[peer]) + " refuses connections");
    return batonError(ncclRemoteError,
                      "rank %d: waiting for bootstrap message from rank %d (tag 0x%llx): rank %d is gone (its "
                      "bootstrap listener at %s refuses connections: the process exited or was killed)",
                      rank_, peer, (unsigned long long)tag, peer, addressToString(peers_[peer]).c_str());
  }
  if (st == ListenerState::kAccepting) {
    // Say what the connection is, so the peer drops it without a word.
    const uint64_t deadline = nowNs() + 1000000000ull;
    const PeerHeader h{rank_, 0, kBootstrapProbeTag, 0};
    if (socketSendHandshake(fd, magic_, kSocketBootstrap, deadline) == ncclSuccess)
      socketSendAll(fd, &h, sizeof h, deadline);
    socketClose(fd);
  }
  return ncclSuccess;
}

ncclResult_t Bootstrap::allGather(void* all, size_t size) {
  char* base = static_cast<char*>(all);
  const uint64_t tag = nextCollTag();
  const int next = (rank_ + 1) % nranks_, prev = (rank_ + nranks_ - 1) % nranks_;
  for (int step = 0; step < nranks_ - 1; ++step) {
    const int sendBlock = (rank_ - step + nranks_) % nranks_;
    const int recvBlock = (rank_ - step - 1 + nranks_) % nranks_;
    BATON_CHECK(send(next, tag + step, base + sendBlock * size, size));
    BATON_CHECK(recv(prev, tag + step, base + recvBlock * size, size));
  }
  return ncclSuccess;
}

// Dissemination barrier: log2(n) rounds, in round k talk to rank +/- 2^k.
ncclResult_t Bootstrap::barrier() {
  const uint64_t tag = nextCollTag();
  char token = 0;
  for (int dist = 1, round = 0; dist < nranks_; dist <<= 1, ++round) {
    BATON_CHECK(send((rank_ + dist) % nranks_, tag + round, &token, 1));
    BATON_CHECK(recv((rank_ - dist % nranks_ + nranks_) % nranks_, tag + round, &token, 1));
  }
  return ncclSuccess;
}

}  // namespace baton

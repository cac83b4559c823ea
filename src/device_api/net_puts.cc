// Put-with-signal across hosts (net_puts.h): the senders' side on the calling thread, the
// receivers' side as a task of the communicator's proxy.
#include "device_api/net_puts.h"

#include <cstring>
#include <string>
#include <thread>

#include <unistd.h>

#include "comm.h"
#include "exec_model.h"
#include "misc/debug.h"
#include "misc/socket.h"
#include "proxy.h"
#include "register/window.h"

namespace baton {
namespace {

constexpr uint64_t kPutMagic = 0x7475702d6e6f7462ull;  // "bton-put"
constexpr uint64_t kEndMagic = 0x646e652d6e6f7462ull;  // "bton-end"

struct PutHeader {
  uint64_t magic, windowSerial, offset, bytes;
  int64_t signal;
};

}  // namespace

// The receiving half of one peer's puts, run by the proxy thread.
class NetPutRecvTask : public ProxyTask {
 public:
  NetPutRecvTask(ncclComm* comm, NetBackend* net, NetListenComm* listen, const batonDevComm& dev, int peer)
      : comm_(comm), net_(net), listen_(listen), dev_(dev), peer_(peer) {}
  ~NetPutRecvTask() override {
    if (listen_) net_->closeListen(listen_);
    if (recv_) net_->closeRecv(recv_);
  }
  bool ended() const { return ended_.load(std::memory_order_acquire); }

  ncclResult_t progress(bool* didWork, std::string* message) override {
    *didWork = false;
    if (ended_.load(std::memory_order_relaxed)) return ncclSuccess;
    if (!recv_) {
      if (net_->accept(listen_, &recv_) != ncclSuccess) return fail(message, "accepting its connection");
      if (!recv_) return ncclSuccess;
      net_->closeListen(listen_);
      listen_ = nullptr;
      *didWork = true;
    }
    if (!req_) {
      void* data = inPayload_ ? dst_ : (void*)&hdr_;
      size_t size = inPayload_ ? hdr_.bytes : sizeof hdr_;
      const uint64_t tag = 0;
      NetMemHandle* mh = nullptr;
      if (net_->regMr(nullptr, recv_, data, size, kNetPtrHost, &mh) != ncclSuccess)
        return fail(message, "registering the destination");
      ncclResult_t r = net_->irecv(recv_, 1, &data, &size, &tag, &mh, &req_);
      net_->deregMr(nullptr, recv_, mh);  // sockets: a no-op handle; verbs keep their MR cache
      if (r != ncclSuccess) return fail(message, "posting a receive");
      if (!req_) return ncclSuccess;
    }
    int done = 0, index = 0;
    size_t size = 0;
    uint64_t tag = 0;
    if (net_->test(req_, &done, &size, &index, &tag) != ncclSuccess) {
      req_ = nullptr;
      return fail(message, "receiving");
    }
    if (!done) return ncclSuccess;
    req_ = nullptr;
    *didWork = true;
    if (inPayload_) {
      inPayload_ = false;
      return signal(message);
    }
    if (size != sizeof hdr_ || (hdr_.magic != kPutMagic && hdr_.magic != kEndMagic))
      return fail(message, "a malformed put header");
    if (hdr_.magic == kEndMagic) {
      net_->closeRecv(recv_);
      recv_ = nullptr;
      ended_.store(true, std::memory_order_release);
      return ncclSuccess;
    }
    char* base = nullptr;
    size_t winSize = 0;
    if (!comm_->windows->findSerial(hdr_.windowSerial, &base, &winSize) || hdr_.offset > winSize ||
        hdr_.bytes > winSize - hdr_.offset || hdr_.signal < 0 || hdr_.signal >= dev_.signalCount) {
      *message = "device put from rank " + std::to_string(peer_) + " names window " +
                 std::to_string(hdr_.windowSerial) + " bytes [" + std::to_string(hdr_.offset) + ", +" +
                 std::to_string(hdr_.bytes) + ") and signal " + std::to_string(hdr_.signal) +
                 ", which this rank does not have (deregistered?)";
      return ncclRemoteError;
    }
    if (hdr_.bytes == 0) return signal(message);
    dst_ = base + hdr_.offset;
    inPayload_ = true;
    return ncclSuccess;
  }
  int pollFd() override {
    if (ended_.load(std::memory_order_relaxed)) return -1;
    return recv_ ? net_->pollFd(recv_) : listen_ ? net_->pollFd(listen_) : -1;
  }
  void sever() override {
    if (recv_) net_->shutdown(recv_);
  }

 private:
  // The bytes are in place: the release add publishes them to whoever waits on the signal.
  ncclResult_t signal(std::string*) {
    baton_dev::Atomic64(*baton_dev::signalWord(dev_, dev_.lsaRank, (int)hdr_.signal))
        .fetch_add(1, std::memory_order_release);
    return ncclSuccess;
  }
  ncclResult_t fail(std::string* message, const char* what) {
    *message = std::string("device puts from rank ") + std::to_string(peer_) + ": " + what + ": " + lastError();
    return ncclRemoteError;
  }

  ncclComm* comm_;
  NetBackend* net_;
  NetListenComm* listen_;
  NetRecvComm* recv_ = nullptr;
  NetRequest* req_ = nullptr;
  const batonDevComm dev_;
  const int peer_;
  PutHeader hdr_{};
  bool inPayload_ = false;
  char* dst_ = nullptr;
  std::atomic<bool> ended_{false};
};

ncclResult_t NetPuts::create(ncclComm* comm, const batonDevComm& dev, std::unique_ptr<NetPuts>* out) {
  const int n = comm->nRanks, me = comm->rank;
  auto np = std::unique_ptr<NetPuts>(new NetPuts);
  np->comm_ = comm;
  np->abortFlag_ = &comm->abortFlag;
  BATON_CHECK(selectNetBackend(&np->net_));
  std::vector<bool> local(n, false);
  for (int l = 0; l < dev.lsaSize; ++l) local[dev.lsaWorldRank[l]] = true;
  // Row r of the table: rank r's listening handles, one per peer that will connect to it.
  std::vector<NetHandle> handles((size_t)n * n);
  std::vector<NetListenComm*> listens(n, nullptr);
  ncclResult_t res = ncclSuccess;
  for (int p = 0; p < n && res == ncclSuccess; ++p)
    if (!local[p]) res = np->net_->listen(0, &handles[(size_t)me * n + p], &listens[p]);
  // Every rank joins the exchange even if its listen failed; its peers then fail to connect.
  ncclResult_t ag = comm->bootstrap->allGather(handles.data(), (size_t)n * sizeof(NetHandle));
  if (res == ncclSuccess) res = ag;
  np->peers_.resize(n);
  for (int p = 0; p < n; ++p) {
    if (local[p]) continue;
    np->peers_[p] = std::make_unique<Peer>();
    if (listens[p]) {
      np->peers_[p]->recv = std::make_shared<NetPutRecvTask>(comm, np->net_, listens[p], dev, p);
      comm->proxy->add(np->peers_[p]->recv);
    }
  }
  const uint64_t deadline = bootstrapDeadline();
  for (int p = 0; p < n && res == ncclSuccess; ++p) {
    if (local[p]) continue;
    Peer& peer = *np->peers_[p];
    while (res == ncclSuccess && !peer.send) {
      res = np->net_->connect(0, handles[(size_t)p * n + me], np->abortFlag_, &peer.send);
      if (res == ncclSuccess && !peer.send) {
        if (abortRequested(np->abortFlag_) || nowNs() > deadline)
          res = batonError(ncclRemoteError, "batonDevCommCreate: rank %d could not connect to rank %d for device puts",
                           me, p);
        usleep(1000);
      }
    }
  }
  if (res != ncclSuccess) return res;
  BATON_INFO(kSubInit, "batonDevCommCreate: rank %d: device puts to %d ranks of other hosts over %s", me,
             n - dev.lsaSize, np->net_->name());
  *out = std::move(np);
  return ncclSuccess;
}

NetPuts::~NetPuts() {
  // A local release (the communicator going away) still ends each stream with the marker, so the
  // peer's proxy takes the close for an end, not for a failure; a rank that dies sends none.
  const bool quiet = quietErrors();
  quietErrors() = true;
  for (int q = 0; q < (int)peers_.size(); ++q) {
    if (!peers_[q] || !peers_[q]->send) continue;
    Peer& p = *peers_[q];
    PutHeader h{kEndMagic, 0, 0, 0, 0};
    if (!abortRequested(abortFlag_)) (void)sendAll(p, q, &h, sizeof h);
    net_->closeSend(p.send);
  }
  quietErrors() = quiet;
}

ncclResult_t NetPuts::sendAll(Peer& p, int peer, void* data, size_t bytes) {
  NetMemHandle* mh = nullptr;
  BATON_CHECK(net_->regMr(p.send, nullptr, data, bytes, kNetPtrHost, &mh));
  NetRequest* req = nullptr;
  ncclResult_t res = ncclSuccess;
  int done = 0;
  for (unsigned spin = 0; res == ncclSuccess && !done; ++spin) {
    if (!req) res = net_->isend(p.send, data, bytes, 0, mh, &req);
    if (res == ncclSuccess && req) {
      size_t size = 0;
      int index = 0;
      uint64_t tag = 0;
      res = net_->test(req, &done, &size, &index, &tag);
      if (res != ncclSuccess) req = nullptr;  // test frees a failed request
    }
    if (res == ncclSuccess && !done) {
      if (abortRequested(abortFlag_)) {
        res = batonError(ncclInvalidUsage, "batonPutSignal: communicator aborted while sending to rank %d", peer);
        break;
      }
      if (spin > 64) std::this_thread::yield();
    }
  }
  net_->deregMr(p.send, nullptr, mh);
  if (res != ncclSuccess && res != ncclInvalidUsage)
    return batonError(res, "batonPutSignal: sending to rank %d: %s", peer, lastError());
  return res;
}

ncclResult_t NetPuts::put(int peer, uint64_t windowSerial, size_t offset, const void* src, size_t bytes, int signal) {
  Peer& p = *peers_[peer];
  std::lock_guard<std::mutex> lock(p.mu);
  if (!p.send) return batonError(ncclInvalidUsage, "batonPutSignal: the connection to rank %d is closed", peer);
  PutHeader h{kPutMagic, windowSerial, offset, bytes, signal};
  BATON_CHECK(sendAll(p, peer, &h, sizeof h));
  if (bytes) BATON_CHECK(sendAll(p, peer, const_cast<void*>(src), bytes));
  return ncclSuccess;
}

ncclResult_t NetPuts::finish() {
  ncclResult_t res = ncclSuccess;
  for (int q = 0; q < (int)peers_.size(); ++q) {
    if (!peers_[q]) continue;
    Peer& p = *peers_[q];
    std::lock_guard<std::mutex> lock(p.mu);
    if (!p.send) continue;
    PutHeader h{kEndMagic, 0, 0, 0, 0};
    ncclResult_t r = sendAll(p, q, &h, sizeof h);
    if (res == ncclSuccess) res = r;
    net_->closeSend(p.send);
    p.send = nullptr;
  }
  // Every peer's end marker: everything it put before is applied.
  const uint64_t deadline = bootstrapDeadline();
  for (int q = 0; q < (int)peers_.size() && res == ncclSuccess; ++q) {
    if (!peers_[q] || !peers_[q]->recv) continue;
    comm_->proxy->kick();
    while (!peers_[q]->recv->ended()) {
      if (abortRequested(abortFlag_) || nowNs() > deadline) {
        res = batonError(ncclRemoteError, "batonDevCommDestroy: rank %d's device puts did not end", q);
        break;
      }
      usleep(100);
    }
  }
  return res;
}

}  // namespace baton

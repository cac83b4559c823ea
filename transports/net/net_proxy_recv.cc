// The receive half of a NET connection, run by the proxy thread (lesson 08): accepts the peer's
// connection, then for each step waits until the ranks have freed its slot, posts one irecv whose
// candidate buffers are the step's Simple slot and a bounce buffer for LL/LL128, and publishes
// what arrived in the form the ranks' primitives expect.
// Memory-ordering contract: net_transport.h.
#include <poll.h>

#include <algorithm>
#include <cstring>

#include "exec_model.h"
#include "misc/debug.h"
#include "net/net_transport.h"
#include "primitives_api.h"
#include "primitives_ll128.h"

namespace baton {

NetRecvTask::NetRecvTask(NetBackend* net, NetListenComm* listen, std::shared_ptr<HostFifo> fifo, int rank, int peer)
    : net_(net), listen_(listen), fifo_(std::move(fifo)), rank_(rank), peer_(peer) {
  // At least a line: the goodbye lands here too, and a registration needs a non-empty buffer.
  bounceBytes_ = std::max<size_t>({fifo_->layout.stepBytes[kProtoLL], fifo_->layout.stepBytes[kProtoLL128], 128});
  bounce_.reset(new char[bounceBytes_]);
}

NetRecvTask::~NetRecvTask() {
  if (zeroCopySteps_ || zeroCopyMissed_)
    BATON_INFO(kSubNet,
               "NET: rank %d received %llu steps from rank %d zero copy (into registered user buffers), %llu more "
               "through the FIFO (no user buffer offered when posted)",
               rank_, (unsigned long long)zeroCopySteps_, peer_, (unsigned long long)zeroCopyMissed_);
  if (reqUserMh_) net_->deregMr(nullptr, comm_, reqUserMh_);
  if (fifoMh_) net_->deregMr(nullptr, comm_, fifoMh_);
  if (bounceMh_) net_->deregMr(nullptr, comm_, bounceMh_);
  if (comm_) net_->closeRecv(comm_);
  if (listen_) net_->closeListen(listen_);
}

ncclResult_t NetRecvTask::progress(bool* didWork, std::string* message) {
  auto fail = [&](ncclResult_t res, const char* what) {
    *message = "NET: " + std::string(what) + " from rank " + std::to_string(peer_) + " failed: " + lastError();
    return res;
  };
  if (!comm_) {
    ncclResult_t res = net_->accept(listen_, &comm_);
    if (res != ncclSuccess) return fail(res, "accepting the connection");
    if (!comm_) return ncclSuccess;
    net_->closeListen(listen_);
    listen_ = nullptr;
    *didWork = true;
    ncclResult_t res2 = net_->regMr(nullptr, comm_, fifo_->fifo, fifo_->bytes, kNetPtrHost, &fifoMh_);
    if (res2 == ncclSuccess) res2 = net_->regMr(nullptr, comm_, bounce_.get(), bounceBytes_, kNetPtrHost, &bounceMh_);
    if (res2 != ncclSuccess) return fail(res2, "registering the FIFO for the connection");
  }
  ConnFifo* f = fifo_->fifo;
  const FifoLayout& l = fifo_->layout;
  while (!closed_) {
    if (!req_) {
      if (loadAcquire(&f->head) + kSteps < next_ + 1) return ncclSuccess;  // the ranks still read that slot
      // Once this connection carries zero-copy steps, a step the rank has not offered a buffer
      // for is posted only when its message starts arriving: the later the post, the likelier the
      // rank's offer is there (NCCL's proxy knows each operation's buffers; this one learns them
      // from the rank). Back-ends without a descriptor post at once.
      const int slot = (int)(next_ % kSteps);
      const bool offered = loadAcquire(&f->netRecvFor[slot]) == next_ + 1;
      sawOffer_ = sawOffer_ || offered;
      if (sawOffer_ && !offered) {
        pollfd p{net_->pollFd(comm_), POLLIN, 0};
        if (p.fd >= 0 && poll(&p, 1, 0) == 0) return ncclSuccess;
      }
      void* data[kNumProtos + 2];
      size_t sizes[kNumProtos + 2];
      uint64_t tags[kNumProtos + 2];
      NetMemHandle* mhs[kNumProtos + 2];
      int n = 0;
      for (int p = 0; p < kNumProtos; ++p) {
        if (!l.stepBytes[p]) continue;
        data[n] = p == kProtoSimple ? fifoBuff(f, l, p) + (next_ % kSteps) * l.stepBytes[p] : bounce_.get();
        sizes[n] = l.stepBytes[p];
        tags[n] = (uint64_t)p;
        mhs[n] = p == kProtoSimple ? fifoMh_ : bounceMh_;
        ++n;
      }
      // A zero-copy step lands in the span of the user's buffer the rank offered for it, or in the
      // Simple slot when the rank has not offered one (yet).
      if (loadAcquire(&f->netRecvFor[slot]) == next_ + 1) {
        reqUser_ = reinterpret_cast<char*>((uintptr_t)f->netRecvPtr[slot]);
        const size_t len = f->netRecvLen[slot];
        ncclResult_t res = net_->regMr(nullptr, comm_, reqUser_, len, kNetPtrHost, &reqUserMh_);
        if (res != ncclSuccess) return fail(res, "registering a user buffer for a receive");
        data[n] = reqUser_, sizes[n] = len, tags[n] = kNetTagDirect, mhs[n] = reqUserMh_, ++n;
      } else if (l.stepBytes[kProtoSimple]) {
        data[n] = fifoBuff(f, l, kProtoSimple) + slot * l.stepBytes[kProtoSimple];
        sizes[n] = l.stepBytes[kProtoSimple], tags[n] = kNetTagDirect, mhs[n] = fifoMh_, ++n;
      }
      data[n] = bounce_.get(), sizes[n] = 0, tags[n] = kNetByeTag, mhs[n] = bounceMh_, ++n;
      ncclResult_t res = net_->irecv(comm_, n, data, sizes, tags, mhs, &req_);
      if (res != ncclSuccess) return fail(res, "receive");
      if (!req_) return ncclSuccess;
    }
    int done = 0;
    size_t wire = 0;
    uint64_t tag = 0;
    ncclResult_t res = net_->test(req_, &done, &wire, nullptr, &tag);
    if (res != ncclSuccess) {
      req_ = nullptr;
      return fail(res, "receive");
    }
    if (!done) return ncclSuccess;
    req_ = nullptr;
    char* user = reqUser_;
    reqUser_ = nullptr;
    if (reqUserMh_) net_->deregMr(nullptr, comm_, reqUserMh_), reqUserMh_ = nullptr;
    if (tag == kNetByeTag) {
      closed_ = true;
      BATON_INFO(kSubNet, "NET: rank %d closed its connection to rank %d", peer_, rank_);
      break;
    }
    const bool direct = (tag & kNetTagMatchMask) == (uint64_t)kNetTagDirect;
    if (direct) ++(user ? zeroCopySteps_ : zeroCopyMissed_), sawOffer_ = true;  // the peer sends zero copy
    BATON_CHECK(deliver(next_, tag, wire, direct && user, message));
    ++next_;
    *didWork = true;
  }
  return ncclSuccess;
}

ncclResult_t NetRecvTask::deliver(uint64_t s, uint64_t tag, size_t wire, bool inUserBuffer, std::string* message) {
  ConnFifo* f = fifo_->fifo;
  const FifoLayout& l = fifo_->layout;
  const int tagProto = (int)(tag & kNetTagMatchMask);
  const int proto = tagProto == kNetTagDirect ? kProtoSimple : tagProto;  // the ranks see a Simple step
  const uint64_t bytes = netTagBytes(tag);
  if (proto >= kNumProtos || !l.stepBytes[proto] || netWireBytes(proto, bytes) != wire) {
    *message = "NET: malformed step " + std::to_string(s) + " from rank " + std::to_string(peer_) + ": protocol " +
               std::to_string(proto) + ", " + std::to_string(bytes) + " payload bytes in a " + std::to_string(wire) +
               "-byte frame";
    return ncclRemoteError;
  }
  const int slot = (int)(s % kSteps);
  // The LL flag clean (primitives_ll.h), done here for the receiver's copy of the slot.
  ConnDev view = makeConnDev(f, l, peer_, kSteps);
  view.step = s;
  cleanLLSlotIfDue(view);
  f->sizes[slot] = bytes;  // before the tail or line 0's flag, which release it
  // The profiler's receive step, before the release: once the rank sees the step, it may end its
  // part and with it the step's ProxyOp (proxy_op_watch.h).
  if (tag & kNetTagWatched) watches_.received(s, netTagWatch(tag), bytes);
  char* dst = fifoBuff(f, l, proto) + slot * l.stepBytes[proto];
  if (proto == kProtoSimple) {
    if (inUserBuffer) f->netRecvLanded[slot] = s + 1;  // the rank skips its copy out
    storeRelease(&f->tail, s + 1);
  } else if (proto == kProtoLL) {
    const auto* in = reinterpret_cast<const uint64_t*>(bounce_.get());
    auto* out = reinterpret_cast<uint64_t*>(dst);
    for (size_t i = 0; i < wire / 8; ++i) storeRelease(out + i, in[i]);  // data and flag in one store
  } else {
    const auto* in = reinterpret_cast<const LL128Line*>(bounce_.get());
    auto* out = reinterpret_cast<LL128Line*>(dst);
    for (size_t i = 0; i < wire / sizeof(LL128Line); ++i) {
      memcpy(out[i].data, in[i].data, sizeof in[i].data);
      storeRelease(&out[i].flag, in[i].flag);
    }
  }
  return ncclSuccess;
}

}  // namespace baton

// The send half of a NET connection, run by the proxy thread (lesson 08): watches the ranks'
// staging FIFO, sends each finished step as one network message, and returns the slot to the
// ranks (head) once the back-end has taken it. Up to kSteps messages are in flight.
// Memory-ordering contract: net_transport.h.
#include <unistd.h>

#include "exec_model.h"
#include "misc/debug.h"
#include "net/net_transport.h"
#include "primitives_api.h"
#include "primitives_ll128.h"

namespace baton {

NetSendTask::NetSendTask(NetBackend* net, NetSendComm* comm, std::shared_ptr<HostFifo> fifo, int rank, int peer,
                         std::string peerAddr, const volatile int* abortFlag)
    : net_(net),
      comm_(comm),
      fifo_(std::move(fifo)),
      rank_(rank),
      peer_(peer),
      peerAddr_(std::move(peerAddr)),
      abortFlag_(abortFlag) {}

ncclResult_t NetSendTask::registerFifo() {
  return net_->regMr(comm_, nullptr, fifo_->fifo, fifo_->bytes, kNetPtrHost, &mh_);
}

// Runs after the proxy stopped (commFree). An orderly close says goodbye, so the peer can tell it
// from a crash (waiting at most 200 ms for the back-end to take it); an aborted or failed
// communicator just closes, so its peers see the connection end and fail.
NetSendTask::~NetSendTask() {
  NetRequest* bye = nullptr;
  const uint64_t until = nowNs() + 200000000ull;
  // isend may say "later" (InfiniBand: until the peer posts a receive), so ask until the deadline.
  while (!severed_ && !abortRequested(abortFlag_) && !bye && nowNs() < until &&
         net_->isend(comm_, fifo_->fifo, 0, kNetByeTag, mh_, &bye) == ncclSuccess && !bye)
    usleep(50);
  int done = 0;
  while (bye && !done && net_->test(bye, &done, nullptr, nullptr, nullptr) == ncclSuccess && nowNs() < until)
    usleep(50);
  for (NetMemHandle* m : userMh_)
    if (m) net_->deregMr(comm_, nullptr, m);
  if (mh_) net_->deregMr(comm_, nullptr, mh_);
  if (zeroCopySteps_)
    BATON_INFO(kSubNet, "NET: rank %d sent %llu steps to rank %d zero copy (from registered user buffers)", rank_,
               (unsigned long long)zeroCopySteps_, peer_);
  net_->closeSend(comm_);
}

// Which protocol did step s use? A step's LL/LL128 line 0 carries flag s + 1 only if s used that
// protocol (a slot's older flags are s + 1 - 8k, and the LL clean step keeps 32-bit flags from
// wrapping onto it); otherwise a tail that covers s says it was Simple. The acquire of line 0's
// flag (LL/LL128) or of tail (Simple) orders the read of sizes[] after the rank's write.
bool NetSendTask::stepReady(uint64_t s, int* proto, uint64_t* bytes) {
  ConnFifo* f = fifo_->fifo;
  const FifoLayout& l = fifo_->layout;
  const uint64_t tail = loadAcquire(&f->tail);
  const int slot = (int)(s % kSteps);
  if (l.stepBytes[kProtoLL]) {
    const auto* line = reinterpret_cast<const LLLine*>(fifoBuff(f, l, kProtoLL) + slot * l.stepBytes[kProtoLL]);
    const uint64_t a = loadAcquire(&line->half[0]), b = loadAcquire(&line->half[1]);
    if ((uint32_t)(a >> 32) == (uint32_t)(s + 1) && (uint32_t)(b >> 32) == (uint32_t)(s + 1)) {
      *proto = kProtoLL;
      *bytes = f->sizes[slot];
      return true;
    }
  }
  if (l.stepBytes[kProtoLL128]) {
    const auto* line =
        reinterpret_cast<const LL128Line*>(fifoBuff(f, l, kProtoLL128) + slot * l.stepBytes[kProtoLL128]);
    if (loadAcquire(&line->flag) == s + 1) {
      *proto = kProtoLL128;
      *bytes = f->sizes[slot];
      return true;
    }
  }
  if (tail >= s + 1) {
    *proto = f->netSendFor[slot] == s + 1 ? kNetTagDirect : kProtoSimple;  // a zero-copy step names its span
    *bytes = f->sizes[slot];
    return true;
  }
  return false;
}

ncclResult_t NetSendTask::progress(bool* didWork, std::string* message) {
  ConnFifo* f = fifo_->fifo;
  const FifoLayout& l = fifo_->layout;
  // Completions, in order: each returns one slot to the ranks.
  while (done_ < posted_) {
    int done = 0;
    ncclResult_t res = net_->test(reqs_[done_ % kSteps], &done, nullptr, nullptr, nullptr);
    if (res != ncclSuccess) {
      *message = "NET: send to rank " + std::to_string(peer_) + " (" + peerAddr_ + ") failed: " + lastError();
      return res;
    }
    if (!done) break;
    if (auto w = watches_.covering(done_)) {  // NCCL's ProxyStep events (src/proxy_op_watch.h)
      w->stepDone(done_, sentBytes_[done_ % kSteps]);
      w->proxyDone(done_);
    }
    reqs_[done_ % kSteps] = nullptr;
    if (NetMemHandle*& m = userMh_[done_ % kSteps]) net_->deregMr(comm_, nullptr, m), m = nullptr;
    ++done_;
    storeRelease(&f->head, done_);
    *didWork = true;
  }
  // New steps.
  while (posted_ < done_ + kSteps) {
    const uint64_t s = posted_;
    int proto = 0;
    uint64_t bytes = 0;
    if (!stepReady(s, &proto, &bytes)) break;
    const bool direct = proto == kNetTagDirect;
    const int slotProto = direct ? kProtoSimple : proto;
    if (bytes > l.stepBytes[slotProto] || netWireBytes(proto, bytes) > l.stepBytes[slotProto]) {
      *message = "NET: rank " + std::to_string(rank_) + " step " + std::to_string(s) + " to rank " +
                 std::to_string(peer_) + " claims " + std::to_string(bytes) + " bytes, more than its slot";
      return ncclInternalError;
    }
    char* slot = direct ? reinterpret_cast<char*>((uintptr_t)f->netSendPtr[s % kSteps])
                        : fifoBuff(f, l, proto) + (s % kSteps) * l.stepBytes[proto];
    // LL/LL128 in host memory: every line must carry its flag before the step leaves (NCCL does
    // the same when the staging buffer is not GPU memory written in order).
    if (proto == kProtoLL) {
      const auto* lines = reinterpret_cast<const LLLine*>(slot);
      const uint64_t n = (bytes + 7) / 8;
      for (; linesChecked_ < n; ++linesChecked_) {
        const uint64_t a = loadAcquire(&lines[linesChecked_].half[0]), b = loadAcquire(&lines[linesChecked_].half[1]);
        if ((uint32_t)(a >> 32) != (uint32_t)(s + 1) || (uint32_t)(b >> 32) != (uint32_t)(s + 1)) return ncclSuccess;
      }
    } else if (proto == kProtoLL128) {
      const auto* lines = reinterpret_cast<const LL128Line*>(slot);
      const uint64_t n = (bytes + kLL128DataBytes - 1) / kLL128DataBytes;
      for (; linesChecked_ < n; ++linesChecked_)
        if (loadAcquire(&lines[linesChecked_].flag) != s + 1) return ncclSuccess;
    }
    NetMemHandle* mh = mh_;
    if (direct) {  // the user's span needs its own registration (InfiniBand: an MR from the cache)
      NetMemHandle*& m = userMh_[s % kSteps];
      ncclResult_t res = m ? ncclSuccess : net_->regMr(comm_, nullptr, slot, bytes, kNetPtrHost, &m);
      if (res != ncclSuccess) {
        *message = "NET: registering a user buffer for rank " + std::to_string(peer_) + " failed: " + lastError();
        return res;
      }
      mh = m;
    }
    NetRequest* req = nullptr;
    uint64_t tag = netStepTag(proto, bytes);
    std::shared_ptr<ProxyOpWatch> w = watches_.covering(s);  // the receiver's profiler learns its operation
    if (w) tag |= kNetTagWatched | (w->ordinal & ProxyOpWatches::kOrdinalMask) << kNetTagWatchShift;
    if (w) w->stepPosted(s);  // before the send: a network plugin's own events go under the step's
    ncclResult_t res =
        w ? net_->isendProfiled(comm_, slot, netWireBytes(proto, bytes), tag, mh, w->netPluginParent(s), &req)
          : net_->isend(comm_, slot, netWireBytes(proto, bytes), tag, mh, &req);
    if (res != ncclSuccess) {
      *message = "NET: send to rank " + std::to_string(peer_) + " (" + peerAddr_ + ") failed: " + lastError();
      return res;
    }
    if (!req) break;  // the back-end is full: try again later (a zero-copy span stays registered)
    reqs_[s % kSteps] = req;
    sentBytes_[s % kSteps] = bytes;
    zeroCopySteps_ += direct;
    linesChecked_ = 0;
    ++posted_;
    *didWork = true;
  }
  return ncclSuccess;
}

}  // namespace baton

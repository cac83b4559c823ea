// The Simple protocol's primitives (primitives_api.h names them): bulk slices, one tail store each.
//
// Computes: each call moves `n` elements through the connectors in slices of one FIFO step. Per
// slice it waits for data (recv tail) and for credit (send head), runs reduceCopy from the receive
// slot and/or the user's source into the send slot and/or the user's destination, then publishes.
// Introduced in lesson 03 (docs/lessons/03-pipelining.md).
//
// Memory-ordering contract (Simple): payload and slot size are plain stores; the tail store
// (storeRelease, after the block barrier) releases the slot to the receiver; the receiver's
// loadAcquire of tail orders its payload reads after it; the head store (storeRelease) releases the
// slot back to the sender. On a GPU the barrier + release store is the "fence then tail" of NCCL's
// PostSend thread; on the CPU the release store alone is enough.
//
// NET zero copy (lesson 09): on a connector with netDirect set (a NET staging FIFO, registered
// buffers) a step whose outgoing values already lie in a user buffer (dst once written, or src when
// no pre-op changes it) is not copied into the slot: netSendPtr names the span, written with
// netSendFor = step + 1 before the tail store, and the proxy sends from it. A step that only copies
// what arrives into dst offers that span (netRecvPtr/Len, released by storeRelease(netRecvFor,
// step + 1), up to kSteps steps ahead within one call); where the proxy landed it there
// (netRecvLanded == step + 1, written before the tail store we acquire) the copy out is skipped.
// The operation ends (destructor) only once head says the proxy sent every step: the caller may
// reuse its buffers then.
#pragma once

#include "connector.h"
#include "exec_model.h"
#include "primitives_api.h"
#include "reduce_ops.h"

namespace baton {

template <typename T, typename Op>
class Primitives<T, Op, ProtoSimple> : public PrimitivesApi<Primitives<T, Op, ProtoSimple>, T> {
 public:
  // Either connector may be null when the algorithm only sends or only receives.
  BATON_HD Primitives(ExecCtx& ctx, ConnDev* recvConn, ConnDev* sendConn, const Op& op)
      : ctx_(ctx), recv_(recvConn), send_(sendConn), op_(op) {}
  BATON_HD ~Primitives() { drainNetSends(); }

  // M.recv: read the receive slot. M.send: fill the send slot. M.src/M.dst: user buffers.
  template <Moves M>
  BATON_HD void run(const T* src, T* dst, size_t n) {
    if (ctx_.failed) return;  // a peer or the abort flag stopped us: drain as no-ops
    constexpr int P = kProtoSimple;
    // NET zero copy: what leaves equals a user span (dst gets the same values as the slot), and
    // what arrives goes unchanged into dst.
    constexpr bool kSendSpan = M.send && (M.dst || (M.src && !M.recv && (!M.preSrc || Op::kPreIdentity)));
    constexpr bool kRecvSpan = M.recv && M.dst && !M.src && (!M.post || Op::kPostIdentity);
    bool zcSend = false, zcRecv = false;
    if constexpr (kSendSpan) zcSend = send_->netDirect;
    if constexpr (kRecvSpan) zcRecv = recv_->netDirect;
    const size_t sliceElems = (send_ ? send_->stepBytes[P] : recv_->stepBytes[P]) / sizeof(T);
    if (zcRecv && threadId(ctx_) == 0)
      for (int i = 0; i < kSteps; ++i) offerRecv(dst, n, (size_t)i * sliceElems, sliceElems, recv_->step + i);
    for (size_t off = 0; off < n; off += sliceElems) {
      const size_t cnt = minSize(sliceElems, n - off);
      const uint64_t bytes = cnt * sizeof(T);
      const uint64_t t0 = traceStart(ctx_);
      T* recvSlot = nullptr;
      T* sendSlot = nullptr;
      if (threadId(ctx_) == 0) {
        if (M.recv) waitAtLeast(ctx_, &recv_->fifo->tail, recv_->step + 1, recv_->peer, "recv tail");
        if (M.send && !ctx_.failed) waitSendCredit(ctx_, *send_);
        if (M.send && !ctx_.failed) cleanLLSlotIfDue(*send_);
      }
      blockBarrier();
      if (ctx_.failed) return;
      bool landed = false;
      if constexpr (M.recv) {
        recvSlot = reinterpret_cast<T*>(slotPtr(*recv_, P, recv_->step));
        const uint64_t got = recv_->fifo->sizes[recv_->step % kSteps];
        if (got != bytes) return failSlotSize(ctx_, recv_->peer, bytes, got);
        landed = zcRecv && netRecvLanded(recv_->fifo, recv_->step);
      }
      if constexpr (M.send) sendSlot = reinterpret_cast<T*>(slotPtr(*send_, P, send_->step));
      T* span = nullptr;
      if constexpr (kSendSpan) span = !zcSend ? nullptr : M.dst ? dst + off : const_cast<T*>(src + off);
      sentSpans_ = sentSpans_ || span;  // every thread, so all of them join the drain's barrier
      if (landed) {                     // the data is in dst already; only a send slot may still need it
        if constexpr (M.send)
          if (!span)
            reduceCopy<T, Op, Moves{.send = true, .src = true}>(ctx_, op_, nullptr, dst + off, sendSlot, nullptr, cnt);
      } else if (span) {  // the same moves without the send slot: the proxy reads dst instead
        constexpr Moves kNoSend{.recv = M.recv, .src = M.src, .dst = M.dst, .preSrc = M.preSrc, .post = M.post};
        if constexpr (M.dst)
          reduceCopy<T, Op, kNoSend>(ctx_, op_, recvSlot, M.src ? src + off : nullptr, nullptr, dst + off, cnt);
      } else {
        reduceCopy<T, Op, M>(ctx_, op_, recvSlot, M.src ? src + off : nullptr, sendSlot, M.dst ? dst + off : nullptr,
                             cnt);
      }
      blockBarrier();
      // One thread publishes and advances the step counters; the next slice's barrier orders the
      // other threads' reads of `step` after this update.
      if (threadId(ctx_) == 0) {
        if (span) netSendFrom(send_->fifo, send_->step, span);
        // The slot's next step, offered before the head store lets the proxy reuse the slot.
        if (zcRecv) offerRecv(dst, n, off + (size_t)kSteps * sliceElems, sliceElems, recv_->step + kSteps);
        finishStep<ProtoSimple, M>(ctx_, recv_, send_, bytes, t0);
      }
    }
    blockBarrier();
  }

 private:
  // Offers dst's elements [off, off + slice) for step `step` of the receive connector (nothing
  // past n).
  BATON_HD void offerRecv(T* dst, size_t n, size_t off, size_t slice, uint64_t step) {
    if (off < n) netOfferRecv(recv_->fifo, step, dst + off, minSize(slice, n - off) * sizeof(T));
  }

  // Waits until the proxy has sent every step so far, and with them every span handed to it.
  BATON_HD void drainNetSends() {
    if (!sentSpans_) return;
    if (!ctx_.failed && threadId(ctx_) == 0)
      waitAtLeast(ctx_, &send_->fifo->head, send_->step, send_->peer, "send head (NET zero copy sent)");
    blockBarrier();
    sentSpans_ = false;
  }

  ExecCtx& ctx_;
  ConnDev* recv_;
  ConnDev* send_;
  Op op_;
  bool sentSpans_ = false;  // NET zero copy: the proxy may still read a user buffer (drainNetSends)
};

template <typename T, typename Op>
using PrimitivesSimple = Primitives<T, Op, ProtoSimple>;

}  // namespace baton

// The Simple protocol's primitives: send, recv, recvReduceSend, recvReduceCopy, recvCopySend,
// recvReduceCopySend, copySend. Collectives are written against these and never against a transport.
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
#pragma once

#include "connector.h"
#include "exec_model.h"
#include "reduce_ops.h"

namespace baton {

struct ProtoSimple {
  static constexpr const char* name = "Simple";
};

template <typename T, typename Op>
class PrimitivesSimple {
 public:
  // Either connector may be null when the algorithm only sends or only receives.
  BATON_HD PrimitivesSimple(ExecCtx& ctx, ConnDev* recvConn, ConnDev* sendConn, const Op& op)
      : ctx_(ctx), recv_(recvConn), send_(sendConn), op_(op) {}

  BATON_HD void send(const T* src, size_t n) { run<false, true, true, false, true, false>(src, nullptr, n); }
  BATON_HD void recv(T* dst, size_t n) { run<true, false, false, true, false, false>(nullptr, dst, n); }
  BATON_HD void copySend(const T* src, T* dst, size_t n) { run<false, true, true, true, true, false>(src, dst, n); }
  BATON_HD void recvCopySend(T* dst, size_t n) { run<true, true, false, true, false, false>(nullptr, dst, n); }
  BATON_HD void recvReduceSend(const T* src, size_t n) { run<true, true, true, false, true, false>(src, nullptr, n); }
  // postOp (e.g. the division of ncclAvg) is applied to what is written out, once, at the end.
  BATON_HD void recvReduceCopy(const T* src, T* dst, size_t n, bool postOp) {
    if (postOp) run<true, false, true, true, true, true>(src, dst, n);
    else run<true, false, true, true, true, false>(src, dst, n);
  }
  BATON_HD void recvReduceCopySend(const T* src, T* dst, size_t n, bool postOp) {
    if (postOp) run<true, true, true, true, true, true>(src, dst, n);
    else run<true, true, true, true, true, false>(src, dst, n);
  }
  // Send values that are already reduced (no pre-op): the naive root's result going back out.
  BATON_HD void sendReduced(const T* src, size_t n) { run<false, true, true, false, false, false>(src, nullptr, n); }
  // Accumulate into a buffer that already holds pre-applied values (the naive root's running sum).
  BATON_HD void recvReduceAccumulate(T* acc, size_t n, bool postOp) {
    if (postOp) run<true, false, true, true, false, true>(acc, acc, n);
    else run<true, false, true, true, false, false>(acc, acc, n);
  }

 private:
  // Recv: read the receive slot. Send: fill the send slot. Src/Dst: user buffers.
  template <bool Recv, bool Send, bool Src, bool Dst, bool PreSrc, bool Post>
  BATON_HD void run(const T* src, T* dst, size_t n) {
    if (ctx_.failed) return;  // a peer or the abort flag stopped us: drain as no-ops
    const size_t sliceElems = stepElems();
    for (size_t off = 0; off < n; off += sliceElems) {
      const size_t cnt = minSize(sliceElems, n - off);
      const uint64_t bytes = cnt * sizeof(T);
      T* recvSlot = nullptr;
      T* sendSlot = nullptr;
      if (threadId(ctx_) == 0) {
        if (Recv && !waitAtLeast(ctx_, &recv_->fifo->tail, recv_->step + 1, recv_->peer, "recv tail")) {}
        // Credit: slot `step` is free once the receiver has consumed step + 1 - depth steps.
        if (Send && !ctx_.failed && send_->step + 1 > (uint64_t)send_->depth &&
            !waitAtLeast(ctx_, &send_->fifo->head, send_->step + 1 - send_->depth, send_->peer,
                         "send head (credit)")) {}
      }
      blockBarrier();
      if (ctx_.failed) return;
      if constexpr (Recv) {
        recvSlot = reinterpret_cast<T*>(slotPtr(*recv_, recv_->step));
        const uint64_t got = recv_->fifo->sizes[recv_->step % kSteps];
        if (got != bytes) {  // the peer posted a different size: mismatched counts across ranks
          ctx_.failed = true;
          ctx_.failure = {kWaitAborted, ctx_.rank, recv_->peer, ctx_.channel,
                          "slot size (mismatched count across ranks?)", bytes, got};
          return;
        }
      }
      if constexpr (Send) sendSlot = reinterpret_cast<T*>(slotPtr(*send_, send_->step));
      reduceCopy<T, Op, Recv, Src, PreSrc, Send, Dst, Post>(ctx_, op_, recvSlot, Src ? src + off : nullptr,
                                                            sendSlot, Dst ? dst + off : nullptr, cnt);
      blockBarrier();
      // One thread publishes and advances the step counters; the next slice's barrier orders the
      // other threads' reads of `step` after this update.
      if (threadId(ctx_) == 0) {
        if constexpr (Send) {
          send_->fifo->sizes[send_->step % kSteps] = bytes;
          publish(ctx_, &send_->fifo->tail, send_->step + 1);
          send_->step++;
        }
        if constexpr (Recv) {
          publish(ctx_, &recv_->fifo->head, recv_->step + 1);
          recv_->step++;
        }
      }
    }
    blockBarrier();
  }

  BATON_HD size_t stepElems() const {
    const uint64_t b = send_ ? send_->stepBytes : recv_->stepBytes;
    return b / sizeof(T);
  }

  ExecCtx& ctx_;
  ConnDev* recv_;
  ConnDev* send_;
  Op op_;
};

}  // namespace baton

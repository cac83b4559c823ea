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

  // M.recv: read the receive slot. M.send: fill the send slot. M.src/M.dst: user buffers.
  template <Moves M>
  BATON_HD void run(const T* src, T* dst, size_t n) {
    if (ctx_.failed) return;  // a peer or the abort flag stopped us: drain as no-ops
    constexpr int P = kProtoSimple;
    const size_t sliceElems = (send_ ? send_->stepBytes[P] : recv_->stepBytes[P]) / sizeof(T);
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
      if constexpr (M.recv) {
        recvSlot = reinterpret_cast<T*>(slotPtr(*recv_, P, recv_->step));
        const uint64_t got = recv_->fifo->sizes[recv_->step % kSteps];
        if (got != bytes) return failSlotSize(ctx_, recv_->peer, bytes, got);
      }
      if constexpr (M.send) sendSlot = reinterpret_cast<T*>(slotPtr(*send_, P, send_->step));
      reduceCopy<T, Op, M>(ctx_, op_, recvSlot, M.src ? src + off : nullptr, sendSlot, M.dst ? dst + off : nullptr,
                           cnt);
      blockBarrier();
      // One thread publishes and advances the step counters; the next slice's barrier orders the
      // other threads' reads of `step` after this update.
      if (threadId(ctx_) == 0) finishStep<ProtoSimple, M>(ctx_, recv_, send_, bytes, t0);
    }
    blockBarrier();
  }

 private:
  ExecCtx& ctx_;
  ConnDev* recv_;
  ConnDev* send_;
  Op op_;
};

template <typename T, typename Op>
using PrimitivesSimple = Primitives<T, Op, ProtoSimple>;

}  // namespace baton

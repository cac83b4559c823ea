// The primitive operations every protocol offers, named as in NCCL's primitives.h. Collectives are
// written against these names and never against a transport or a protocol's line format.
//
// Computes: each call moves `n` elements through the connectors, slice by slice (one FIFO step of
// the protocol per slice), doing what its Moves (moves.h) name: read the receive slot and/or the
// user's source, reduce, write the send slot and/or the user's destination, with the operator's
// pre-op on the source (PreMulSum) and post-op on what is written (ncclAvg) where they apply.
// Introduced in lesson 03 (docs/lessons/03-pipelining.md); the protocols in lesson 04.
//
// Memory-ordering contract: none here; each protocol's run() states its own.
#pragma once

#include <cstddef>

#include "protocols.h"

namespace baton {

// CRTP base: D provides run<Moves>(src, dst, n).
template <typename D, typename T>
class PrimitivesApi {
 public:
  BATON_HD void send(const T* src, size_t n) {
    self().template run<Moves{.send = true, .src = true, .preSrc = true}>(src, nullptr, n);
  }
  BATON_HD void recv(T* dst, size_t n) { self().template run<Moves{.recv = true, .dst = true}>(nullptr, dst, n); }
  BATON_HD void copySend(const T* src, T* dst, size_t n) {
    self().template run<Moves{.send = true, .src = true, .dst = true, .preSrc = true}>(src, dst, n);
  }
  BATON_HD void recvCopySend(T* dst, size_t n) {
    self().template run<Moves{.recv = true, .send = true, .dst = true}>(nullptr, dst, n);
  }
  BATON_HD void recvReduceSend(const T* src, size_t n) {
    self().template run<Moves{.recv = true, .send = true, .src = true, .preSrc = true}>(src, nullptr, n);
  }
  // postOp (e.g. the division of ncclAvg) is applied to what is written out, once, at the end.
  BATON_HD void recvReduceCopy(const T* src, T* dst, size_t n, bool postOp) {
    if (postOp)
      self().template run<Moves{.recv = true, .src = true, .dst = true, .preSrc = true, .post = true}>(src, dst, n);
    else self().template run<Moves{.recv = true, .src = true, .dst = true, .preSrc = true}>(src, dst, n);
  }
  BATON_HD void recvReduceCopySend(const T* src, T* dst, size_t n, bool postOp) {
    if (postOp)
      self().template run<Moves{.recv = true, .send = true, .src = true, .dst = true, .preSrc = true, .post = true}>(
          src, dst, n);
    else self().template run<Moves{.recv = true, .send = true, .src = true, .dst = true, .preSrc = true}>(src, dst, n);
  }
  // Send values that are already reduced (no pre-op): the naive root's result going back out.
  BATON_HD void sendReduced(const T* src, size_t n) {
    self().template run<Moves{.send = true, .src = true}>(src, nullptr, n);
  }
  // Add what arrives to values that are already reduced (no pre-op) and send the sum on: the last
  // child's contribution at a tree rank with several children (tree_allreduce.h).
  BATON_HD void recvAccumulateSend(const T* acc, size_t n) {
    self().template run<Moves{.recv = true, .send = true, .src = true}>(acc, nullptr, n);
  }
  // Accumulate into a buffer that already holds pre-applied values (the naive root's running sum).
  BATON_HD void recvReduceAccumulate(T* acc, size_t n, bool postOp) {
    if (postOp) self().template run<Moves{.recv = true, .src = true, .dst = true, .post = true}>(acc, acc, n);
    else self().template run<Moves{.recv = true, .src = true, .dst = true}>(acc, acc, n);
  }

 private:
  BATON_HD D& self() { return *static_cast<D*>(this); }
};

struct LLLine {
  uint64_t half[2];  // {data1 | flag1 << 32}, {data2 | flag2 << 32}
};

BATON_HD void storeLL(LLLine* line, uint64_t data, uint32_t flag) {
  storeRelease(&line->half[0], (uint64_t)(uint32_t)data | (uint64_t)flag << 32);
  storeRelease(&line->half[1], (data >> 32) | (uint64_t)flag << 32);
}

// LL flag wrap-around (primitives_ll.h): on a clean step, rewrite the whole LL slot of that step
// with the slot's previous flag. Called by the sender of every protocol, before it fills the step.
BATON_HD void cleanLLSlotIfDue(const ConnDev& c) {
  if (!c.buffs[kProtoLL] || ((uint32_t)c.step & kLLCleanMask) != kLLCleanMask) return;
  LLLine* lines = reinterpret_cast<LLLine*>(slotPtr(c, kProtoLL, c.step));
  const uint32_t staleFlag = (uint32_t)(c.step + 1 - kSteps);
  for (size_t l = 0; l < c.stepBytes[kProtoLL] / sizeof(LLLine); ++l) storeLL(lines + l, 0, staleFlag);
}

// The end of one FIFO step of protocol P, run by thread 0: trace it; a Simple sender writes the
// slot size and storeRelease()s tail (LL and LL128 lines carried their own flags); the receiver
// storeRelease()s head to return the slot. Both advance their step.
template <typename P, Moves M>
BATON_HD void finishStep(ExecCtx& ctx, ConnDev* recv, ConnDev* send, uint64_t bytes, uint64_t t0) {
  traceEnd<M>(ctx, P::name, M.send ? send->step : recv->step, bytes, t0);
  if constexpr (M.send) {
    if constexpr (P::id == kProtoSimple) {
      send->fifo->sizes[send->step % kSteps] = bytes;
      publish(ctx, &send->fifo->tail, send->step + 1);
    }
    send->step++;
  }
  if constexpr (M.recv) {
    publish(ctx, &recv->fifo->head, recv->step + 1);
    recv->step++;
  }
}

// Records a slot whose size differs from what this rank expects: counts differ across ranks.
BATON_HD void failSlotSize(ExecCtx& ctx, int peer, uint64_t want, uint64_t got) {
  ctx.failed = true;
  ctx.failure = {kWaitAborted, ctx.rank, peer, ctx.channel, "slot size (mismatched count across ranks?)", want, got};
}

// Records a single copy to or from a peer process that the kernel refused (cross-memory attach):
// the peer is gone (then the liveness check names it) or the mapping changed under us.
BATON_HD void failPeerCopy(ExecCtx& ctx, int peer, const char* what, uint64_t bytes) {
  ctx.failed = true;
  ctx.failure = {kWaitAborted, ctx.rank, peer, ctx.channel, what, bytes, 0};
#if !defined(__CUDA_ARCH__)
  if (ctx.peerPids && peer >= 0 && ctx.peerPids[peer] && !processAlive(ctx.peerPids[peer]))
    ctx.failure.result = kWaitPeerDead;
#endif
}

// Credit for the sender's next step: slot `step` is free once the receiver has consumed
// step + 1 - depth steps. Run by thread 0. The last head value seen is kept, so the sender reads
// the receiver's head line (a cache miss: the receiver wrote it) only when that value is not
// enough, about once per depth steps instead of every step.
BATON_HD void waitSendCredit(ExecCtx& ctx, ConnDev& c) {
  if (c.step + 1 <= c.headSeen + (uint64_t)c.depth) return;
  if (waitAtLeast(ctx, &c.fifo->head, c.step + 1 - c.depth, c.peer, "send head (credit)"))
    c.headSeen = loadAcquire(&c.fifo->head);
}

}  // namespace baton

// Point-to-point transfers as non-blocking steps: ncclSend / ncclRecv, and through them AlltoAll,
// Gather and Scatter.
//
// Computes: one call moves at most one FIFO step of a send (user buffer -> slot) or a receive
// (slot -> user buffer) if the connector allows it right now, and says whether it did. The caller
// (src/sendrecv_executor.cc) round-robins over every transfer of a group, so a group's sends and
// receives progress together in any order and mutually dependent pairs cannot deadlock.
// Introduced in lesson 03 (docs/lessons/03-pipelining.md).
//
// NET zero copy (lesson 09): a transfer over NET whose user buffer is registered copies nothing.
// The sender names the span of its buffer for each step (netSendPtr) and the proxy sends from it;
// the transfer ends once head says the proxy has handed the last step to the network. The
// receiver offers the span of its buffer for each step (netRecvPtr, up to kSteps ahead) and the
// proxy receives into it; a step the proxy had already posted into the slot before the offer
// (netRecvLanded says which) is copied out as usual.
//
// Memory-ordering contract: as connector.h: the sender's tail store (after the payload, or the
// netSendPtr entry, and the slot size) releases a slot; the receiver's head store (after copying
// out) gives it back. A receive offer's entries are released by storeRelease(netRecvFor[slot],
// step + 1); the rank rewrites a slot's offer only after consuming the step the proxy used it for.
#pragma once

#include "connector.h"
#include "exec_model.h"
#include "primitives_api.h"

namespace baton {

struct SendRecvTransfer {
  char* buf = nullptr;  // user buffer (the source of a send, the destination of a receive)
  size_t bytes = 0;
  size_t done = 0;
  ConnDev* conn = nullptr;
  int peer = -1;
  bool zeroCopy = false;    // NET and a registered buffer: the proxy sends from / receives into buf
  uint64_t firstStep = 0;   // zero-copy receive: the connector step of buf's first byte (once offered)
  bool offered = false;     // zero-copy receive: the first kSteps steps are offered
  uint64_t drainUntil = 0;  // zero-copy send: head must reach this before buf is the caller's again
  BATON_HD bool complete() const { return done >= bytes && drainUntil == 0; }
};

// Offers the span of a zero-copy receive's buffer that step `step` fills (nothing past its end).
BATON_HD void sendRecvOfferStep(SendRecvTransfer& t, uint64_t step) {
  ConnDev& c = *t.conn;
  const uint64_t off = (step - t.firstStep) * c.stepBytes[kProtoSimple];
  if (off >= t.bytes) return;
  netOfferRecv(c.fifo, step, t.buf + off, minSize(c.stepBytes[kProtoSimple], t.bytes - off));
}

BATON_HD bool sendRecvTrySend(ExecCtx& ctx, SendRecvTransfer& t) {
  if (t.complete() || ctx.failed) return false;
  ConnDev& c = *t.conn;
  if (t.done >= t.bytes) {  // zero copy: wait until the proxy has sent the last step from buf
    if (loadAcquire(&c.fifo->head) < t.drainUntil) return false;
    t.drainUntil = 0;
    return true;
  }
  if (loadAcquire(&c.fifo->head) + c.depth < c.step + 1) return false;  // no credit yet
  cleanLLSlotIfDue(c);  // p2p connectors have no LL buffer today; kept for when they do
  const size_t n = minSize(c.stepBytes[kProtoSimple], t.bytes - t.done);
  const int slot = (int)(c.step % kSteps);
  if (t.zeroCopy) {
    netSendFrom(c.fifo, c.step, t.buf + t.done);
  } else {
    copyBytes(ctx, slotPtr(c, kProtoSimple, c.step), t.buf + t.done, n);
  }
  blockBarrier();
  if (threadId(ctx) == 0) {  // one thread publishes and advances; the barrier below orders the rest
    c.fifo->sizes[slot] = n;
    publish(ctx, &c.fifo->tail, c.step + 1);
    c.step++;
    t.done += n;
    if (t.zeroCopy && t.done >= t.bytes) t.drainUntil = c.step;
  }
  blockBarrier();
  return true;
}

BATON_HD bool sendRecvTryRecv(ExecCtx& ctx, SendRecvTransfer& t) {
  if (t.complete() || ctx.failed) return false;
  ConnDev& c = *t.conn;
  if (t.zeroCopy && !t.offered && threadId(ctx) == 0) {
    t.firstStep = c.step;
    for (uint64_t s = c.step; s < c.step + kSteps; ++s) sendRecvOfferStep(t, s);
    t.offered = true;
  }
  if (loadAcquire(&c.fifo->tail) < c.step + 1) return false;  // nothing arrived yet
  const size_t n = minSize(c.stepBytes[kProtoSimple], t.bytes - t.done);
  const uint64_t got = c.fifo->sizes[c.step % kSteps];
  if (got != n) {  // the sender's count differs from ours
    ctx.failed = true;
    ctx.failure = {kWaitAborted, ctx.rank, t.peer, ctx.channel, "recv slot size (send and recv counts differ?)", n,
                   got};
    return false;
  }
  // The proxy wrote netRecvLanded before the tail store we acquired.
  const bool landed = t.zeroCopy && netRecvLanded(c.fifo, c.step);
  if (!landed) copyBytes(ctx, t.buf + t.done, slotPtr(c, kProtoSimple, c.step), n);
  blockBarrier();
  if (threadId(ctx) == 0) {
    if (t.zeroCopy) sendRecvOfferStep(t, c.step + kSteps);  // the slot's next step, before head frees it
    publish(ctx, &c.fifo->head, c.step + 1);
    c.step++;
    t.done += n;
  }
  blockBarrier();
  return true;
}

}  // namespace baton

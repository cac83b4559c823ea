// Point-to-point transfers as non-blocking steps: ncclSend / ncclRecv, and through them AlltoAll,
// Gather and Scatter.
//
// Computes: one call moves at most one FIFO step of a send (user buffer -> slot) or a receive
// (slot -> user buffer) if the connector allows it right now, and says whether it did. The caller
// (src/sendrecv_executor.cc) round-robins over every transfer of a group, so a group's sends and
// receives progress together in any order and mutually dependent pairs cannot deadlock.
// Introduced in lesson 03 (docs/lessons/03-pipelining.md).
//
// Memory-ordering contract: as connector.h: the sender's tail store (after the payload and the
// slot size) releases a slot; the receiver's head store (after copying out) gives it back.
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
  BATON_HD bool complete() const { return done >= bytes; }
};

BATON_HD bool sendRecvTrySend(ExecCtx& ctx, SendRecvTransfer& t) {
  if (t.complete() || ctx.failed) return false;
  ConnDev& c = *t.conn;
  if (loadAcquire(&c.fifo->head) + c.depth < c.step + 1) return false;  // no credit yet
  cleanLLSlotIfDue(c);  // p2p connectors have no LL buffer today; kept for when they do
  const size_t n = minSize(c.stepBytes[kProtoSimple], t.bytes - t.done);
  copyBytes(ctx, slotPtr(c, kProtoSimple, c.step), t.buf + t.done, n);
  blockBarrier();
  if (threadId(ctx) == 0) {  // one thread publishes and advances; the barrier below orders the rest
    c.fifo->sizes[c.step % kSteps] = n;
    publish(ctx, &c.fifo->tail, c.step + 1);
    c.step++;
    t.done += n;
  }
  blockBarrier();
  return true;
}

BATON_HD bool sendRecvTryRecv(ExecCtx& ctx, SendRecvTransfer& t) {
  if (t.complete() || ctx.failed) return false;
  ConnDev& c = *t.conn;
  if (loadAcquire(&c.fifo->tail) < c.step + 1) return false;  // nothing arrived yet
  const size_t n = minSize(c.stepBytes[kProtoSimple], t.bytes - t.done);
  const uint64_t got = c.fifo->sizes[c.step % kSteps];
  if (got != n) {  // the sender's count differs from ours
    ctx.failed = true;
    ctx.failure = {kWaitAborted, ctx.rank, t.peer, ctx.channel, "recv slot size (send and recv counts differ?)", n,
                   got};
    return false;
  }
  copyBytes(ctx, t.buf + t.done, slotPtr(c, kProtoSimple, c.step), n);
  blockBarrier();
  if (threadId(ctx) == 0) {
    publish(ctx, &c.fifo->head, c.step + 1);
    c.step++;
    t.done += n;
  }
  blockBarrier();
  return true;
}

}  // namespace baton

// Point-to-point transfers as non-blocking steps: ncclSend / ncclRecv, and through them AlltoAll,
// Gather and Scatter.
//
// Computes: one call moves at most one FIFO step of a send (user buffer -> slot) or a receive
// (slot -> user buffer) if the connector allows it right now, and says whether it did. The caller
// (sendRecvRunAll below: the CPU's src/sendrecv_executor.cc and the CUDA backend's send/recv kernel)
// round-robins over every transfer of a group, so a group's sends and receives progress together in
// any order and mutually dependent pairs cannot deadlock. On a GPU every thread of the block takes
// part; thread 0 reads the counters and the block follows its answer, since two threads' loads of
// a counter another device is moving may differ. Introduced in lesson 03
// (docs/lessons/03-pipelining.md).
//
// Codec steps (lesson 15): a transfer with a WireStepCodec quantizes its step into the slot and
// decodes it out of the slot instead of copying (wire_codec_steps.h), and may follow another
// transfer step by step (stepAfter); the counters and their ordering are the copy's.
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
#include "step_check.h"
#include "wire_codec_steps.h"

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
  bool isSend = false;      // for sendRecvRunAll
  bool ready = false;       // thread 0's answer to "may the block move a step now?" (GPU)
  // The fused wire-format stage (wire_codec_steps.h): steps are segments quantized into the slot
  // and decoded out of it instead of copies; bytes counts wire bytes. conn == nullptr: a local
  // transfer, this rank's own segment quantized and decoded in its place in a receive order.
  WireStepCodec* codec = nullptr;
  // A transfer that must follow another one step by step: it takes step k only once `stepAfter` has
  // taken it (the same steps, so the same bytes). The fused stage's fp32 sums add each step in rank
  // order this way, and its AllReduce sends a step of the sums once the last one is added.
  const SendRecvTransfer* stepAfter = nullptr;
  BATON_HD bool waitsForStep() const { return stepAfter && !stepAfter->complete() && stepAfter->done <= done; }
  BATON_HD bool complete() const { return done >= bytes && drainUntil == 0; }
};

// Every thread of the block takes thread 0's answer to `ready()`: the counters it reads may move
// between two threads' loads (and only one thread need poll another device's memory), and the
// block must take one branch. The second barrier keeps thread 0 from overwriting the answer before
// every thread has read it. (One thread per block on the CPU: nothing to agree on.)
template <typename Ready>
BATON_HD bool sendRecvAgree(ExecCtx& ctx, SendRecvTransfer& t, Ready ready) {
#if defined(__CUDA_ARCH__)
  if (threadId(ctx) == 0) t.ready = ready();
  blockBarrier();
  const bool r = t.ready;
  blockBarrier();
  return r;
#else
  (void)ctx, (void)t;
  return ready();
#endif
}

// Offers the span of a zero-copy receive's buffer that step `step` fills (nothing past its end).
BATON_HD void sendRecvOfferStep(SendRecvTransfer& t, uint64_t step) {
  ConnDev& c = *t.conn;
  const uint64_t off = (step - t.firstStep) * c.stepBytes[kProtoSimple];
  if (off >= t.bytes) return;
  netOfferRecv(c.fifo, step, t.buf + off, minSize(c.stepBytes[kProtoSimple], t.bytes - off));
}

BATON_HD bool sendRecvTrySend(ExecCtx& ctx, SendRecvTransfer& t) {
  if (t.complete() || ctx.failed || t.waitsForStep()) return false;
  ConnDev& c = *t.conn;
  if (!stepHoldsElement(ctx, &c, ProtoSimple::name, c.stepBytes[kProtoSimple], 1)) return false;
  if (t.done >= t.bytes) {  // zero copy: wait until the proxy has sent the last step from buf
    if (!sendRecvAgree(ctx, t, [&] { return loadAcquire(&c.fifo->head) >= t.drainUntil; })) return false;
    if (threadId(ctx) == 0) t.drainUntil = 0;
    blockBarrier();
    return true;
  }
  if (!sendRecvAgree(ctx, t, [&] { return loadAcquire(&c.fifo->head) + c.depth >= c.step + 1; }))
    return false;       // no credit yet
  cleanLLSlotIfDue(c);  // p2p connectors have no LL buffer today; kept for when they do
  const size_t n = t.codec ? wireStepBytes(*t.codec, wireStepAt(*t.codec, t.done))
                           : minSize(c.stepBytes[kProtoSimple], t.bytes - t.done);
  const int slot = (int)(c.step % kSteps);
  if (t.codec) {  // scalar codecs: one thread (the CPU's only one; a GPU's thread 0)
    if (threadId(ctx) == 0) {
      uint8_t* to = reinterpret_cast<uint8_t*>(slotPtr(c, kProtoSimple, c.step));
      const size_t k = wireStepAt(*t.codec, t.done);
      wireEncodeStep(*t.codec, k, to);
      if (t.codec->dst) wireDecodeStep(*t.codec, k, to);  // this rank's own copy of what it sends
    }
  } else if (t.zeroCopy) {
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

// A local transfer's step: this rank's own segment, quantized into scratch and decoded, where a
// receive would have decoded a peer's.
BATON_HD bool sendRecvTryLocal(ExecCtx& ctx, SendRecvTransfer& t) {
  WireStepCodec& w = *t.codec;
  const size_t k = wireStepAt(w, t.done);
  if (threadId(ctx) == 0) wireLocalStep(w, k);
  blockBarrier();  // as in a send or a receive: `done` moves only between two barriers
  if (threadId(ctx) == 0) t.done += wireStepBytes(w, k);
  blockBarrier();
  return true;
}

BATON_HD bool sendRecvTryRecv(ExecCtx& ctx, SendRecvTransfer& t) {
  if (t.complete() || ctx.failed || t.waitsForStep()) return false;
  if (!t.conn) return sendRecvTryLocal(ctx, t);
  ConnDev& c = *t.conn;
  if (!stepHoldsElement(ctx, &c, ProtoSimple::name, c.stepBytes[kProtoSimple], 1)) return false;
  if (t.zeroCopy && !t.offered && threadId(ctx) == 0) {  // NET only: never on a GPU's block
    t.firstStep = c.step;
    for (uint64_t s = c.step; s < c.step + kSteps; ++s) sendRecvOfferStep(t, s);
    t.offered = true;
  }
  if (!sendRecvAgree(ctx, t, [&] { return loadAcquire(&c.fifo->tail) >= c.step + 1; }))
    return false;  // nothing arrived yet
  const size_t n = t.codec ? wireStepBytes(*t.codec, wireStepAt(*t.codec, t.done))
                           : minSize(c.stepBytes[kProtoSimple], t.bytes - t.done);
  const uint64_t got = c.fifo->sizes[c.step % kSteps];
  if (got != n) {  // the sender's count differs from ours
    ctx.failed = true;
    ctx.failure = {kWaitAborted, ctx.rank, t.peer, ctx.channel, "recv slot size (send and recv counts differ?)", n,
                   got};
    return false;
  }
  // The proxy wrote netRecvLanded before the tail store we acquired.
  const bool landed = t.zeroCopy && netRecvLanded(c.fifo, c.step);
  if (t.codec) {
    if (threadId(ctx) == 0)
      wireDecodeStep(*t.codec, wireStepAt(*t.codec, t.done),
                     reinterpret_cast<const uint8_t*>(slotPtr(c, kProtoSimple, c.step)));
  } else if (!landed) {
    copyBytes(ctx, t.buf + t.done, slotPtr(c, kProtoSimple, c.step), n);
  }
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

// Runs the transfers xs[0..n) round-robin until every one is complete or the context failed.
// after[i] >= 0 names the transfer before xs[i] on the same connector, which must complete first
// (a connector's transfers run in the order they were issued); -1: none. A wait that made no
// progress for the timeout reports the first transfer that could move.
BATON_HD void sendRecvRunAll(ExecCtx& ctx, SendRecvTransfer* xs, const int* after, int n) {
  int pending = 0;
  for (int i = 0; i < n; ++i) pending += !xs[i].complete();
  uint32_t idle = 0;
  uint64_t idleSince = 0;
  while (pending > 0 && !ctx.failed) {
    bool progressed = false;
    for (int i = 0; i < n; ++i) {
      SendRecvTransfer& t = xs[i];
      if (t.complete() || (after[i] >= 0 && !xs[after[i]].complete())) continue;
      if (!(t.isSend ? sendRecvTrySend(ctx, t) : sendRecvTryRecv(ctx, t))) continue;
      progressed = true;
      if (t.complete()) --pending;
    }
    if (progressed) {
      idle = 0;
      if (threadId(ctx) == 0) waitResumed(ctx, idleSince);
      idleSince = 0;
      continue;
    }
    waitTurn(ctx, idle);
    if (idle % kWaitCheckEvery != 0) continue;
    int i = 0;
    while (i < n &&
           (xs[i].complete() || !xs[i].conn || xs[i].waitsForStep() || (after[i] >= 0 && !xs[after[i]].complete())))
      ++i;
    if (i == n) continue;  // the last one failed (ctx.failed) without progressing
    const SendRecvTransfer& t = xs[i];
    const ConnDev& c = *t.conn;
    // A send needs head >= step + 1 - depth (a free slot), or a zero-copy one that has posted
    // every step head >= its last step + 1; a receive needs tail >= step + 1.
    const uint64_t expected = t.drainUntil ? t.drainUntil : t.isSend ? c.step + 1 - c.depth : c.step + 1;
    if (threadId(ctx) == 0)
      waitGiveUp(ctx, idleSince, t.peer, t.isSend ? "send head (credit)" : "recv tail", expected,
                 loadAcquire(t.isSend ? &c.fifo->head : &c.fifo->tail));
    blockBarrier();  // thread 0's ctx.failed before every thread's loop test
  }
}

}  // namespace baton

// One-shot AllReduce over the FIFOs: for small messages, one hop instead of a ring's 2(k-1).
//
// Computes recvbuff = post(op over ranks of pre(sendbuff)) for a message that fits one LL step:
// every rank writes its (pre-applied) input as LL lines into its direct connector to every peer,
// then reads every peer's lines and folds all inputs itself, in rank order (so every rank gets the
// same bits, as from a ring). A ring of k ranks needs 2(k-1) dependent hops; this needs one, at
// the price of k-1 copies of the input per rank: it wins only while latency dominates, and the
// tuner chooses it only there. Works on any buffer (no registration): the symmetric-window version
// is runSymAllReduceOneShot (symmetric.h). Introduced in lesson 09
// (docs/lessons/09-buffer-registration.md).
//
// Two protocols (issue 45), chosen per size by the planner (src/enqueue.cc useOneShot):
//   LL (runOneShotAllReduce): the input as LL lines, each carrying its own flag: no separate flag
//     line to pull, best for a message of a cache line or two (BATON_ONESHOT_BYTES, 64).
//   Simple (runOneShotAllReduceSimple): the input as plain bytes in the Simple slot, released by one
//     tail store. Past a few lines the LL reader chases the writer through half-written cache lines
//     (each line crosses back and forth; 512 B ran 3x slower than the ring); here the reader waits
//     once and then pulls whole lines (up to BATON_ONESHOT_SIMPLE_BYTES).
//
// Memory-ordering contract. LL: the LL protocol's (primitives_ll.h): each 8-byte half of a line is
// released by its own flag (step + 1); the reader acquires both halves of a line. Simple: payload
// and slot size are plain stores, released by the storeRelease of tail = step + 1; the reader's
// loadAcquire of tail orders its reads after it. Both: after reading a peer's step the reader
// storeRelease()s that connector's head = step + 1, which returns the slot to the sender (credit,
// waited for before the sender writes its next step).
#pragma once

#include "coll_args.h"
#include "primitives_api.h"
#include "primitives_ll.h"
#include "reduce_ops.h"

namespace baton {

// The largest message one step of an LL buffer of `llStepBytes` carries (half of it is flags).
BATON_HD constexpr size_t oneShotMaxBytes(size_t llStepBytes) { return llStepBytes / 2; }

// Both protocols' end: every peer's slot of this step goes back to its sender (head = step + 1).
BATON_HD void returnPeerSlots(ExecCtx& ctx, const CollArgs& a) {
  if (threadId(ctx) == 0)
    for (int r = 0; r < a.nRanks; ++r) {
      if (r == a.rank) continue;
      ConnDev& c = a.peerRecv[r];
      publish(ctx, &c.fifo->head, c.step + 1);
      c.step++;
    }
  blockBarrier();
}

template <typename T, typename Op>
BATON_HD void runOneShotAllReduce(ExecCtx& ctx, const CollArgs& a, const Op& op) {
  static_assert(8 % sizeof(T) == 0, "an LL line holds whole elements");
  constexpr size_t E = 8 / sizeof(T);
  union Line {
    uint64_t u;
    T t[E];
  };
  const T* src = static_cast<const T*>(a.sendbuff);
  T* dst = static_cast<T*>(a.recvbuff);
  const int n = a.nRanks, me = a.rank;
  const size_t nLines = divUp(a.count, E);

  // Our input, pre-applied, to every peer.
  for (int i = 1; i < n; ++i) {
    ConnDev& s = a.peerSend[(me + i) % n];
    if (threadId(ctx) == 0) {
      waitSendCredit(ctx, s);
      // No slot size: the receiver knows the count, and one line fewer crosses between cores.
      if (!ctx.failed) cleanLLSlotIfDue(s);
    }
    blockBarrier();
    if (ctx.failed) return;
    LLLine* lines = reinterpret_cast<LLLine*>(slotPtr(s, kProtoLL, s.step));
    const uint32_t flag = (uint32_t)(s.step + 1);
    for (size_t l = threadId(ctx); l < nLines; l += threadCount(ctx)) {
      Line v{0};
      const size_t valid = minSize(E, a.count - l * E);
      for (size_t e = 0; e < valid; ++e)
        v.t[e] = reduceElem<T, Op, Moves{.src = true, .preSrc = true}>(op, T{}, src[l * E + e]);
      storeLL(lines + l, v.u, flag);
    }
    blockBarrier();
    if (threadId(ctx) == 0) s.step++;
  }

  // Every rank's input, folded in rank order, line by line.
  for (size_t l = threadId(ctx); l < nLines; l += threadCount(ctx)) {
    const size_t valid = minSize(E, a.count - l * E);
    Line acc{0};
    for (int r = 0; r < n; ++r) {
      Line x{0};
      if (r == me) {
        for (size_t e = 0; e < valid; ++e)
          x.t[e] = reduceElem<T, Op, Moves{.src = true, .preSrc = true}>(op, T{}, src[l * E + e]);
      } else {
        const ConnDev& c = a.peerRecv[r];
        x.u = readLL(ctx, reinterpret_cast<const LLLine*>(slotPtr(c, kProtoLL, c.step)) + l, (uint32_t)(c.step + 1), r);
        if (ctx.failed) return;
      }
      if (r == 0) acc = x;
      else
        for (size_t e = 0; e < valid; ++e)
          acc.t[e] = reduceElem<T, Op, Moves{.recv = true, .src = true}>(op, acc.t[e], x.t[e]);
    }
    for (size_t e = 0; e < valid; ++e)
      dst[l * E + e] = reduceElem<T, Op, Moves{.recv = true, .post = true}>(op, acc.t[e], T{});
  }
  blockBarrier();
  if (ctx.failed) return;
  returnPeerSlots(ctx, a);
}

template <typename T, typename Op>
BATON_HD void runOneShotAllReduceSimple(ExecCtx& ctx, const CollArgs& a, const Op& op) {
  const T* src = static_cast<const T*>(a.sendbuff);
  T* dst = static_cast<T*>(a.recvbuff);
  const int n = a.nRanks, me = a.rank;
  const uint64_t bytes = a.count * sizeof(T);

  // Our input, pre-applied, to every peer: plain stores, then one tail store per peer.
  for (int i = 1; i < n; ++i) {
    ConnDev& s = a.peerSend[(me + i) % n];
    if (threadId(ctx) == 0) {
      waitSendCredit(ctx, s);
      if (!ctx.failed) cleanLLSlotIfDue(s);  // the LL one-shot may reuse this step's slot later
    }
    blockBarrier();
    if (ctx.failed) return;
    T* slot = reinterpret_cast<T*>(slotPtr(s, kProtoSimple, s.step));
    for (size_t e = threadId(ctx); e < a.count; e += threadCount(ctx))
      slot[e] = reduceElem<T, Op, Moves{.src = true, .preSrc = true}>(op, T{}, src[e]);
    blockBarrier();
    if (threadId(ctx) == 0) {
      s.fifo->sizes[s.step % kSteps] = bytes;
      publish(ctx, &s.fifo->tail, s.step + 1);
      s.step++;
    }
  }

  // Every peer's step, then the fold in rank order (the same bits on every rank).
  if (threadId(ctx) == 0)
    for (int r = 0; r < n && !ctx.failed; ++r) {
      if (r == me) continue;
      const ConnDev& c = a.peerRecv[r];
      if (waitAtLeast(ctx, &c.fifo->tail, c.step + 1, r, "one-shot tail")) {
        const uint64_t got = c.fifo->sizes[c.step % kSteps];
        if (got != bytes) failSlotSize(ctx, r, bytes, got);
      }
    }
  blockBarrier();
  if (ctx.failed) return;
  // In tiles, one rank at a time over a tile: the same order per element as folding element by
  // element, but each pass is a plain loop the compiler vectorizes.
  constexpr size_t kTileElems = 256 / sizeof(T) < 8 ? 8 : 256 / sizeof(T);
  const size_t nTiles = divUp(a.count, kTileElems);
  for (size_t tile = threadId(ctx); tile < nTiles; tile += threadCount(ctx)) {
    const size_t first = tile * kTileElems, len = minSize(kTileElems, a.count - first);
    T acc[kTileElems];
    for (int r = 0; r < n; ++r) {
      const T* x = r == me
                       ? src + first
                       : reinterpret_cast<const T*>(slotPtr(a.peerRecv[r], kProtoSimple, a.peerRecv[r].step)) + first;
      if (r == me)
        for (size_t e = 0; e < len; ++e) {
          const T pre = reduceElem<T, Op, Moves{.src = true, .preSrc = true}>(op, T{}, x[e]);  // rounded as sent
          acc[e] = r == 0 ? pre : reduceElem<T, Op, Moves{.recv = true, .src = true}>(op, acc[e], pre);
        }
      else if (r == 0)
        for (size_t e = 0; e < len; ++e) acc[e] = x[e];
      else
        for (size_t e = 0; e < len; ++e) acc[e] = reduceElem<T, Op, Moves{.recv = true, .src = true}>(op, acc[e], x[e]);
    }
    for (size_t e = 0; e < len; ++e)
      dst[first + e] = reduceElem<T, Op, Moves{.recv = true, .post = true}>(op, acc[e], T{});
  }
  blockBarrier();
  returnPeerSlots(ctx, a);
}

}  // namespace baton

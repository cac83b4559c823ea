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
// Memory-ordering contract: the LL protocol's (primitives_ll.h): each 8-byte half of a line is
// released by its own flag (step + 1); the reader acquires both halves of a line; after reading
// every line of a peer's step it storeRelease()s that connector's head = step + 1, which returns
// the slot to the sender (credit, waited for before the sender writes its next step).
#pragma once

#include "coll_args.h"
#include "primitives_api.h"
#include "primitives_ll.h"
#include "reduce_ops.h"

namespace baton {

// The largest message one step of an LL buffer of `llStepBytes` carries (half of it is flags).
BATON_HD constexpr size_t oneShotMaxBytes(size_t llStepBytes) { return llStepBytes / 2; }

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
  if (threadId(ctx) == 0)
    for (int r = 0; r < n; ++r) {
      if (r == me) continue;
      ConnDev& c = a.peerRecv[r];
      publish(ctx, &c.fifo->head, c.step + 1);
      c.step++;
    }
  blockBarrier();
}

}  // namespace baton

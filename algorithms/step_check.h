// Whether a body's connectors hold at least one element per step, asked before its loops.
//
// Computes: nothing moves. A connector whose step holds no element of T (its step sizes zeroed, or
// never filled: a bug on the host side) would make a ring, tree or send/recv body cut its work
// into chunks of 0 elements and loop forever without entering a wait, so neither
// BATON_WAIT_TIMEOUT nor the abort flag could end it. The bodies ask first and fail instead
// (kWaitBadStep; the call returns ncclInternalError naming the channel, peer and step size).
// Introduced after 2 processes on one GPU stopped in their first ring AllReduce with no timeout
// (docs/cuda-backend.md). One policy for every backend: the dispatch (coll_dispatch.h) asks
// blockStepsUsable, where the block's thread 0 asks and every thread follows its answer, since
// threads reading a table that is being rewritten could disagree and the bodies' barriers need
// every thread (on the CPU a block is one thread and the barrier is free); sendrecv_progress.h asks
// per transfer.
// Memory-ordering contract: none; the step sizes are written before the launch that reads them.
// The block barrier makes thread 0's verdict (ctx.failed, in the block's shared context) visible
// to the block.
#pragma once

#include "coll_args.h"
#include "protocols.h"

namespace baton {

// Records the failure and returns false if connector c (null: unused) has fewer payload bytes per
// step than one element.
BATON_HD bool stepHoldsElement(ExecCtx& ctx, const ConnDev* c, const char* proto, uint64_t payloadBytes,
                               size_t elemBytes) {
  if (!c || payloadBytes >= elemBytes) return true;
  ctx.failed = true;
  ctx.failure = {kWaitBadStep, ctx.rank, c->peer, ctx.channel, proto, elemBytes, payloadBytes};
  return false;
}
template <typename P, typename T>
BATON_HD bool stepHoldsElement(ExecCtx& ctx, const ConnDev* c) {
  return stepHoldsElement(ctx, c, P::name, c ? P::payloadBytes(c->stepBytes[P::id]) : 0, sizeof(T));
}

// The ring's two connectors (one rank: none). The direct bodies step in Simple slots, as P then is.
template <typename T, typename P>
BATON_HD bool ringStepsUsable(ExecCtx& ctx, const CollArgs& a) {
  return a.ring.nRanks == 1 || (stepHoldsElement<P, T>(ctx, a.ring.send) && stepHoldsElement<P, T>(ctx, a.ring.recv));
}

// The tree's connectors: to and from the parent, and to and from each child.
template <typename T, typename P>
BATON_HD bool treeStepsUsable(ExecCtx& ctx, const CollArgs& a) {
  const TreeDev& t = a.tree;
  bool ok = stepHoldsElement<P, T>(ctx, t.upSend) && stepHoldsElement<P, T>(ctx, t.downRecv);
  for (int i = 0; ok && i < t.nDown; ++i)
    ok = stepHoldsElement<P, T>(ctx, t.upRecv[i]) && stepHoldsElement<P, T>(ctx, t.downSend[i]);
  return ok;
}

// The check the collective dispatch makes before a ring or tree body: thread 0 asks for the
// connectors the algorithm uses, the block follows.
template <typename T, typename P>
BATON_HD bool blockStepsUsable(ExecCtx& ctx, const CollArgs& a) {
  if (threadId(ctx) == 0) (void)(a.algo == kAlgoTree ? treeStepsUsable<T, P>(ctx, a) : ringStepsUsable<T, P>(ctx, a));
  blockBarrier();
  return !ctx.failed;
}

}  // namespace baton

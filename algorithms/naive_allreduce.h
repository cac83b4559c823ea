// Stage 0: the naive AllReduce, kept as lesson 01's baseline.
//
// Computes recvbuff[i] = op over ranks of sendbuff[i] in the most obvious way: every rank sends its
// whole buffer to rank 0, which adds them one peer at a time, then rank 0 sends the result back to
// each peer one at a time. Rank 0's link carries 2(k-1) full buffers while the others sit idle:
// compare its busbw with the ring's (lesson 02). Introduced in lesson 01
// (docs/lessons/01-naive-allreduce.md).
//
// Memory-ordering contract: only through the primitives (primitives_simple.h), over the direct
// peer-to-peer connectors (one FIFO per pair and direction).
#pragma once

#include "coll_args.h"
#include "primitives_simple.h"

namespace baton {

template <typename T, typename Op>
BATON_HD void runNaiveAllReduce(ExecCtx& ctx, const CollArgs& a, const Op& op) {
  const T* src = static_cast<const T*>(a.sendbuff);
  T* dst = static_cast<T*>(a.recvbuff);
  const int k = a.nRanks, root = 0;
  if (k == 1) {
    reduceCopy<T, Op, kOwnInputToOutput>(ctx, op, nullptr, src, nullptr, dst, a.count);
    return;
  }
  if (a.rank == root) {
    // Start the running result with our own (pre-applied) input, then fold in one peer at a time.
    reduceCopy<T, Op, Moves{.src = true, .dst = true, .preSrc = true}>(ctx, op, nullptr, src, nullptr, dst, a.count);
    for (int peer = 1; peer < k; ++peer) {
      PrimitivesSimple<T, Op> prims(ctx, &a.peerRecv[peer], nullptr, op);
      prims.recvReduceAccumulate(dst, a.count, /*postOp=*/peer == k - 1);
    }
    for (int peer = 1; peer < k; ++peer) {
      PrimitivesSimple<T, Op> prims(ctx, nullptr, &a.peerSend[peer], op);
      prims.sendReduced(dst, a.count);  // final values: no pre-op again
    }
  } else {
    PrimitivesSimple<T, Op> up(ctx, nullptr, &a.peerSend[root], op);
    up.send(src, a.count);
    PrimitivesSimple<T, Op> down(ctx, &a.peerRecv[root], nullptr, op);
    down.recv(dst, a.count);
  }
}

}  // namespace baton

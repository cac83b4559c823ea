// Broadcast with direct paths (ring_broadcast.h's chain). Introduced in lesson 05; between
// processes, lesson 09.
//
// Computes: this rank's result of the collective on the channel's part, as the FIFO ring does, with
// fewer copies (DirectRing's steps, ring_direct.h).
// Memory-ordering contract: ring_direct.h's (DirectRing): slots and direct writes are plain stores
// released by the tail store; the receiver's recvbuff pointer is released by its directTag.
#pragma once

#include "ring_direct.h"

namespace baton {

// Broadcast with direct paths: the chain of ring_broadcast.h, the root's input written straight into
// the next rank's recvbuff and each middle rank forwarding from its recvbuff into the next one's, so
// a hop is one copy, not two. Runs on bytes (runMoving).
template <typename T, typename Op>
BATON_HD void runRingBroadcastDirect(ExecCtx& ctx, const CollArgs& a, const Op& op) {
  const T* src = static_cast<const T*>(a.sendbuff);
  T* dst = static_cast<T*>(a.recvbuff);
  DirectRing<T, Op> ring(ctx, a, op, a.count);
  const bool isRoot = a.rank == a.root;
  const bool isLast = a.ring.userRankAt(a.ring.index + 1) == a.root;
  ring.forEachChunk(a, a.count, [&](size_t off, size_t n) {
    if (isRoot) ring.copyDirectSend(src + off, dst + off, n, off);
    else if (isLast) ring.recvDelivered(dst + off, n);
    else ring.recvCopyDirectSend(dst + off, n, off);
  });
}

}  // namespace baton

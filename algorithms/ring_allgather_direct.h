// AllGather with direct paths (ring_allgather.h's ring). Introduced in lesson 05; between
// processes, lesson 09.
//
// Computes: this rank's result of the collective on the channel's part, as the FIFO ring does, with
// fewer copies (DirectRing's steps, ring_direct.h).
// Memory-ordering contract: ring_direct.h's (DirectRing): slots and direct writes are plain stores
// released by the tail store; the receiver's recvbuff pointer is released by its directTag.
#pragma once

#include "ring_direct.h"

namespace baton {

// AllGather with direct paths: the ring of ring_allgather.h, each block written straight into the
// next rank's recvbuff (at its place there: block u at u * count), so a hop is one copy, not two.
// Runs on bytes (runMoving).
template <typename T, typename Op>
BATON_HD void runRingAllGatherDirect(ExecCtx& ctx, const CollArgs& a, const Op& op) {
  const T* src = static_cast<const T*>(a.sendbuff);
  T* dst = static_cast<T*>(a.recvbuff);
  const int k = a.ring.nRanks;
  const size_t count = a.count;
  DirectRing<T, Op> ring(ctx, a, op, count * (size_t)k);
  const int r = a.ring.index;
  ring.forEachChunk(a, count, [&](size_t off, size_t n) {
    const size_t own = (size_t)a.rank * count + off;
    ring.copyDirectSend(src + off, dst + own, n, own);
    for (int j = 1; j < k - 1; ++j) {
      const size_t at = (size_t)a.ring.userRankAt(r - j) * count + off;
      ring.recvCopyDirectSend(dst + at, n, at);
    }
    ring.recvDelivered(dst + (size_t)a.ring.userRankAt(r + 1) * count + off, n);
  });
}

}  // namespace baton

// Reduce with direct paths (ring_reduce.h's chain). Introduced in lesson 05; between processes,
// lesson 09.
//
// Computes: this rank's result of the collective on the channel's part, as the FIFO ring does, with
// fewer copies (DirectRing's steps, ring_direct.h).
// Memory-ordering contract: ring_direct.h's (DirectRing): slots and direct writes are plain stores
// released by the tail store; the receiver's recvbuff pointer is released by its directTag.
#pragma once

#include "ring_direct.h"

namespace baton {

// Reduce with direct paths: the chain of ring_reduce.h, its first send of each chunk a pointer to
// the first rank's input (the next rank, often the root, reads it where it lies) instead of a copy
// into the FIFO; the partial sums of longer chains still travel through the FIFO.
template <typename T, typename Op>
BATON_HD void runRingReduceDirect(ExecCtx& ctx, const CollArgs& a, const Op& op) {
  const T* src = static_cast<const T*>(a.sendbuff);
  T* dst = static_cast<T*>(a.recvbuff);
  DirectRing<T, Op> ring(ctx, a, op, a.count);
  const bool isRoot = a.rank == a.root;
  const bool isFirst = a.ring.userRankAt(a.ring.index - 1) == a.root;
  ring.forEachChunk(a, a.count, [&](size_t off, size_t n) {
    if (isRoot) ring.recvReduceCopy(src + off, dst + off, n);
    else if (isFirst) ring.sendFirst(src + off, n);
    else ring.recvReduceSend(src + off, n);
  });
}

}  // namespace baton

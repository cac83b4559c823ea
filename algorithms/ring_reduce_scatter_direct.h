// ReduceScatter with direct paths (ring_reduce_scatter.h's ring). Introduced in lesson 05;
// between processes, lesson 09.
//
// Computes: this rank's result of the collective on the channel's part, as the FIFO ring does, with
// fewer copies (DirectRing's steps, ring_direct.h).
// Memory-ordering contract: ring_direct.h's (DirectRing): slots and direct writes are plain stores
// released by the tail store; the receiver's recvbuff pointer is released by its directTag.
#pragma once

#include "ring_direct.h"

namespace baton {

// ReduceScatter with direct paths: the ring of ring_reduce_scatter.h, its first send of each chunk
// a pointer to our input (the next rank reads it where it lies, by load or by single copy) instead
// of a copy into the FIFO; the partial sums of longer rings still travel through the FIFO.
template <typename T, typename Op>
BATON_HD void runRingReduceScatterDirect(ExecCtx& ctx, const CollArgs& a, const Op& op) {
  const T* src = static_cast<const T*>(a.sendbuff);
  T* dst = static_cast<T*>(a.recvbuff);
  const int k = a.ring.nRanks;
  const size_t count = a.count;
  DirectRing<T, Op> ring(ctx, a, op, count);
  const int r = a.ring.index;
  ring.forEachChunk(a, count, [&](size_t off, size_t n) {
    ring.sendFirst(src + (size_t)a.ring.userRankAt(r - 1) * count + off, n);
    for (int j = 2; j < k; ++j) ring.recvReduceSend(src + (size_t)a.ring.userRankAt(r - j) * count + off, n);
    ring.recvReduceCopy(src + (size_t)a.rank * count + off, dst + off, n);
  });
}

}  // namespace baton

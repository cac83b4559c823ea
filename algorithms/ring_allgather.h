// Ring AllGather: every rank's block travels once around the ring.
//
// Computes recvbuff[u*count + i] = sendbuff_u[i] for every user rank u. Rank at ring position r
// starts with its own block, then forwards the block of position r-1, r-2, ... (recvCopySend) and
// finally only receives the block of position r+1. Each rank sends (k-1)/k of the output.
// Introduced in lesson 02 (docs/lessons/02-ring-allreduce.md).
//
// Memory-ordering contract: only through the primitives (primitives_api.h and the protocol's file).
#pragma once

#include "coll_args.h"
#include "primitives.h"

namespace baton {

// Non-reducing: T is a byte-sized carrier and `count` is in bytes.
template <typename T, typename P, typename Op>
BATON_HD void runRingAllGather(ExecCtx& ctx, const CollArgs& a, const Op& op) {
  const T* src = static_cast<const T*>(a.sendbuff);
  T* dst = static_cast<T*>(a.recvbuff);
  const int k = a.ring.nRanks;
  const size_t count = a.count;
  size_t lo, chanCount;
  channelRange(count, a.channel, a.nChannels, protoGrainElems<P, T>(), &lo, &chanCount);
  T* own = dst + (size_t)a.rank * count;
  if (k == 1) {
    if (own != src) copyBytes(ctx, own + lo, src + lo, chanCount * sizeof(T));
    return;
  }
  Primitives<T, Op, P> prims(ctx, a.ring.recv, a.ring.send, op);
  const size_t chunkMax = chunkElems<P, T>(*a.ring.send, a.chunkSteps);
  const int r = a.ring.index;
  for (size_t done = 0; done < chanCount;) {
    const size_t n = minSize(chunkMax, chanCount - done);
    const size_t off = lo + done;
    if (own == src) prims.send(own + off, n);
    else prims.copySend(src + off, own + off, n);
    for (int j = 1; j < k - 1; ++j) prims.recvCopySend(dst + (size_t)a.ring.userRankAt(r - j) * count + off, n);
    prims.recv(dst + (size_t)a.ring.userRankAt(r + 1) * count + off, n);
    done += n;
  }
}

}  // namespace baton

// Ring Broadcast: a pipeline from the root along the ring.
//
// Computes recvbuff[i] = sendbuff_root[i] on every rank. The root sends each chunk to the next rank,
// every middle rank copies it out and forwards it in the same pass (recvCopySend), the rank just
// before the root only receives. Chunks follow each other down the chain, so a long chain costs
// one chunk's latency per hop plus the bytes once. Introduced in lesson 03 (docs/lessons/03-pipelining.md).
//
// Memory-ordering contract: only through the primitives (primitives_api.h and the protocol's file).
#pragma once

#include "coll_args.h"
#include "primitives.h"

namespace baton {

// Non-reducing: T is a byte-sized carrier and `count` is in bytes.
template <typename T, typename P, typename Op>
BATON_HD void runRingBroadcast(ExecCtx& ctx, const CollArgs& a, const Op& op) {
  const T* src = static_cast<const T*>(a.sendbuff);
  T* dst = static_cast<T*>(a.recvbuff);
  const int k = a.ring.nRanks;
  size_t lo, chanCount;
  channelRange(a.count, a.channel, a.nChannels, protoGrainElems<P, T>(), &lo, &chanCount);
  const bool isRoot = a.rank == a.root;
  if (k == 1) {
    if (dst != src) copyBytes(ctx, dst + lo, src + lo, chanCount * sizeof(T));
    return;
  }
  const bool isLast = a.ring.userRankAt(a.ring.index + 1) == a.root;
  Primitives<T, Op, P> prims(ctx, isRoot ? nullptr : a.ring.recv, isLast ? nullptr : a.ring.send, op);
  const size_t chunkMax = chunkElems<P, T>(isLast ? *a.ring.recv : *a.ring.send, a.chunkSteps);
  for (size_t done = 0; done < chanCount;) {
    const size_t n = minSize(chunkMax, chanCount - done);
    const size_t off = lo + done;
    if (isRoot) {
      if (src == dst) prims.send(src + off, n);
      else prims.copySend(src + off, dst + off, n);
    } else if (isLast) {
      prims.recv(dst + off, n);
    } else {
      prims.recvCopySend(dst + off, n);
    }
    done += n;
  }
}

}  // namespace baton

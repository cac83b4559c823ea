// Ring ReduceScatter: the first half of the ring AllReduce, each rank keeping its own block.
//
// Computes recvbuff_u[i] = op over ranks of sendbuff[u*recvcount + i]. Rank at ring position r sends
// the block of position r-1, adds arriving partial sums into r-2, r-3, ... and finishes with its own
// block (recvReduceCopy, post-op applied). Introduced in lesson 02 (docs/lessons/02-ring-allreduce.md).
//
// Memory-ordering contract: only through the primitives (primitives_api.h and the protocol's file).
#pragma once

#include "coll_args.h"
#include "primitives.h"

namespace baton {

template <typename T, typename P, typename Op>
BATON_HD void runRingReduceScatter(ExecCtx& ctx, const CollArgs& a, const Op& op) {
  const T* src = static_cast<const T*>(a.sendbuff);
  T* dst = static_cast<T*>(a.recvbuff);
  const int k = a.ring.nRanks;
  const size_t count = a.count;
  size_t lo, chanCount;
  channelRange(count, a.channel, a.nChannels, protoGrainElems<P, T>(), &lo, &chanCount);
  const T* ownSrc = src + (size_t)a.rank * count;
  if (k == 1) {
    reduceCopy<T, Op, kOwnInputToOutput>(ctx, op, nullptr, ownSrc + lo, nullptr, dst + lo, chanCount);
    return;
  }
  Primitives<T, Op, P> prims(ctx, a.ring.recv, a.ring.send, op);
  const size_t chunkMax = chunkElems<P, T>(*a.ring.send, a.chunkSteps);
  const int r = a.ring.index;
  for (size_t done = 0; done < chanCount;) {
    const size_t n = minSize(chunkMax, chanCount - done);
    const size_t off = lo + done;
    prims.send(src + (size_t)a.ring.userRankAt(r - 1) * count + off, n);
    for (int j = 2; j < k; ++j) prims.recvReduceSend(src + (size_t)a.ring.userRankAt(r - j) * count + off, n);
    prims.recvReduceCopy(ownSrc + off, dst + off, n, /*postOp=*/true);
    done += n;
  }
}

}  // namespace baton

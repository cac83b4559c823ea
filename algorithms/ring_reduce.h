// Ring Reduce: a pipeline along the ring that ends at the root.
//
// Computes recvbuff_root[i] = op over ranks of sendbuff[i]. The rank after the root starts the chain
// (send), every middle rank adds its input and forwards (recvReduceSend), the root adds its own and
// writes the result (recvReduceCopy, post-op applied). Introduced in lesson 03
// (docs/lessons/03-pipelining.md).
//
// Memory-ordering contract: only through the primitives (primitives_api.h and the protocol's file).
#pragma once

#include "coll_args.h"
#include "primitives.h"

namespace baton {

template <typename T, typename P, typename Op>
BATON_HD void runRingReduce(ExecCtx& ctx, const CollArgs& a, const Op& op) {
  const T* src = static_cast<const T*>(a.sendbuff);
  T* dst = static_cast<T*>(a.recvbuff);
  const int k = a.ring.nRanks;
  size_t lo, chanCount;
  channelRange(a.count, a.channel, a.nChannels, protoGrainElems<P, T>(), &lo, &chanCount);
  const bool isRoot = a.rank == a.root;
  if (k == 1) {
    reduceCopy<T, Op, kOwnInputToOutput>(ctx, op, nullptr, src + lo, nullptr, dst + lo, chanCount);
    return;
  }
  const bool isFirst = a.ring.userRankAt(a.ring.index - 1) == a.root;
  Primitives<T, Op, P> prims(ctx, isFirst ? nullptr : a.ring.recv, isRoot ? nullptr : a.ring.send, op);
  const size_t chunkMax = chunkElems<P, T>(isRoot ? *a.ring.recv : *a.ring.send, a.chunkSteps);
  for (size_t done = 0; done < chanCount;) {
    const size_t n = minSize(chunkMax, chanCount - done);
    const size_t off = lo + done;
    if (isRoot) prims.recvReduceCopy(src + off, dst + off, n, /*postOp=*/true);
    else if (isFirst) prims.send(src + off, n);
    else prims.recvReduceSend(src + off, n);
    done += n;
  }
}

}  // namespace baton

// Ring AllReduce = reduce-scatter then all-gather around a ring, pipelined in chunks.
//
// Computes recvbuff[i] = op over ranks of sendbuff[i]. Each loop cuts the channel's part into k
// chunks; rank r sends chunk r-1, adds what arrives into chunk r-2, r-3, ... until it owns the full
// sum of chunk r (reduce-scatter), then passes finished chunks around once more (all-gather). Each
// rank sends 2(k-1)/k of the data: the bus-bandwidth factor. Introduced in lesson 02
// (docs/lessons/02-ring-allreduce.md).
//
// Memory-ordering contract: only through the primitives (primitives_api.h and the protocol's
// file): a slice's tail store (Simple) or line flags (LL, LL128) release it to the next rank; each
// head store returns the slot.
#pragma once

#include "coll_args.h"
#include "primitives.h"

namespace baton {

// The loops of a ring AllReduce over a channel's part [lo, lo + count): each loop cuts what is left
// into k chunks of at most chunkMax elements (64-byte aligned), and body(at) runs the loop's steps,
// at(pos, &off) giving the offset and count of the chunk at ring position pos.
template <typename T, typename Body>
BATON_HD void forRingChunks(size_t lo, size_t count, size_t chunkMax, int k, Body body) {
  const size_t align = 64 / sizeof(T) ? 64 / sizeof(T) : 1;
  for (size_t done = 0; done < count;) {
    const size_t remaining = count - done;
    const size_t chunk = minSize(chunkMax, alignUp(divUp(remaining, k), align));
    auto at = [&](int pos, size_t* off) {
      const int c = ((pos % k) + k) % k;
      const size_t o = minSize((size_t)c * chunk, remaining);
      *off = lo + done + o;
      return minSize(chunk, remaining - o);
    };
    body(at);
    done += minSize(remaining, chunk * k);
  }
}

template <typename T, typename P, typename Op>
BATON_HD void runRingAllReduce(ExecCtx& ctx, const CollArgs& a, const Op& op) {
  const T* src = static_cast<const T*>(a.sendbuff);
  T* dst = static_cast<T*>(a.recvbuff);
  const int k = a.ring.nRanks;
  size_t lo, chanCount;
  channelRange(a.count, a.channel, a.nChannels, protoGrainElems<P, T>(), &lo, &chanCount);
  if (k == 1) {  // nothing to exchange: the reduction of one input is the input (post-op applied)
    reduceCopy<T, Op, kOwnInputToOutput>(ctx, op, nullptr, src + lo, nullptr, dst + lo, chanCount);
    return;
  }
  Primitives<T, Op, P> prims(ctx, a.ring.recv, a.ring.send, op);
  const int r = a.ring.index;
  forRingChunks<T>(lo, chanCount, chunkElems<P, T>(*a.ring.send, a.chunkSteps), k, [&](auto at) {
    size_t off, n;
    n = at(r - 1, &off);
    prims.send(src + off, n);
    for (int j = 2; j < k; ++j) {
      n = at(r - j, &off);
      prims.recvReduceSend(src + off, n);
    }
    n = at(r, &off);
    prims.recvReduceCopySend(src + off, dst + off, n, /*postOp=*/true);
    for (int j = 1; j < k - 1; ++j) {
      n = at(r - j, &off);
      prims.recvCopySend(dst + off, n);
    }
    n = at(r + 1, &off);
    prims.recv(dst + off, n);
  });
}

}  // namespace baton

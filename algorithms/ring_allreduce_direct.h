// AllReduce with direct paths: the ring of ring_allreduce.h (Simple) with the same chunks and
// steps; the first send of each chunk is a pointer to the sender's input (direct read) and the rank
// that finishes a chunk writes it into its own and the next rank's recvbuff (direct write).
// Introduced in lesson 05 (docs/lessons/05-channels-and-tuning.md); between processes, lesson 09.
//
// Computes: this rank's result of the collective on the channel's part, as the FIFO ring does, with
// fewer copies (DirectRing's steps, ring_direct.h).
// Memory-ordering contract: ring_direct.h's (DirectRing): slots and direct writes are plain stores
// released by the tail store; the receiver's recvbuff pointer is released by its directTag.
#pragma once

#include "ring_direct.h"

namespace baton {

template <typename T, typename Op>
BATON_HD void runRingAllReduceDirect(ExecCtx& ctx, const CollArgs& a, const Op& op) {
  const T* src = static_cast<const T*>(a.sendbuff);
  T* dst = static_cast<T*>(a.recvbuff);
  const int k = a.ring.nRanks;
  size_t lo, chanCount;
  channelRange(a.count, a.channel, a.nChannels, protoGrainElems<ProtoSimple, T>(), &lo, &chanCount);
  DirectRing<T, Op> ring(ctx, a, op, a.count);
  const int r = a.ring.index;
  forRingChunks<T>(lo, chanCount, chunkElems<ProtoSimple, T>(*a.ring.send, a.chunkSteps), k, [&](auto at) {
    size_t off, n;
    n = at(r - 1, &off);
    ring.sendFirst(src + off, n);
    for (int j = 2; j < k; ++j) {
      n = at(r - j, &off);
      ring.recvReduceSend(src + off, n);
    }
    n = at(r, &off);
    ring.recvReduceCopyDirectSend(src + off, dst + off, n, off);
    for (int j = 1; j < k - 1; ++j) {
      n = at(r - j, &off);
      ring.recvCopyDirectSend(dst + off, n, off);
    }
    n = at(r + 1, &off);
    ring.recvDelivered(dst + off, n);
  });
  ring.drain();
}

}  // namespace baton

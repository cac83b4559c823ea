// Tree AllReduce: reduce up a tree, broadcast the result back down, pipelined in chunks.
//
// Computes recvbuff[i] = op over ranks of sendbuff[i]. Each rank adds its children's partial sums
// of a chunk to its own input and sends the sum to its parent; the root finishes the sum and sends
// it back down, and every rank copies what comes down into its output and on to its children. A
// rank sends each byte up once and down once: the bus-bandwidth factor is 1 (ring: 2(n-1)/n), and
// the depth is log2(nodes) + ranks per node instead of 2(n-1) hops. Introduced in lesson 07
// (docs/lessons/07-trees.md); the trees come from src/topo/graph.h (chains in a node, NCCL's double
// binary tree across nodes).
//
// Up and down are in flight at the same time on different chunks: the reduce of chunk i and the
// broadcast of chunk i-lag. NCCL gives them two groups of threads of one block (runTreeSplit); a
// CPU block is one thread, so it alternates: up(i), down(i-lag). The lag must stay below twice the
// chunks a FIFO holds, or the root (blocked sending chunk j down to a child that is still pushing
// chunks up) and that child (blocked sending up to a root that stopped reading) wait on each other.
//
// A rank with several children (a node boundary of the double binary tree) reduces them one
// connector at a time, keeping the partial sum in its own output; NCCL's primitives read up to
// three connectors in one pass.
//
// Memory-ordering contract: only through the primitives (primitives_api.h and the protocol's
// file): a slice's tail store (Simple) or line flags (LL, LL128) release it to the next rank; each
// head store returns the slot. The partial sums written to recvbuff are read back by the same
// thread only.
#pragma once

#include "coll_args.h"
#include "primitives.h"

namespace baton {

// Chunks in flight between the reduce and the broadcast of one rank (see above). Needs a FIFO of at
// least one chunk (depth >= chunkSteps): with less, even a lag of 1 deadlocks. The planner
// guarantees it (planFifoDepth gives AllReduce chunkSteps + 1 slots).
BATON_HD int treeLag(const ConnDev& c, int chunkSteps) {
  const int chunksInFifo = c.depth / (chunkSteps > 0 ? chunkSteps : 1);
  return chunksInFifo > 1 ? 2 * chunksInFifo - 1 : 1;
}

template <typename T, typename P, typename Op>
struct TreeAllReduce {
  using Prims = Primitives<T, Op, P>;
  ExecCtx& ctx;
  const TreeDev& t;
  const Op& op;
  const T* src;
  T* dst;

  // Reduce phase of one chunk: children's sums + own input -> parent (at the root: -> output and
  // down to the children).
  BATON_HD void up(size_t off, size_t n) {
    const int m = t.nDown;
    const bool root = t.up < 0;
    if (m == 0) {  // a leaf
      Prims(ctx, nullptr, t.upSend, op).send(src + off, n);
      return;
    }
    if (m == 1) {
      if (root) Prims(ctx, t.upRecv[0], t.downSend[0], op).recvReduceCopySend(src + off, dst + off, n, true);
      else Prims(ctx, t.upRecv[0], t.upSend, op).recvReduceSend(src + off, n);
      return;
    }
    Prims(ctx, t.upRecv[0], nullptr, op).recvReduceCopy(src + off, dst + off, n, false);
    for (int c = 1; c < m - 1; ++c) Prims(ctx, t.upRecv[c], nullptr, op).recvReduceAccumulate(dst + off, n, false);
    if (!root) {
      Prims(ctx, t.upRecv[m - 1], t.upSend, op).recvAccumulateSend(dst + off, n);
      return;
    }
    Prims(ctx, t.upRecv[m - 1], nullptr, op).recvReduceAccumulate(dst + off, n, true);
    for (int c = 0; c < m; ++c) Prims(ctx, nullptr, t.downSend[c], op).sendReduced(dst + off, n);
  }

  // Broadcast phase of one chunk below the root: parent -> output and children.
  BATON_HD void down(size_t off, size_t n) {
    const int m = t.nDown;
    if (m == 0) {
      Prims(ctx, t.downRecv, nullptr, op).recv(dst + off, n);
      return;
    }
    Prims(ctx, t.downRecv, t.downSend[0], op).recvCopySend(dst + off, n);
    for (int c = 1; c < m; ++c) Prims(ctx, nullptr, t.downSend[c], op).sendReduced(dst + off, n);
  }
};

template <typename T, typename P, typename Op>
BATON_HD void runTreeAllReduce(ExecCtx& ctx, const CollArgs& a, const Op& op) {
  const T* src = static_cast<const T*>(a.sendbuff);
  T* dst = static_cast<T*>(a.recvbuff);
  size_t lo, chanCount;
  channelRange(a.count, a.channel, a.nChannels, protoGrainElems<P, T>(), &lo, &chanCount);
  const TreeDev& t = a.tree;
  if (t.up < 0 && t.nDown == 0) {  // alone in the tree
    reduceCopy<T, Op, kOwnInputToOutput>(ctx, op, nullptr, src + lo, nullptr, dst + lo, chanCount);
    return;
  }
  const ConnDev& any = t.upSend ? *t.upSend : *t.downSend[0];
  const size_t chunk = chunkElems<P, T>(any, (int)a.chunkSteps);
  const size_t nChunks = divUp(chanCount, chunk);
  TreeAllReduce<T, P, Op> tree{ctx, t, op, src, dst};
  auto at = [&](size_t i, size_t* off) {
    *off = lo + i * chunk;
    return minSize(chunk, chanCount - i * chunk);
  };
  size_t off, n;
  if (t.up < 0) {  // the root turns each chunk around at once
    for (size_t i = 0; i < nChunks; ++i) n = at(i, &off), tree.up(off, n);
    return;
  }
  const size_t lag = (size_t)treeLag(*t.upSend, (int)P::chunkSteps((int)a.chunkSteps));
  for (size_t i = 0; i < nChunks + lag; ++i) {
    if (i < nChunks) n = at(i, &off), tree.up(off, n);
    if (i >= lag) n = at(i - lag, &off), tree.down(off, n);
  }
}

}  // namespace baton

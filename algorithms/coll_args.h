// What one channel's share of one collective needs to know: buffers, counts, root, the ring, the
// connectors, and how to cut the buffer. The host planner fills it; device code only reads it.
//
// Computes the channel's slice of the buffer (channelRange) and the per-loop chunk size.
// Introduced in lesson 02 (docs/lessons/02-ring-allreduce.md).
// Memory-ordering contract: none (read-only plain data, written before the work is handed over).
#pragma once

#include <cstddef>
#include <cstdint>

#include "connector.h"
#include "exec_model.h"

namespace baton {

enum CollFunc : int {
  kFuncAllReduce = 0, kFuncBroadcast, kFuncReduce, kFuncAllGather, kFuncReduceScatter, kFuncCount
};
enum CollAlgo : int { kAlgoRing = 0, kAlgoNaive = 1, kAlgoTree = 2 };

// One channel's ring: its position and the user rank at every position.
struct RingDev {
  int nRanks = 1;
  int index = 0;                 // this rank's position in the ring
  const int* userRanks = nullptr;  // position -> user rank
  ConnDev* send = nullptr;       // to the next position
  ConnDev* recv = nullptr;       // from the previous position
  BATON_HD int userRankAt(int pos) const { return userRanks[((pos % nRanks) + nRanks) % nRanks]; }
};

// One channel's tree (lesson 07): the parent and up to three children, with one connector per
// direction of every edge. Up: children -> this rank -> parent (reduce). Down: parent -> this
// rank -> children (broadcast).
constexpr int kTreeMaxArity = 3;  // NCCL_MAX_TREE_ARITY
struct TreeDev {
  int up = -1;       // parent's user rank, -1 at the root
  int nDown = 0;     // children
  int down[kTreeMaxArity] = {-1, -1, -1};
  ConnDev* upSend = nullptr;                          // to the parent (reduce phase)
  ConnDev* upRecv[kTreeMaxArity] = {};                // from each child (reduce phase)
  ConnDev* downRecv = nullptr;                        // from the parent (broadcast phase)
  ConnDev* downSend[kTreeMaxArity] = {};              // to each child (broadcast phase)
};

struct CollArgs {
  int func = kFuncAllReduce;
  int algo = kAlgoRing;
  int proto = kProtoSimple;  // Proto (connector.h): which of the connectors' buffers and line formats
  bool direct = false;       // every rank is a thread of this process: direct paths (ring_allreduce_direct.h)
  bool streamStores = true;  // CPU direct paths: non-temporal stores for large outputs (BATON_STREAM_STORES)
  uint64_t opTag = 0;        // the operation's number + 1, the same on every rank (direct pointer exchange)
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  size_t count = 0;   // AllReduce/Broadcast/Reduce: elements; AllGather: sendcount; ReduceScatter: recvcount
  int root = 0;       // user rank
  int rank = 0;       // this user rank
  int nRanks = 1;
  int channel = 0;
  int nChannels = 1;  // channels this operation is split across
  size_t chunkSteps = 4;  // FIFO steps per chunk (NCCL's CHUNKSTEPS for ring collectives)
  RingDev ring;
  TreeDev tree;
  ConnDev* peerSend = nullptr;  // indexed by user rank (naive algorithm)
  ConnDev* peerRecv = nullptr;
};

// The contiguous part of [0, total) this channel owns, in whole grains of `grainElems` elements
// (the last channel takes the remainder), so every rank cuts identically.
BATON_HD void channelRange(size_t total, int channel, int nChannels, size_t grainElems, size_t* lo,
                           size_t* count) {
  const size_t grains = divUp(total, grainElems);
  const size_t per = grains / nChannels, extra = grains % nChannels;
  const size_t g0 = channel * per + (channel < (int)extra ? channel : extra);
  const size_t g1 = g0 + per + (channel < (int)extra ? 1 : 0);
  const size_t a = minSize(g0 * grainElems, total), b = minSize(g1 * grainElems, total);
  *lo = a;
  *count = b - a;
}


}  // namespace baton

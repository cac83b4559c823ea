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

enum CollFunc : int { kFuncAllReduce = 0, kFuncBroadcast, kFuncReduce, kFuncAllGather, kFuncReduceScatter, kFuncCount };
// NCCL's algorithm numbers (NCCL_ALGO_* in NCCL's src/include/plugin/nccl_tuner.h), which are also
// baton's public BATON_ALGO_* (include/baton/tuner.h); 2..6 are NCCL's CollNet, NVLS and PAT, which
// baton does not build. baton's own stages, which NCCL has no number for, come after NCCL's.
enum CollAlgo : int {
  kAlgoUndef = -1,  // not chosen yet (the tuner decides)
  kAlgoTree = 0,
  kAlgoRing = 1,
  kNcclNumAlgos = 7,           // NCCL_NUM_ALGORITHMS
  kAlgoNaive = kNcclNumAlgos,  // lesson 01's stage 0: every rank sends to rank 0, rank 0 sends back
  // Lesson 09: one hop for small messages over the FIFOs (oneshot_allreduce.h), and on symmetric
  // windows (symmetric.h), NCCL 2.27+'s symmetric kernels.
  kAlgoOneShot,      // AllReduce: every rank sends its input to every peer and folds them all
  kAlgoSymOneShot,   // AllReduce: every rank folds every input [AGxLD]
  kAlgoSymTwoShot,   // AllReduce: reduce-scatter by loads, all-gather by stores [RSxLD_AGxST]
  kAlgoSymStore,     // AllGather by stores [ST]
  kAlgoSymLoad,      // ReduceScatter by loads [LD]
  kAlgoSymAlltoAll,  // AlltoAll by stores (the CUDA backend's; the CPU's is a round task, alltoall_window.h)
};
BATON_HD constexpr bool isSymmetric(CollAlgo a) { return a >= kAlgoSymOneShot && a <= kAlgoSymAlltoAll; }
// The algorithms the tuner models: the ids below this (Tree and Ring).
constexpr int kNumTunedAlgos = 2;

BATON_HD const char* algoName(CollAlgo algo) {
  switch (algo) {
    case kAlgoTree: return "Tree";
    case kAlgoRing: return "Ring";
    case kAlgoNaive: return "Naive";
    case kAlgoOneShot: return "OneShot";
    case kAlgoSymOneShot: return "SymOneShot";
    case kAlgoSymTwoShot: return "SymTwoShot";
    case kAlgoSymStore: return "SymStore";
    case kAlgoSymLoad: return "SymLoad";
    case kAlgoSymAlltoAll: return "SymAlltoAll";
    default: return "?";
  }
}

// One channel's ring: its position and the user rank at every position.
struct RingDev {
  int nRanks = 1;
  int index = 0;                   // this rank's position in the ring
  const int* userRanks = nullptr;  // position -> user rank
  ConnDev* send = nullptr;         // to the next position
  ConnDev* recv = nullptr;         // from the previous position
  BATON_HD int userRankAt(int pos) const { return userRanks[((pos % nRanks) + nRanks) % nRanks]; }
};

// One channel's tree (lesson 07): the parent and up to three children, with one connector per
// direction of every edge. Up: children -> this rank -> parent (reduce). Down: parent -> this
// rank -> children (broadcast).
constexpr int kTreeMaxArity = 3;  // NCCL_MAX_TREE_ARITY
struct TreeDev {
  int up = -1;    // parent's user rank, -1 at the root
  int nDown = 0;  // children
  int down[kTreeMaxArity] = {-1, -1, -1};
  ConnDev* upSend = nullptr;              // to the parent (reduce phase)
  ConnDev* upRecv[kTreeMaxArity] = {};    // from each child (reduce phase)
  ConnDev* downRecv = nullptr;            // from the parent (broadcast phase)
  ConnDev* downSend[kTreeMaxArity] = {};  // to each child (broadcast phase)
};

// Symmetric windows (lesson 09, symmetric.h): every rank's buffers and pad as this process reaches them.
constexpr int kMaxSymRanks = 64;
struct SymPad;
struct SymDev {
  const void* const* peerSend = nullptr;  // by rank
  void* const* peerRecv = nullptr;
  SymPad* const* pads = nullptr;
  uint64_t epoch = 0;  // this channel's symmetric operations so far + 1
};

// Processes of one host (lesson 09): turns an address a peer published inside its ncclMemAlloc
// allocation `allocId` into one this process can use (mapping it on first use), or nullptr. Host
// code only; a GPU build would translate on the host before the launch.
struct PeerAddressMap {
  void* (*map)(const void* self, int peer, uint64_t allocId, uint64_t ownerPtr, uint64_t bytes);
  const void* self;
};

// Processes of one host, ordinary memory (lesson 09): single copies between our memory and an
// address in peer rank `peer`'s process (cross-memory attach). False when the kernel refused or
// the peer is gone. Host code only.
struct PeerCopy {
  bool (*read)(const void* self, int peer, void* local, uint64_t remote, uint64_t bytes);
  bool (*write)(const void* self, int peer, uint64_t remote, const void* local, uint64_t bytes);
  const void* self;
};

struct CollArgs {
  CollFunc func = kFuncAllReduce;
  CollAlgo algo = kAlgoRing;
  Proto proto = kProtoSimple;  // which of the connectors' buffers and line formats (connector.h)
  bool direct = false;         // direct paths (ring_direct.h): threads of one process, or processes of one host
  bool streamStores = true;    // CPU direct paths: non-temporal stores for large outputs (BATON_STREAM_STORES)
  uint64_t opTag = 0;          // the operation's number + 1, the same on every rank (direct pointer exchange)
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  size_t count = 0;  // AllReduce/Broadcast/Reduce: elements; AllGather: sendcount; ReduceScatter: recvcount
  int root = 0;      // user rank
  int rank = 0;      // this user rank
  int nRanks = 1;
  int channel = 0;
  int nChannels = 1;      // channels this operation is split across
  size_t chunkSteps = 4;  // FIFO steps per chunk (NCCL's CHUNKSTEPS for ring collectives)
  RingDev ring;
  TreeDev tree;
  // Direct paths between processes (registered buffers, lesson 09): the ncclMemAlloc allocations
  // holding our buffers (0: not mappable by peers) and the map for peers' addresses.
  const PeerAddressMap* peerMap = nullptr;
  uint64_t sendAlloc = 0, recvAlloc = 0;
  // Set when buffers no peer can map still go by pointer: peers copy from and into them once.
  const PeerCopy* peerCopy = nullptr;
  SymDev sym;
  ConnDev* peerSend = nullptr;  // indexed by user rank (naive algorithm)
  ConnDev* peerRecv = nullptr;
};

// AllGather and Broadcast only move data: their kernels count bytes, whatever the datatype.
BATON_HD constexpr bool countsBytes(CollFunc f) { return f == kFuncAllGather || f == kFuncBroadcast; }

// nccl-tests' size of an operation on `count` elements (the API's count): the per-rank buffer, or
// the whole output of AllGather and the whole input of ReduceScatter. The tuner prices this size.
BATON_HD size_t collBytes(CollFunc f, size_t count, size_t typeBytes, int nRanks) {
  const bool gathered = f == kFuncAllGather || f == kFuncReduceScatter;
  return count * typeBytes * (gathered ? (size_t)nRanks : 1);
}

// One collective as the API call described it.
struct CollOp {
  CollFunc func = kFuncAllReduce;
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  size_t count = 0;      // the API's count (AllGather: sendcount, ReduceScatter: recvcount)
  size_t typeBytes = 1;  // bytes per element
  int root = 0;
};

// What every channel's part of `op` shares, once algorithm, protocol and channels are chosen. The
// planner and the simulator's schedule both build their arguments here; the caller adds the
// ring, tree or peer connectors of each part.
inline CollArgs collArgsFor(const CollOp& op, CollAlgo algo, Proto proto, int rank, int nRanks, int nChannels,
                            int chunkSteps) {
  CollArgs a;
  a.func = op.func;
  a.algo = algo;
  a.proto = proto;
  a.sendbuff = op.sendbuff;
  a.recvbuff = op.recvbuff;
  a.count = countsBytes(op.func) ? op.count * op.typeBytes : op.count;
  a.root = op.root;
  a.rank = rank;
  a.nRanks = nRanks;
  a.nChannels = nChannels;
  a.chunkSteps = chunkSteps;
  a.ring.nRanks = nRanks;
  return a;
}

// The contiguous part of [0, total) this channel owns, in whole grains of `grainElems` elements
// (the last channel takes the remainder), so every rank cuts identically.
BATON_HD void channelRange(size_t total, int channel, int nChannels, size_t grainElems, size_t* lo, size_t* count) {
  const size_t grains = divUp(total, grainElems);
  const size_t per = grains / nChannels, extra = grains % nChannels;
  const size_t g0 = channel * per + (channel < (int)extra ? channel : extra);
  const size_t g1 = g0 + per + (channel < (int)extra ? 1 : 0);
  const size_t a = minSize(g0 * grainElems, total), b = minSize(g1 * grainElems, total);
  *lo = a;
  *count = b - a;
}

}  // namespace baton

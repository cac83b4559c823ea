// AlltoAll as rounds of point-to-point messages: which peer a rank sends to and receives from in
// each round, and, for Bruck, which blocks travel together (lesson 12).
//
// Computes: recv[j] = rank j's send[me], one block of `count` elements per rank, by one of
//   - direct: every send and receive of the operation at once (ncclAlltoAll as a group of
//     ncclSend/ncclRecv, src/api/coll_api.cc): one latency, but every rank receives from every
//     peer at the same time;
//   - pairwise: n-1 rounds; in round i a rank sends its block for me+i and receives the block of
//     me-i, so every rank has one partner per direction at a time, at the cost of n-1 latencies
//     (MPICH's and OpenMPI's choice for large blocks);
//   - Bruck: ceil(log2 n) rounds (Bruck et al., "Efficient algorithms for all-to-all
//     communications in multiport message-passing systems", IEEE TPDS 1997). The blocks are first
//     rotated so that slot i holds the block for rank me+i; round k sends to me+2^k, in one
//     message, every slot whose index has bit k set, and receives the same slots from me-2^k.
//     After the last round slot i holds rank me-i's block for me. Each block may travel log2 n
//     times, so it wins where latency, not bytes, is the cost: small blocks, many ranks.
// Every round is a send and a receive of point-to-point messages (sendrecv_progress.h); the
// schedule below is what a GPU kernel would run between them, so it is device-portable.
//
// Memory-ordering contract: that of the point-to-point messages (connector.h: the sender's tail
// store releases a slot's bytes, the receiver's head store gives the slot back). A round starts
// only after the previous round's send and receive completed on this rank, so the packed buffer
// it rewrites is no longer being read and the slots it reads are already received.
#pragma once

#include "exec_model.h"

namespace baton {

// BATON_ALLTOALL_ALGO. kAlltoAllAuto lets the tuner choose (src/alltoall/alltoall_choice.h).
// kAlltoAllWindow stores into the peers' windows instead of sending (alltoall_window.h).
enum AlltoAllAlgo : int {
  kAlltoAllAuto = 0,
  kAlltoAllDirect,
  kAlltoAllPairwise,
  kAlltoAllBruck,
  kAlltoAllWindow,
  kAlltoAllNumAlgos
};

inline const char* alltoallAlgoName(int a) {
  static const char* const kNames[] = {"auto", "direct", "pairwise", "bruck", "window"};
  return a >= 0 && a < kAlltoAllNumAlgos ? kNames[a] : "?";
}

// Pairwise round i (0 .. n-1; round 0 is the rank's own block).
BATON_HD int pairwiseSendPeer(int me, int n, int round) { return (me + round) % n; }
BATON_HD int pairwiseRecvPeer(int me, int n, int round) { return (me - round + n) % n; }

// Bruck: rounds k = 0 .. bruckRounds(n)-1, peers at distance 2^k.
BATON_HD int bruckRounds(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}
BATON_HD int bruckSendPeer(int me, int n, int k) { return (me + (1 << k)) % n; }
BATON_HD int bruckRecvPeer(int me, int n, int k) { return ((me - (1 << k)) % n + n) % n; }
// Whether slot i travels in round k.
BATON_HD bool bruckMoves(int slot, int k) { return (slot >> k) & 1; }
// Slot i starts as send block me+i and ends as rank me-i's block, recv block me-i.
BATON_HD int bruckFirstSource(int me, int n, int slot) { return (me + slot) % n; }
BATON_HD int bruckLastDest(int me, int n, int slot) { return (me - slot + n) % n; }

// The slots that travel in round k, one after another into `packed`; returns the bytes packed.
BATON_HD size_t bruckPack(const ExecCtx& ctx, char* packed, const char* const* slotData, const size_t* slotBytes, int n,
                          int k) {
  size_t off = 0;
  for (int i = 0; i < n; ++i)
    if (bruckMoves(i, k)) copyBytes(ctx, packed + off, slotData[i], slotBytes[i]), off += slotBytes[i];
  return off;
}

}  // namespace baton

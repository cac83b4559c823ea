// Symmetric-memory collectives: every rank reads and writes its peers' buffers directly, through
// the pointers a window gives it (NCCL 2.27+'s symmetric kernels; NCCL's names in brackets).
//
// Computes, for one channel's contiguous part of the buffer:
//   - AllReduce one-shot [AGxLD]: each rank folds every rank's input into its own output (one hop;
//     small sizes). Every rank folds in rank order, so every rank gets the same bits.
//   - AllReduce two-shot [RSxLD_AGxST]: the part is cut in nRanks pieces; rank j folds piece j
//     from every rank's input (reduce-scatter by loads) and stores the result into every rank's
//     output (all-gather by stores). Each rank reads and writes the buffer once.
//   - AllGather [ST]: each rank stores its input into every rank's output.
//   - ReduceScatter [LD]: each rank folds its block from every rank's input.
// Introduced in lesson 09 (docs/lessons/09-buffer-registration.md).
//
// Memory-ordering contract: two barriers per operation on each channel, in the ranks' pads (SymPad,
// reached through the window like the buffers). Arrive: storeRelease(my arrive, epoch) releases
// my input (written by the user before the call); a rank reads peers' inputs or writes peers'
// outputs only after loadAcquire(every arrive) >= epoch, which also says every peer has entered
// this operation (its output is no longer being read by it). Depart: storeRelease(my depart, epoch)
// after my last load from and store into peers; a rank returns only after loadAcquire(every
// depart) >= epoch, so its input is no longer read and its output is complete. The epoch is the
// channel's count of symmetric operations (+1), the same on every rank.
#pragma once

#include "coll_args.h"
#include "reduce_ops.h"

namespace baton {

constexpr int kSymMaxChannels = 64;
constexpr size_t kSymScratchBytes = 1 << 20;  // one-shot in place: results wait here for the depart barrier

// What a rank posts for an AlltoAll by stores (alltoall_window.h): per peer, the bytes it sends
// there, the bytes it expects from there and where they land (an offset into its window).
struct SymAlltoAllPost {
  static constexpr uint64_t kNoWindow = ~uint64_t(0);
  uint64_t window;  // the serial of the window the receive blocks lie in, or kNoWindow
  struct Peer {
    uint64_t sendBytes, recvBytes, recvOffset;
  } peer[kMaxSymRanks];
};

// One rank's pad, allocated with ncclMemAlloc beside its first window and mapped by its peers.
struct SymPad {
  struct alignas(128) Line {
    uint64_t v;
  };
  Line arrive[kSymMaxChannels];
  Line depart[kSymMaxChannels];
  // The CUDA backend's own count of symmetric kernels per channel, which only this rank's kernels
  // read and advance: in device memory, so the replays of a CUDA graph advance it too.
  uint64_t kernelEpochs[kSymMaxChannels];
  alignas(128) SymAlltoAllPost alltoall;  // written on channel 0 only, before its arrive
  alignas(4096) char scratch[kSymScratchBytes];
};

BATON_HD bool symBarrier(ExecCtx& ctx, const CollArgs& a, bool depart) {
  const SymDev& s = a.sym;
  if (threadId(ctx) == 0) {
    SymPad::Line* mine = depart ? s.pads[a.rank]->depart : s.pads[a.rank]->arrive;
    publish(ctx, &mine[a.channel].v, s.epoch);
    for (int r = 0; r < a.nRanks; ++r) {
      const SymPad::Line* theirs = depart ? s.pads[r]->depart : s.pads[r]->arrive;
      if (r != a.rank &&
          !waitAtLeast(ctx, &theirs[a.channel].v, s.epoch, r, depart ? "symmetric depart" : "symmetric arrive"))
        break;
    }
  }
  blockBarrier();
  return !ctx.failed;
}

// outs[0..nOut) = post(fold over every rank r in order of pre(ins[r][0..n))), a tile at a time.
template <typename T, typename Op>
BATON_HD void symFold(ExecCtx& ctx, const Op& op, const T* const* ins, int nIns, size_t inOff, T* const* outs, int nOut,
                      size_t n) {
  constexpr size_t kTile = 8192 / sizeof(T) > 0 ? 8192 / sizeof(T) : 1;
  T acc[2][kTile];
  for (size_t t = 0; t < n; t += kTile) {
    const size_t cnt = minSize(kTile, n - t);
    const T* in0 = ins[0] + inOff + t;
    if (nIns == 1) {
      reduceCopy<T, Op, kOwnInputToOutput>(ctx, op, nullptr, in0, nullptr, outs[0] + t, cnt);
    } else {
      reduceCopy<T, Op, Moves{.src = true, .dst = true, .preSrc = true}>(ctx, op, nullptr, in0, nullptr, acc[0], cnt);
      int cur = 0;
      for (int r = 1; r < nIns - 1; ++r, cur ^= 1)
        reduceCopy<T, Op, Moves{.recv = true, .src = true, .dst = true, .preSrc = true}>(
            ctx, op, acc[cur], ins[r] + inOff + t, nullptr, acc[cur ^ 1], cnt);
      reduceCopy<T, Op, Moves{.recv = true, .src = true, .dst = true, .preSrc = true, .post = true}>(
          ctx, op, acc[cur], ins[nIns - 1] + inOff + t, nullptr, outs[0] + t, cnt);
    }
    blockBarrier();
    for (int o = 1; o < nOut; ++o) copyBytes(ctx, outs[o] + t, outs[0] + t, cnt * sizeof(T));
  }
}

// The channel's part of `total` elements, in grains of 16 bytes.
template <typename T>
BATON_HD void symRange(const CollArgs& a, size_t total, size_t* lo, size_t* n) {
  channelRange(total, a.channel, a.nChannels, 16 / sizeof(T) ? 16 / sizeof(T) : 1, lo, n);
}

// Every rank's input, as this process reaches it.
template <typename T>
BATON_HD void symInputs(const CollArgs& a, const T** ins) {
  for (int r = 0; r < a.nRanks; ++r) ins[r] = static_cast<const T*>(a.sym.peerSend[r]);
}

template <typename T, typename Op>
BATON_HD void runSymAllReduceOneShot(ExecCtx& ctx, const CollArgs& a, const Op& op) {
  size_t lo, n;
  symRange<T>(a, a.count, &lo, &n);
  const T* ins[kMaxSymRanks];
  symInputs(a, ins);
  T* dst = static_cast<T*>(a.recvbuff) + lo;
  const char* sb = static_cast<const char*>(a.sendbuff);
  const char* rb = static_cast<const char*>(a.recvbuff);
  const size_t bytes = a.count * sizeof(T);
  const bool inPlace = sb < rb + bytes && rb < sb + bytes;  // our output overlaps our input, which peers read
  if (!symBarrier(ctx, a, false)) return;
  T* out = inPlace ? reinterpret_cast<T*>(a.sym.pads[a.rank]->scratch) + lo : dst;
  symFold<T>(ctx, op, ins, a.nRanks, lo, &out, 1, n);
  if (!symBarrier(ctx, a, true)) return;
  if (inPlace) copyBytes(ctx, dst, out, n * sizeof(T));
}

template <typename T, typename Op>
BATON_HD void runSymAllReduceTwoShot(ExecCtx& ctx, const CollArgs& a, const Op& op) {
  size_t lo, n;
  symRange<T>(a, a.count, &lo, &n);
  const T* ins[kMaxSymRanks];
  T* outs[kMaxSymRanks];
  const size_t grain = 16 / sizeof(T) ? 16 / sizeof(T) : 1;
  size_t off, cnt;
  channelRange(n, a.rank, a.nRanks, grain, &off, &cnt);  // my piece of the part
  symInputs(a, ins);
  for (int r = 0; r < a.nRanks; ++r) {
    // Our own output first: symFold writes outs[0] and copies it to the others.
    const int o = (a.rank + r) % a.nRanks;
    outs[r] = static_cast<T*>(a.sym.peerRecv[o]) + lo + off;
  }
  if (!symBarrier(ctx, a, false)) return;
  symFold<T>(ctx, op, ins, a.nRanks, lo + off, outs, a.nRanks, cnt);
  symBarrier(ctx, a, true);
}

template <typename T, typename Op>
BATON_HD void runSymReduceScatter(ExecCtx& ctx, const CollArgs& a, const Op& op) {
  size_t lo, n;
  symRange<T>(a, a.count, &lo, &n);
  const T* ins[kMaxSymRanks];
  symInputs(a, ins);
  T* out = static_cast<T*>(a.recvbuff) + lo;
  if (!symBarrier(ctx, a, false)) return;
  symFold<T>(ctx, op, ins, a.nRanks, (size_t)a.rank * a.count + lo, &out, 1, n);
  symBarrier(ctx, a, true);
}

// Bytes (AllGather moves data whatever its type): our input into every rank's output.
BATON_HD void runSymAllGather(ExecCtx& ctx, const CollArgs& a) {
  size_t lo, n;
  channelRange(a.count, a.channel, a.nChannels, 16, &lo, &n);
  const char* src = static_cast<const char*>(a.sendbuff) + lo;
  if (!symBarrier(ctx, a, false)) return;
  for (int i = 0; i < a.nRanks; ++i) {
    const int r = (a.rank + i) % a.nRanks;
    copyBytes(ctx, static_cast<char*>(a.sym.peerRecv[r]) + (size_t)a.rank * a.count + lo, src, n);
  }
  symBarrier(ctx, a, true);
}

}  // namespace baton

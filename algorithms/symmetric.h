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

// Where a fold's result goes: one buffer, or every rank's (bases[r] + off, by rank), starting with
// rank `first` so a rank writes its own output first.
template <typename T>
struct SymOuts {
  T* one = nullptr;
  void* const* bases = nullptr;
  int n = 1, first = 0;
  size_t off = 0;  // elements
  BATON_HD T* at(int r) const { return one ? one : static_cast<T*>(bases[r]) + off; }
};

// One fold of `cnt` (at most E) consecutive elements starting at element `at` of every input, in
// rank order, into acc. `view(buf, src, cnt)` says where the elements of one input are read from:
// `src` itself, or `buf` after it loaded them (a GPU thread's 16-byte vector, into registers).
// Each step rounds to T, as every backend does, so every rank and backend gets the same bits.
template <typename T, typename Op, typename View>
BATON_HD void symFoldTile(const Op& op, const void* const* ins, int nIns, size_t at, T* acc, T* buf, size_t cnt,
                          View view) {
  constexpr Moves kOnly{.src = true, .preSrc = true, .post = true};
  constexpr Moves kFirst{.src = true, .preSrc = true};
  constexpr Moves kNext{.recv = true, .src = true, .preSrc = true};
  constexpr Moves kLast{.recv = true, .src = true, .preSrc = true, .post = true};
  const int last = nIns - 1;
  const T* in = view(buf, static_cast<const T*>(ins[0]) + at, cnt);
  if (last == 0) {
    for (size_t e = 0; e < cnt; ++e) acc[e] = reduceElem<T, Op, kOnly>(op, T{}, in[e]);
    return;
  }
  for (size_t e = 0; e < cnt; ++e) acc[e] = reduceElem<T, Op, kFirst>(op, T{}, in[e]);
  for (int r = 1; r < last; ++r) {
    in = view(buf, static_cast<const T*>(ins[r]) + at, cnt);
    for (size_t e = 0; e < cnt; ++e) acc[e] = reduceElem<T, Op, kNext>(op, acc[e], in[e]);
  }
  in = view(buf, static_cast<const T*>(ins[last]) + at, cnt);
  for (size_t e = 0; e < cnt; ++e) acc[e] = reduceElem<T, Op, kLast>(op, acc[e], in[e]);
}

// outs[r][i] = post(fold over ranks in order of pre(ins[r][inOff + i])), i in [0, n), for every
// output r, by every thread of the block. The tile width is the backend's (the dispatch's Paths):
//   - 16 bytes (a GPU thread): one 16-byte vector per thread in registers, loaded and stored whole,
//     when every pointer is 16-byte aligned; then one element per thread for the rest;
//   - more (a CPU worker: 8 KiB): a tile staged on the stack, a few loops the compiler vectorises.
// Ends with a block barrier: every store is done when it returns.
template <typename T, size_t kTileBytes, typename Op>
BATON_HD void symFold(ExecCtx& ctx, const Op& op, const void* const* ins, int nIns, size_t inOff,
                      const SymOuts<T>& outs, size_t n) {
  const size_t tid = threadId(ctx), nt = threadCount(ctx);
  auto inPlace = [](T*, const T* src, size_t) { return src; };
  size_t first = 0;  // elements folded by the tile loop; the rest one at a time
  if constexpr (kTileBytes == 16) {
    constexpr size_t V = 16 / sizeof(T);
    struct alignas(16) Vec {  // 16 bytes moved as two words (one 128-bit load or store), read as V elements
      uint64_t w[2];
      BATON_HD T* e() { return reinterpret_cast<T*>(w); }
    };
    uintptr_t addrs = 0;
    for (int r = 0; r < nIns; ++r) addrs |= reinterpret_cast<uintptr_t>(static_cast<const T*>(ins[r]) + inOff);
    for (int o = 0; o < outs.n; ++o) addrs |= reinterpret_cast<uintptr_t>(outs.at(o));
    if ((addrs & 15) == 0) {
      const size_t nv = n / V;
      for (size_t v = tid; v < nv; v += nt) {
        Vec acc, buf;
        symFoldTile<T>(op, ins, nIns, inOff + v * V, acc.e(), buf.e(), V, [](T* b, const T* src, size_t) -> const T* {
          *reinterpret_cast<Vec*>(b) = *reinterpret_cast<const Vec*>(src);
          return b;
        });
        for (int i = 0, r = outs.first; i < outs.n; ++i, r = r + 1 == outs.n ? 0 : r + 1)
          reinterpret_cast<Vec*>(outs.at(r))[v] = acc;
      }
      first = nv * V;
    }
    for (size_t i = first + tid; i < n; i += nt) {
      T acc;
      symFoldTile<T>(op, ins, nIns, inOff + i, &acc, nullptr, 1, inPlace);
      for (int o = 0; o < outs.n; ++o) outs.at(o)[i] = acc;
    }
  } else {
    constexpr size_t E = kTileBytes / sizeof(T) > 0 ? kTileBytes / sizeof(T) : 1;
    T acc[E];
    for (size_t t = tid * E; t < n; t += nt * E) {
      const size_t cnt = minSize(E, n - t);
      symFoldTile<T>(op, ins, nIns, inOff + t, acc, nullptr, cnt, inPlace);
      for (int i = 0, r = outs.first; i < outs.n; ++i, r = r + 1 == outs.n ? 0 : r + 1)
        copyBytes(ctx, outs.at(r) + t, acc, cnt * sizeof(T));
    }
  }
  blockBarrier();
}

// The channel's part of `total` elements, in grains of 16 bytes.
template <typename T>
BATON_HD void symRange(const CollArgs& a, size_t total, size_t* lo, size_t* n) {
  channelRange(total, a.channel, a.nChannels, 16 / sizeof(T) ? 16 / sizeof(T) : 1, lo, n);
}

template <typename T, size_t kTileBytes, typename Op>
BATON_HD void runSymAllReduceOneShot(ExecCtx& ctx, const CollArgs& a, const Op& op) {
  size_t lo, n;
  symRange<T>(a, a.count, &lo, &n);
  T* dst = static_cast<T*>(a.recvbuff) + lo;
  const char* sb = static_cast<const char*>(a.sendbuff);
  const char* rb = static_cast<const char*>(a.recvbuff);
  const size_t bytes = a.count * sizeof(T);
  const bool inPlace = sb < rb + bytes && rb < sb + bytes;  // our output overlaps our input, which peers read
  if (!symBarrier(ctx, a, false)) return;
  SymOuts<T> out;
  out.one = inPlace ? reinterpret_cast<T*>(a.sym.pads[a.rank]->scratch) + lo : dst;
  symFold<T, kTileBytes>(ctx, op, a.sym.peerSend, a.nRanks, lo, out, n);
  if (!symBarrier(ctx, a, true)) return;
  if (inPlace) copyBytes(ctx, dst, out.one, n * sizeof(T));
}

template <typename T, size_t kTileBytes, typename Op>
BATON_HD void runSymAllReduceTwoShot(ExecCtx& ctx, const CollArgs& a, const Op& op) {
  size_t lo, n;
  symRange<T>(a, a.count, &lo, &n);
  const size_t grain = 16 / sizeof(T) ? 16 / sizeof(T) : 1;
  size_t off, cnt;
  channelRange(n, a.rank, a.nRanks, grain, &off, &cnt);  // my piece of the part
  // Stored into every rank's output, ours first. In place is safe: only this rank loads or stores
  // the piece's elements, each thread loading a tile before it stores it.
  SymOuts<T> outs;
  outs.bases = a.sym.peerRecv, outs.n = a.nRanks, outs.first = a.rank, outs.off = lo + off;
  if (!symBarrier(ctx, a, false)) return;
  symFold<T, kTileBytes>(ctx, op, a.sym.peerSend, a.nRanks, lo + off, outs, cnt);
  symBarrier(ctx, a, true);
}

template <typename T, size_t kTileBytes, typename Op>
BATON_HD void runSymReduceScatter(ExecCtx& ctx, const CollArgs& a, const Op& op) {
  size_t lo, n;
  symRange<T>(a, a.count, &lo, &n);
  SymOuts<T> out;
  out.one = static_cast<T*>(a.recvbuff) + lo;
  if (!symBarrier(ctx, a, false)) return;
  symFold<T, kTileBytes>(ctx, op, a.sym.peerSend, a.nRanks, (size_t)a.rank * a.count + lo, out, n);
  symBarrier(ctx, a, true);
}

// Bytes (the data's type does not matter), `count` bytes per block: AllGather [ST] stores our input
// at our block of every rank's output; AlltoAll by stores (kAlgoSymAlltoAll, the CUDA backend's)
// stores our block for rank r there instead. Peers first, from the next rank on, ours last.
BATON_HD void runSymAllGather(ExecCtx& ctx, const CollArgs& a) {
  size_t lo, n;
  channelRange(a.count, a.channel, a.nChannels, 16, &lo, &n);
  const bool perPeer = a.algo == kAlgoSymAlltoAll;
  const char* src = static_cast<const char*>(a.sendbuff) + lo;
  if (!symBarrier(ctx, a, false)) return;
  for (int i = 1; i <= a.nRanks; ++i) {
    const int r = (a.rank + i) % a.nRanks;
    copyBytes(ctx, static_cast<char*>(a.sym.peerRecv[r]) + (size_t)a.rank * a.count + lo,
              src + (perPeer ? (size_t)r * a.count : 0), n);
  }
  blockBarrier();
  symBarrier(ctx, a, true);
}

}  // namespace baton

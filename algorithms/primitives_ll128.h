// The LL128 protocol's primitives: 128-byte lines, 120 bytes of payload and a 64-bit flag.
//
// Computes the same operations as primitives_simple.h (names in primitives_api.h), one 128-byte
// line at a time: u64 words 0..14 carry payload, word 15 carries the flag step + 1. 94% of the
// bytes are payload, and the signal still travels with the data, so LL128 sits between LL
// (latency) and Simple (bandwidth). Introduced in lesson 04 (docs/lessons/04-protocols.md).
//
// Memory-ordering contract (LL128):
//   - GPU (NCCL): a warp stores a whole line with 16-byte stores, and NVLink delivers a warp's 128
//     bytes as a whole, so a reader that sees the flag sees the line. PCIe does not promise this,
//     which is why NCCL enables LL128 only on NVLink paths; baton's device build writes the
//     flag word last with a release store, the CPU rule below, and does not rely on that property.
//   - CPU (this backend): payload words are plain stores; the flag is a storeRelease() after them,
//     so it releases its own line's payload. The reader loadAcquire()s the flag and reads the
//     payload only when it equals step + 1.
//   - after the whole step is consumed the receiver storeRelease()s head = step + 1 (credit);
//     the slot size in fifo->sizes is written before line 0's flag and checked after it.
// Flags are 64-bit step counters: they do not wrap, so no cleaning is needed.
#pragma once

#include "connector.h"
#include "exec_model.h"
#include "primitives_api.h"
#include "reduce_ops.h"

namespace baton {

struct alignas(128) LL128Line {
  uint64_t data[15];
  uint64_t flag;
};
static_assert(sizeof(LL128Line) == kLL128LineBytes, "an LL128 line is 128 bytes");

// Waits until the line's flag is `flag` (returns false if the wait gave up).
BATON_HD bool waitLL128(ExecCtx& ctx, const LL128Line* line, uint64_t flag, int peer) {
  uint64_t f = loadAcquire(&line->flag);
  uint32_t it = 0;
  uint64_t start = 0;
  while (f != flag) {
    waitTurn(ctx, it);
    f = loadAcquire(&line->flag);
    if (f != flag && it % kWaitCheckEvery == 0 && waitGiveUp(ctx, start, peer, "LL128 line flag", flag, f))
      return false;
  }
  waitResumed(ctx, start);
  return true;
}

template <typename T, typename Op>
class Primitives<T, Op, ProtoLL128> : public PrimitivesApi<Primitives<T, Op, ProtoLL128>, T> {
 public:
  static_assert(kLL128DataBytes % sizeof(T) == 0, "an LL128 line holds whole elements");
  BATON_HD Primitives(ExecCtx& ctx, ConnDev* recvConn, ConnDev* sendConn, const Op& op)
      : ctx_(ctx), recv_(recvConn), send_(sendConn), op_(op) {}

  template <Moves M>
  BATON_HD void run(const T* src, T* dst, size_t n) {
    if (ctx_.failed) return;
    constexpr int P = kProtoLL128;
    constexpr size_t E = kLL128DataBytes / sizeof(T);  // elements per line
    const size_t sliceElems = ProtoLL128::payloadBytes(send_ ? send_->stepBytes[P] : recv_->stepBytes[P]) / sizeof(T);
    for (size_t off = 0; off < n; off += sliceElems) {
      const size_t cnt = minSize(sliceElems, n - off);
      const uint64_t bytes = cnt * sizeof(T);
      const uint64_t t0 = traceStart(ctx_);
      const size_t nLines = divUp(cnt, E);
      LL128Line* recvLines = M.recv ? reinterpret_cast<LL128Line*>(slotPtr(*recv_, P, recv_->step)) : nullptr;
      LL128Line* sendLines = M.send ? reinterpret_cast<LL128Line*>(slotPtr(*send_, P, send_->step)) : nullptr;
      const uint64_t recvFlag = M.recv ? recv_->step + 1 : 0;
      const uint64_t sendFlag = M.send ? send_->step + 1 : 0;
      if (threadId(ctx_) == 0) {
        if constexpr (M.send) {
          waitSendCredit(ctx_, *send_);
          if (!ctx_.failed) cleanLLSlotIfDue(*send_), send_->fifo->sizes[send_->step % kSteps] = bytes;
        }
#if !defined(__CUDA_ARCH__)
        if (M.recv && !ctx_.failed && waitLL128(ctx_, recvLines, recvFlag, recv_->peer)) {
          const uint64_t got = recv_->fifo->sizes[recv_->step % kSteps];
          if (got != bytes) failSlotSize(ctx_, recv_->peer, bytes, got);
        }
#endif
      }
      blockBarrier();
      if (ctx_.failed) return;
#if !defined(__CUDA_ARCH__)
      if (M.send && ctx_.jitter) jitterSleep(ctx_);
#endif
      for (size_t l = threadId(ctx_); l < nLines; l += threadCount(ctx_)) {
        if constexpr (M.recv) {
          if (!waitLL128(ctx_, recvLines + l, recvFlag, recv_->peer)) break;
        }
        const size_t base = off + l * E;
        const size_t valid = minSize(E, n - base);
        const T* in = M.recv ? reinterpret_cast<const T*>(recvLines[l].data) : nullptr;
        T* out = M.send ? reinterpret_cast<T*>(sendLines[l].data) : nullptr;
        if (valid == E) line<M>(in, M.src ? src + base : nullptr, out, M.dst ? dst + base : nullptr, E);  // unrolled
        else line<M>(in, M.src ? src + base : nullptr, out, M.dst ? dst + base : nullptr, valid);
        if constexpr (M.send) storeRelease(&sendLines[l].flag, sendFlag);
      }
      blockBarrier();
      if (ctx_.failed) return;
      if (threadId(ctx_) == 0) finishStep<ProtoLL128, M>(ctx_, recv_, send_, bytes, t0);
      blockBarrier();
    }
  }

 private:
  // One line's elements; each thread owns whole lines (a GPU warp would share one).
  template <Moves M>
  BATON_HD void line(const T* in, const T* src, T* out, T* dst, size_t cnt) {
#if !defined(__CUDA_ARCH__)
    // A copy (AllGather, Broadcast and every forwarding step): memcpy, which keeps the bits as the
    // loop does but is not held back by the pointers possibly aliasing, as byte-sized carriers'
    // pointers do (AllGather and Broadcast move bytes: the element loop ran a byte at a time).
    constexpr bool kPre = M.src && M.preSrc && !Op::kPreIdentity, kPost = M.post && !Op::kPostIdentity;
    if constexpr (!(M.recv && M.src) && !kPre && !kPost) {
      const T* from = M.recv ? in : src;
      if constexpr (M.send) memcpy(out, from, cnt * sizeof(T));
      if constexpr (M.dst)
        if (dst != from) memcpy(dst, from, cnt * sizeof(T));  // in place, dst is the source: nothing to move
      return;
    }
    // the 16- and 8-bit floats: vector conversions (reduce_x86.h)
    size_t e = reduceVectorPrefix<T, Op, M.recv, M.src, kPre, kPost>(op_, in, src, M.send ? out : nullptr,
                                                                     M.dst ? dst : nullptr, cnt);
#else
    size_t e = 0;
#endif
    for (; e < cnt; ++e) {
      const T v = reduceElem<T, Op, M>(op_, M.recv ? in[e] : T{}, M.src ? src[e] : T{});
      if constexpr (M.send) out[e] = v;
      if constexpr (M.dst) dst[e] = v;
    }
  }

  ExecCtx& ctx_;
  ConnDev* recv_;
  ConnDev* send_;
  Op op_;
};

}  // namespace baton

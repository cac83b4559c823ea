// The LL ("low latency") protocol's primitives: every 8 bytes of payload travel with their own flag.
//
// Computes the same operations as primitives_simple.h (names in primitives_api.h), one 16-byte
// line at a time. A line is NCCL's {data1:u32, flag1:u32, data2:u32, flag2:u32}: 8 bytes of
// payload, flag = (uint32)(step + 1) in both halves. The receiver spins on the line itself, so
// there is no tail counter and no fence: one memory transaction carries data and signal. Half of
// every line is flags, so LL costs twice the bytes: it wins on small messages only.
// Introduced in lesson 04 (docs/lessons/04-protocols.md).
//
// Memory-ordering contract (LL):
//   - each half {data, flag} is one 64-bit atomic store (storeRelease; a plain mov on x86, one
//     8-byte store on a GPU), so a reader that sees the flag sees that half's data: the flag
//     releases the data it travels with, nothing else;
//   - the reader loadAcquire()s both halves and uses the line only when both flags equal step + 1;
//   - after the whole step is consumed the receiver storeRelease()s head = step + 1 (credit);
//   - the slot size in fifo->sizes is written before line 0 and is checked (CPU backend) after
//     line 0 is seen: a diagnostic for mismatched counts, ordered by line 0's release store.
// Flag wrap-around: flags are 32-bit, so a line untouched for 2^32 steps would look fresh. On steps
// where (step & kLLCleanMask) == kLLCleanMask (once per 2^31 steps, one per slot) the sender first
// rewrites every line of the LL slot with the slot's previous flag (step + 1 - kSteps), which no
// reader will wait for, so no line is ever older than 2^31 + kSteps steps. Every protocol's send
// does this (cleanLLSlotIfDue, primitives_api.h): the clean step may well carry Simple or LL128.
#pragma once

#include "connector.h"
#include "exec_model.h"
#include "primitives_api.h"
#include "reduce_ops.h"

namespace baton {

// Waits until both halves carry `flag`; returns the 8 payload bytes (0 if the wait gave up).
BATON_HD uint64_t readLL(ExecCtx& ctx, const LLLine* line, uint32_t flag, int peer) {
  uint64_t a = loadAcquire(&line->half[0]), b = loadAcquire(&line->half[1]);
  uint32_t it = 0;
  uint64_t start = 0;
  while ((uint32_t)(a >> 32) != flag || (uint32_t)(b >> 32) != flag) {
    waitTurn(ctx, it);
    a = loadAcquire(&line->half[0]);
    b = loadAcquire(&line->half[1]);
    if (it % kWaitCheckEvery == 0 && ((uint32_t)(a >> 32) != flag || (uint32_t)(b >> 32) != flag) &&
        waitGiveUp(ctx, start, peer, "LL line flag", flag, (uint32_t)(a >> 32)))
      return 0;
  }
  waitResumed(ctx, start);
  return (a & 0xffffffffull) | (b << 32);
}

template <typename T, typename Op>
class Primitives<T, Op, ProtoLL> : public PrimitivesApi<Primitives<T, Op, ProtoLL>, T> {
 public:
  static_assert(8 % sizeof(T) == 0, "an LL line holds whole elements");
  BATON_HD Primitives(ExecCtx& ctx, ConnDev* recvConn, ConnDev* sendConn, const Op& op)
      : ctx_(ctx), recv_(recvConn), send_(sendConn), op_(op) {}

  template <Moves M>
  BATON_HD void run(const T* src, T* dst, size_t n) {
    if (ctx_.failed) return;
    constexpr int P = kProtoLL;
    constexpr size_t E = 8 / sizeof(T);  // elements per line
    const size_t sliceElems = ProtoLL::payloadBytes(send_ ? send_->stepBytes[P] : recv_->stepBytes[P]) / sizeof(T);
    for (size_t off = 0; off < n; off += sliceElems) {
      const size_t cnt = minSize(sliceElems, n - off);
      const uint64_t bytes = cnt * sizeof(T);
      const uint64_t t0 = traceStart(ctx_);
      const size_t nLines = divUp(cnt, E);
      LLLine* recvLines = M.recv ? reinterpret_cast<LLLine*>(slotPtr(*recv_, P, recv_->step)) : nullptr;
      LLLine* sendLines = M.send ? reinterpret_cast<LLLine*>(slotPtr(*send_, P, send_->step)) : nullptr;
      const uint32_t recvFlag = M.recv ? (uint32_t)(recv_->step + 1) : 0;
      const uint32_t sendFlag = M.send ? (uint32_t)(send_->step + 1) : 0;
      if (threadId(ctx_) == 0) {
        if constexpr (M.send) {
          waitSendCredit(ctx_, *send_);
          if (!ctx_.failed) {
            cleanLLSlotIfDue(*send_);
            send_->fifo->sizes[send_->step % kSteps] = bytes;
          }
        }
#if !defined(__CUDA_ARCH__)
        if (M.recv && !ctx_.failed) {  // line 0's release store ordered the size before it
          readLL(ctx_, recvLines, recvFlag, recv_->peer);
          const uint64_t got = recv_->fifo->sizes[recv_->step % kSteps];
          if (!ctx_.failed && got != bytes) failSlotSize(ctx_, recv_->peer, bytes, got);
        }
#endif
      }
      blockBarrier();
      if (ctx_.failed) return;
#if !defined(__CUDA_ARCH__)
      if (M.send && ctx_.jitter) jitterSleep(ctx_);
#endif
      for (size_t l = threadId(ctx_); l < nLines; l += threadCount(ctx_)) {
        union {
          uint64_t u;
          T t[E];
        } in{0}, out{0};
        if constexpr (M.recv) {
          in.u = readLL(ctx_, recvLines + l, recvFlag, recv_->peer);
          if (ctx_.failed) break;
        }
        const size_t base = off + l * E;
        const size_t valid = minSize(E, n - base);
#if !defined(__CUDA_ARCH__)
        // A whole line that is only copied (AllGather, Broadcast, forwarding steps) moves as one
        // 8-byte word: byte-sized carriers' element loop ran a byte at a time.
        constexpr bool kCopy =
            !(M.recv && M.src) && !(M.src && M.preSrc && !Op::kPreIdentity) && !(M.post && !Op::kPostIdentity);
        if constexpr (kCopy) {
          if (valid == E) {
            if constexpr (M.recv) out.u = in.u;
            else memcpy(&out.u, src + base, 8);
            if constexpr (M.dst) memcpy(dst + base, &out.u, 8);
            if constexpr (M.send) storeLL(sendLines + l, out.u, sendFlag);
            continue;
          }
        }
#endif
        for (size_t e = 0; e < valid; ++e) {
          const T v = reduceElem<T, Op, M>(op_, in.t[e], M.src ? src[base + e] : T{});
          out.t[e] = v;
          if constexpr (M.dst) dst[base + e] = v;
        }
        if constexpr (M.send) storeLL(sendLines + l, out.u, sendFlag);
      }
      blockBarrier();
      if (ctx_.failed) return;
      if (threadId(ctx_) == 0) finishStep<ProtoLL, M>(ctx_, recv_, send_, bytes, t0);
      blockBarrier();
    }
  }

 private:
  ExecCtx& ctx_;
  ConnDev* recv_;
  ConnDev* send_;
  Op op_;
};

}  // namespace baton

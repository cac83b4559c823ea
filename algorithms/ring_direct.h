// The steps of the ring collectives with direct paths (DirectRing): ranks that are threads of one
// process read and write each other's user buffers, and the FIFO carries only signals (and
// pointers). Each collective's body is in its own file (ring_allreduce_direct.h,
// ring_allgather_direct.h, ring_reduce_scatter_direct.h, ring_broadcast_direct.h,
// ring_reduce_direct.h): a block written into the next rank's recvbuff, an input read where it lies.
//
// AllReduce computes the same result as ring_allreduce.h (Simple protocol), with the same chunks
// and steps:
//   - the first send of each chunk posts a pointer to the sender's own input instead of copying it
//     ("direct read": the receiver reduces straight from the peer's sendbuff);
//   - the rank that finishes a chunk writes the result into its own recvbuff and into the next
//     rank's recvbuff ("direct write": the next rank receives nothing to copy), and forwarding ranks
//     copy from their recvbuff into the next one's; the last receive is only a wait.
// Between processes of one host (lesson 09) the same holds for buffers from ncclMemAlloc, which
// peers map (peer_mappings.h). Any other buffer is reached with single copies where the kernel
// permits cross-memory attach (CollArgs::peerCopy, src/misc/cross_memory.h): the receiver
// copies the peer's input slice into its slot and reduces from there, and the final value goes
// into the next rank's recvbuff with one process_vm_writev. Without either, an edge falls back to
// values in the FIFO, slice by slice, so mixed buffers stay correct.
// Intermediate partial sums of rings longer than 2 still travel through the FIFO. For 2 ranks a
// rank moves its share with one pass over memory: reads its and the peer's input, writes both
// outputs. Introduced in lesson 05 (docs/lessons/05-channels-and-tuning.md).
//
// Memory-ordering contract: as the Simple protocol (primitives_simple.h): a slot's size word and
// contents (data, or a pointer) are plain stores released by the tail store; a direct write into
// the peer's recvbuff is also a plain store released by the same tail store. The receiver
// publishes its recvbuff in fifo->directPtr, released by storeRelease(directTag, op + 1); the
// sender acquires directTag before writing. A rank returns only after the next rank has consumed
// every step it posted (head == step), so a pointer to its input is never read after it returns.
// Single copies are system calls that complete before they return: a process_vm_writev into the
// peer's recvbuff is released by the tail store like a plain store, and the process_vm_readv of
// the peer's input happens before our head store.
#pragma once

#include "coll_args.h"
#include "primitives.h"
#include "ring_allreduce.h"

#if !defined(__CUDA_ARCH__) && defined(__x86_64__)
#include <immintrin.h>
#endif

namespace baton {

constexpr uint64_t kSlotPointer = 1ull << 63;    // the slot holds a pointer to the data
constexpr uint64_t kSlotDelivered = 1ull << 62;  // the data is already in the receiver's recvbuff
constexpr uint64_t kSlotSizeMask = kSlotDelivered - 1;

// What DirectRing::combine does: a received slice (+) our input into our output, and on the final
// value the post-op. (Two constants, not one template on Final: nvcc 13 cannot substitute a
// variable template as a class-type template argument.)
constexpr Moves kCombine{.recv = true, .src = true, .dst = true, .preSrc = true};
constexpr Moves kCombineFinal{.recv = true, .src = true, .dst = true, .preSrc = true, .post = true};
// What each DirectRing step is called in the BATON_TRACE timeline (the primitive it replaces).
constexpr Moves kTraceSend{.send = true, .src = true};
constexpr Moves kTraceRecvReduceSend{.recv = true, .send = true, .src = true};
constexpr Moves kTraceRecvReduceCopySend{.recv = true, .send = true, .src = true, .dst = true};
constexpr Moves kTraceRecvCopySend{.recv = true, .send = true, .dst = true};
constexpr Moves kTraceRecv{.recv = true, .dst = true};
constexpr Moves kTraceCopySend{.send = true, .src = true, .dst = true};
constexpr Moves kTraceRecvReduceCopy{.recv = true, .src = true, .dst = true};

template <typename T, typename Op>
class DirectRing {
 public:
  // recvElems: how many elements of T the next rank's recvbuff holds (AllGather: every rank's).
  BATON_HD DirectRing(ExecCtx& ctx, const CollArgs& a, const Op& op, size_t recvElems)
      : ctx_(ctx),
        recv_(a.ring.recv),
        send_(a.ring.send),
        op_(op),
        sliceElems_(a.ring.send->stepBytes[kProtoSimple] / sizeof(T)),
        stream_(a.streamStores),
        map_(a.peerMap),
        sendAlloc_(a.sendAlloc),
        copy_(a.peerCopy) {
    // Tell the previous rank where our output is for this operation.
    if (threadId(ctx_) == 0) {
      recv_->fifo->directPtr = a.recvbuff;
      recv_->fifo->directAlloc = a.recvAlloc;
      publish(ctx_, &recv_->fifo->directTag, a.opTag);
      if (waitAtLeast(ctx_, &send_->fifo->directTag, a.opTag, send_->peer, "peer's recvbuff (direct)")) {
        void* p = send_->fifo->directPtr;
        // Another process: its buffer is reachable if it is ncclMemAlloc memory we can map, else
        // by single copies when allowed; if neither, this edge carries values through the FIFO
        // (peerDst_ stays null).
        if (map_) {
          void* local = mapPeer(send_->peer, send_->fifo->directAlloc, p, recvElems * sizeof(T));
          if (!local && copy_) peerRemote_ = true;  // p stays an address in the peer's process
          else p = local;
        }
        peerDst_ = static_cast<T*>(p);
      }
    }
    blockBarrier();
  }

  // Post pointers to our own input (no copy). An operator with a pre-op (PreMulSum) must apply it
  // to every input, so its first send copies pre(src) into the FIFO instead.
  // Between processes the slot also names the pointer's ncclMemAlloc allocation, so the next rank
  // can map it, or 0: it copies from it (single copy); without either we copy into the slot.
  BATON_HD void sendFirst(const T* src, size_t n) {
    forSlices<kTraceSend>(n, [&](size_t off, size_t cnt, const T*, bool, char* slot) {
      if (Op::kPreIdentity && (!map_ || sendAlloc_ || copy_)) {
        const T* p = src + off;
        memcpy(slot, &p, sizeof p);
        memcpy(slot + sizeof p, &sendAlloc_, sizeof sendAlloc_);
        return kSlotPointer | (cnt * sizeof(T));
      } else {
        reduceCopy<T, Op, Moves{.send = true, .src = true, .preSrc = true}>(ctx_, op_, nullptr, src + off,
                                                                            reinterpret_cast<T*>(slot), nullptr, cnt);
        return uint64_t(cnt * sizeof(T));
      }
    });
  }
  // Partial sum into the FIFO.
  BATON_HD void recvReduceSend(const T* src, size_t n) {
    forSlices<kTraceRecvReduceSend>(n, [&](size_t off, size_t cnt, const T* in, bool, char* slot) {
      combine<false>(in, src + off, reinterpret_cast<T*>(slot), nullptr, cnt);
      return uint64_t(cnt * sizeof(T));
    });
  }
  // Final value into our recvbuff and the next rank's (or its slot, when we cannot reach its buffer).
  BATON_HD void recvReduceCopyDirectSend(const T* src, T* dst, size_t n, size_t dstOff) {
    forSlices<kTraceRecvReduceCopySend>(n, [&](size_t off, size_t cnt, const T* in, bool, char* slot) {
      if (!peerDst_) {
        combine<true>(in, src + off, dst + off, reinterpret_cast<T*>(slot), cnt);
        return uint64_t(cnt * sizeof(T));
      }
      if (peerRemote_) {
        combine<true>(in, src + off, dst + off, nullptr, cnt);
        return copyToPeer(peerDst_ + dstOff + off, dst + off, cnt);
      }
      combine<true>(in, src + off, dst + off, peerDst_ + dstOff + off, cnt);
      return kSlotDelivered | (cnt * sizeof(T));
    });
  }
  // Already in our recvbuff (written by the previous rank), or in the slot: forward it into the
  // next rank's recvbuff (or slot).
  BATON_HD void recvCopyDirectSend(T* dst, size_t n, size_t dstOff) {
    forSlices<kTraceRecvCopySend>(n, [&](size_t off, size_t cnt, const T* in, bool delivered, char* slot) {
      if (!delivered) copyBytes(ctx_, dst + off, in, cnt * sizeof(T));
      if (!peerDst_) {
        copyBytes(ctx_, slot, dst + off, cnt * sizeof(T));
        return uint64_t(cnt * sizeof(T));
      }
      if (peerRemote_) return copyToPeer(peerDst_ + dstOff + off, dst + off, cnt);
      copyBytes(ctx_, peerDst_ + dstOff + off, dst + off, cnt * sizeof(T));
      return kSlotDelivered | (cnt * sizeof(T));
    });
  }
  // Our own input (AllGather): into our recvbuff and the next rank's (or its slot).
  BATON_HD void copyDirectSend(const T* src, T* dst, size_t n, size_t dstOff) {
    forSlices<kTraceCopySend>(n, [&](size_t off, size_t cnt, const T*, bool, char* slot) {
      if (dst + off != src + off) copyBytes(ctx_, dst + off, src + off, cnt * sizeof(T));
      if (!peerDst_) {
        copyBytes(ctx_, slot, src + off, cnt * sizeof(T));
        return uint64_t(cnt * sizeof(T));
      }
      if (peerRemote_) return copyToPeer(peerDst_ + dstOff + off, src + off, cnt);
      copyBytes(ctx_, peerDst_ + dstOff + off, src + off, cnt * sizeof(T));
      return kSlotDelivered | (cnt * sizeof(T));
    });
  }
  // The last partial (ReduceScatter): (+) our input, post-op, into our recvbuff only.
  BATON_HD void recvReduceCopy(const T* src, T* dst, size_t n) {
    forSlices<kTraceRecvReduceCopy>(n, [&](size_t off, size_t cnt, const T* in, bool, char*) {
      combine<true>(in, src + off, dst + off, nullptr, cnt);
      return uint64_t(0);
    });
  }
  // Already in our recvbuff (only the signal), or in the slot.
  BATON_HD void recvDelivered(T* dst, size_t n) {
    forSlices<kTraceRecv>(n, [&](size_t off, size_t cnt, const T* in, bool delivered, char*) {
      if (!delivered) copyBytes(ctx_, dst + off, in, cnt * sizeof(T));
      return uint64_t(0);
    });
  }
  // Wait until the next rank has consumed everything we posted (it may still read our input).
  BATON_HD void drain() {
    if (threadId(ctx_) == 0) waitAtLeast(ctx_, &send_->fifo->head, send_->step, send_->peer, "send head (drain)");
    blockBarrier();
  }

  // The loop of the collectives at the end of this file: this channel's share of `count` elements
  // in chunks of what the FIFO's steps hold, body(off, n) for each, then drain.
  template <typename Body>
  BATON_HD void forEachChunk(const CollArgs& a, size_t count, Body body) {
    size_t lo, chanCount;
    channelRange(count, a.channel, a.nChannels, protoGrainElems<ProtoSimple, T>(), &lo, &chanCount);
    const size_t chunkMax = chunkElems<ProtoSimple, T>(*a.ring.send, a.chunkSteps);
    for (size_t done = 0; done < chanCount && !ctx_.failed;) {
      const size_t n = minSize(chunkMax, chanCount - done);
      body(lo + done, n);
      done += n;
    }
    drain();
  }

 private:
  // post(off, cnt, input, delivered, sendSlot) does the slice's work and returns the size word to
  // publish; `delivered`: the data is already in our recvbuff (`input` is then meaningless).
  // M names the step in the BATON_TRACE timeline and says whether it receives and sends.
  template <Moves M, typename F>
  BATON_HD void forSlices(size_t n, F post) {
    constexpr bool recv = M.recv, send = M.send;
    for (size_t off = 0; off < n && !ctx_.failed; off += sliceElems_) {
      const size_t cnt = minSize(sliceElems_, n - off);
      const uint64_t t0 = traceStart(ctx_);
      if (threadId(ctx_) == 0) {
        if (recv) waitAtLeast(ctx_, &recv_->fifo->tail, recv_->step + 1, recv_->peer, "recv tail");
        if (send && !ctx_.failed) waitSendCredit(ctx_, *send_);
        if (send && !ctx_.failed) cleanLLSlotIfDue(*send_);
      }
      blockBarrier();
      if (ctx_.failed) return;
      const T* in = nullptr;
      bool delivered = false;
      if (recv) {
        char* slot = slotPtr(*recv_, kProtoSimple, recv_->step);
        const uint64_t word = recv_->fifo->sizes[recv_->step % kSteps];
        if ((word & kSlotSizeMask) != cnt * sizeof(T))
          return failSlotSize(ctx_, recv_->peer, cnt * sizeof(T), word & kSlotSizeMask);
        delivered = word & kSlotDelivered;
        if (word & kSlotPointer) {
          memcpy(&in, slot, sizeof in);
          if (map_) {
            uint64_t alloc;
            memcpy(&alloc, slot + sizeof in, sizeof alloc);
            if (alloc == 0 && copy_) {  // single copy: the peer's input slice into our slot
              if (!copyFromPeer(slot, in, cnt)) return;
              in = reinterpret_cast<const T*>(slot);
            } else {
              in = static_cast<const T*>(mapPeer(recv_->peer, alloc, const_cast<T*>(in), cnt * sizeof(T)));
              if (!in)
                return failPeerCopy(ctx_, recv_->peer, "input (a map of its registered buffer)", cnt * sizeof(T));
            }
          }
        } else {
          in = reinterpret_cast<const T*>(slot);
        }
      }
      const uint64_t word = post(off, cnt, in, delivered, send ? slotPtr(*send_, kProtoSimple, send_->step) : nullptr);
      if (ctx_.failed) return;  // a single copy failed: publish nothing
#if !defined(__CUDA_ARCH__) && defined(__x86_64__)
      if (streamed_) _mm_sfence(), streamed_ = false;  // order streaming stores before the tail
#endif
      blockBarrier();
      if (threadId(ctx_) == 0) {
        if (send) {
          send_->fifo->sizes[send_->step % kSteps] = word;
          publish(ctx_, &send_->fifo->tail, send_->step + 1);
          send_->step++;
        }
        if (recv) {
          publish(ctx_, &recv_->fifo->head, recv_->step + 1);
          recv_->step++;
        }
      }
      traceEnd<M>(ctx_, "Simple", send ? send_->step : recv_->step, cnt * sizeof(T), t0);
    }
    blockBarrier();
  }

  // out0 = in (+) pre(src), post-op when Final; then out1 = out0 (while the slice is in cache), if
  // there is an out1.
  // `in` is another rank's buffer or a slot, never out0; it may be out1 (the next rank's buffer,
  // in place, 2 ranks), which is why out1 is written only after the whole slice is read.
  template <bool Final>
  BATON_HD void combine(const T* in, const T* src, T* out0, T* out1, size_t cnt) {
#if !defined(__CUDA_ARCH__) && defined(__x86_64__)
    // Both outputs are written once and not read again by this rank: streaming (non-temporal)
    // stores skip the read-for-ownership of every output line, a third of the memory traffic.
    // They are weakly ordered, so forSlices fences (sfence) before the tail store releases them.
    // Each cache line is read whole before any of it is streamed out: in place, out0 is src, and
    // a streaming store into a line that a later load of the same line still needs sends every
    // 16 bytes to memory and back (1-byte types ran at 0.1 GB/s that way).
    constexpr size_t kVec = 16 / sizeof(T);   // elements per 16-byte streaming store
    constexpr size_t kLine = 64 / sizeof(T);  // elements per cache line
    if (stream_ && cnt * sizeof(T) >= kStreamBytes &&
        (!out1 || (reinterpret_cast<uintptr_t>(out0) % 16) == (reinterpret_cast<uintptr_t>(out1) % 16)) &&
        reinterpret_cast<uintptr_t>(out0) % sizeof(T) == 0) {
      size_t i = 0;
      for (; i < cnt && reinterpret_cast<uintptr_t>(out0 + i) % 64; ++i) {  // up to the first whole line
        const T v = reduceElem < T, Op, Final ? kCombineFinal : kCombine > (op_, in[i], src[i]);
        out0[i] = v;
        if (out1) out1[i] = v;
      }
      // the 16- and 8-bit floats: vector conversions (reduce_x86.h)
      i += reduceVectorPrefix < T, Op, true, true, !Op::kPreIdentity, Final && !Op::kPostIdentity,
          true > (op_, in + i, src + i, out0 + i, out1 ? out1 + i : nullptr, cnt - i);
      for (; i + kLine <= cnt; i += kLine) {
        alignas(64) T v[kLine];
        for (size_t e = 0; e < kLine; ++e)
          v[e] = reduceElem < T, Op, Final ? kCombineFinal : kCombine > (op_, in[i + e], src[i + e]);
        for (size_t l = 0; l < kLine; l += kVec) {
          const __m128i x = _mm_load_si128(reinterpret_cast<const __m128i*>(v + l));
          _mm_stream_si128(reinterpret_cast<__m128i*>(out0 + i + l), x);
          if (out1) _mm_stream_si128(reinterpret_cast<__m128i*>(out1 + i + l), x);
        }
      }
      for (; i < cnt; ++i) {
        const T v = reduceElem < T, Op, Final ? kCombineFinal : kCombine > (op_, in[i], src[i]);
        out0[i] = v;
        if (out1) out1[i] = v;
      }
      streamed_ = true;
      return;
    }
#endif
    reduceCopy<T, Op, Final ? kCombineFinal : kCombine>(ctx_, op_, in, src, nullptr, out0, cnt);
    if (out1) {
      blockBarrier();
      copyBytes(ctx_, out1, out0, cnt * sizeof(T));
    }
  }
  static constexpr size_t kStreamBytes = 64 << 10;

  // A peer process's address in its allocation `alloc`, as this process reaches it (null: cannot).
  BATON_HD void* mapPeer(int peer, uint64_t alloc, void* p, size_t bytes) {
#if !defined(__CUDA_ARCH__)
    return map_->map(map_->self, peer, alloc, reinterpret_cast<uintptr_t>(p), bytes);
#else
    (void)peer, (void)alloc, (void)bytes;
    return p;  // a GPU build translates on the host before the launch
#endif
  }

  // Single copies (host only): the peer's input slice into our slot, our output slice into the
  // peer's recvbuff. A refusal or a dead peer fails the operation (nothing is published).
  BATON_HD bool copyFromPeer(char* slot, const T* remote, size_t cnt) {
#if !defined(__CUDA_ARCH__)
    if (copy_->read(copy_->self, recv_->peer, slot, reinterpret_cast<uintptr_t>(remote), cnt * sizeof(T))) return true;
    failPeerCopy(ctx_, recv_->peer, "peer's input (single copy, process_vm_readv)", cnt * sizeof(T));
#else
    (void)slot, (void)remote, (void)cnt;
    ctx_.failed = true;
#endif
    return false;
  }
  BATON_HD uint64_t copyToPeer(T* remote, const T* local, size_t cnt) {
#if !defined(__CUDA_ARCH__)
    if (copy_->write(copy_->self, send_->peer, reinterpret_cast<uintptr_t>(remote), local, cnt * sizeof(T)))
      return kSlotDelivered | (cnt * sizeof(T));
    failPeerCopy(ctx_, send_->peer, "recvbuff (single copy, process_vm_writev)", cnt * sizeof(T));
#else
    (void)remote, (void)local;
    ctx_.failed = true;
#endif
    return 0;
  }

  ExecCtx& ctx_;
  ConnDev* recv_;
  ConnDev* send_;
  Op op_;
  size_t sliceElems_;
  bool stream_ = true;     // CollArgs::streamStores (BATON_STREAM_STORES)
  bool streamed_ = false;  // this slice used streaming stores: fence before publishing
  T* peerDst_ = nullptr;
  const PeerAddressMap* map_;  // processes (lesson 09): peers' addresses need translating
  uint64_t sendAlloc_;         // our input's ncclMemAlloc allocation (0: peers cannot map it)
  const PeerCopy* copy_;       // processes: single copies allowed for buffers peers cannot map
  bool peerRemote_ = false;    // peerDst_ is an address in the next rank's process (single copies)
};

}  // namespace baton

// The execution model: everything device code in algorithms/ may use, and nothing more.
//
// Computes nothing itself. It defines, for both backends, the block's thread ids and barrier,
// acquire/release loads and stores of 64-bit flags, the system fence, the bounded wait and the copy
// loop. Introduced in lesson 01 (docs/lessons/01-naive-allreduce.md).
//
// Backends:
//   CPU (g++):  a "block" is one worker thread (tid 0 of 1); atomics are std::atomic_ref; waits spin
//               briefly, then yield, then sleep with backoff, so eight ranks on two cores progress.
//   CUDA (nvcc): a block is a CUDA block; atomics are cuda::atomic_ref at system scope; waits spin
//               with __nanosleep. Compiled in CI (build/obj/algorithms_device.o), not run here.
//
// Memory-ordering contract: a producer writes payload with plain stores, then publishes it with
// storeRelease() of a step counter; a consumer observes the counter with loadAcquire() and only then
// reads the payload. No other ordering is assumed anywhere in algorithms/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#include <cuda/atomic>
#else
#include <atomic>
#endif

#include "host_device.h"
#include "moves.h"

namespace baton {

// ---- atomics on 64-bit flag words ---------------------------------------------------------------
#if defined(__CUDACC__)  // both of nvcc's passes: cuda::atomic_ref works on host and device
using AtomicRef64 = cuda::atomic_ref<uint64_t, cuda::thread_scope_system>;
#define BATON_MO(x) cuda::std::memory_order_##x
#else
using AtomicRef64 = std::atomic_ref<uint64_t>;
#define BATON_MO(x) std::memory_order_##x
#endif

BATON_HD uint64_t loadAcquire(const uint64_t* p) {
  return AtomicRef64(*const_cast<uint64_t*>(p)).load(BATON_MO(acquire));
}
BATON_HD void storeRelease(uint64_t* p, uint64_t v) { AtomicRef64(*p).store(v, BATON_MO(release)); }

// ---- why a wait gave up -------------------------------------------------------------------------
// kWaitBadStep is not a wait: a connector's step holds no element (step_check.h, stepHoldsElement).
enum WaitResult : int {
  kWaitOk = 0,
  kWaitAborted = 1,
  kWaitTimeout = 2,
  kWaitPeerDead = 3,
  kWaitPeerFailed = 4,
  kWaitBadStep = 5
};

struct WaitFailure {
  int result = kWaitOk;  // WaitResult
  int rank = -1, peer = -1, channel = -1;
  const char* what = nullptr;  // which counter, e.g. "recv tail"
  uint64_t expected = 0, observed = 0;
  int cause = -1;  // kWaitPeerFailed: the rank whose failure stopped `peer`, if it said so
};

// What a stalled wait waits for, kept where a dump can read it (lesson 14's flight recorder). The
// wait writes it only once it has stalled (its give-up test runs, every kWaitCheckEvery pauses),
// refreshes `observed` and `lastNs` at each later test, and clears `state` when the wait ends well.
// After giving up it keeps the peer and step it waited for. CPU backend only: a dump reads it from
// another thread while the wait runs, so every word is a relaxed atomic (no ordering between them;
// a dump may see one word of the next wait, which is harmless for a diagnosis).
struct WaitNote {
  uint64_t state = 0;  // 0: not waiting, 1: waiting, 1 + WaitResult: gave up
  uint64_t peer = 0;   // peer + 1
  uint64_t what = 0;   // a string literal's address, e.g. "recv tail"
  uint64_t expected = 0, observed = 0;
  uint64_t sinceNs = 0, lastNs = 0;  // nowNs(): when the wait stalled, its last give-up test
};

// Per-block context handed to every algorithm. On the GPU it lives in shared memory, so `failed`
// (written by the thread that waits, read by all after a barrier) is one flag per block; thread
// ids then come from threadIdx/blockDim, not from these fields.
struct ExecCtx {
  int tid = 0;       // CPU backend only: use threadId(ctx)
  int nthreads = 1;  // CPU backend only: use threadCount(ctx)
  int rank = 0;
  int channel = 0;
  const volatile int* abortFlag = nullptr;  // set by ncclCommAbort / a failing peer
  uint64_t timeoutNs = 0;                   // 0: wait forever (still honours abortFlag)
  int jitter = 0;                           // CPU only: random short sleeps before flag stores
  uint32_t jitterState = 1;
  bool trace = false;                             // CPU only: record each FIFO step in the BATON_TRACE timeline
  const int32_t* peerPids = nullptr;              // CPU only: a same-host process peer's pid per rank (0: not watched)
  const uint64_t* watch[2] = {nullptr, nullptr};  // CPU only: the ring FIFOs' abortedBy words of this channel
  WaitNote* note = nullptr;                       // CPU only: this channel's note (lesson 14), or none
  // CPU only: run while a wait spins (the proxy's assist: the rank moves its own NET steps, proxy.h).
  void (*assist)(void*) = nullptr;
  void* assistArg = nullptr;
  bool failed = false;  // a wait gave up: the rest of the work drains as no-ops
  WaitFailure failure;
};

// The abort flag is an int the host sets with an atomic store; read it atomically too.
BATON_HD bool abortRequested(const volatile int* flag) {
  if (!flag) return false;
#if defined(__CUDA_ARCH__)
  return *flag != 0;
#else
  return __atomic_load_n(const_cast<const int*>(flag), __ATOMIC_ACQUIRE) != 0;
#endif
}

#if !defined(__CUDA_ARCH__)
// The host's side of an int flag that other threads (or a GPU's kernels, through pinned memory)
// read: an abort flag raised or cleared, a failure record's `failed` word. A release store, so what
// the host wrote before it is visible to whoever sees the flag; read with abortRequested or
// flagIsSet (an acquire load).
inline void storeFlag(int* flag, int value) { __atomic_store_n(flag, value, __ATOMIC_RELEASE); }
inline bool flagIsSet(const int* flag) { return __atomic_load_n(flag, __ATOMIC_ACQUIRE) != 0; }
#endif

// ---- block-level primitives ---------------------------------------------------------------------
#if defined(__CUDA_ARCH__)
__device__ __forceinline__ void blockBarrier() { __syncthreads(); }
__device__ __forceinline__ int threadId(const ExecCtx&) { return threadIdx.x; }
__device__ __forceinline__ int threadCount(const ExecCtx&) { return blockDim.x; }
#else
inline void blockBarrier() {}
inline int threadId(const ExecCtx& ctx) { return ctx.tid; }
inline int threadCount(const ExecCtx& ctx) { return ctx.nthreads; }
#endif

// Host-side helpers live in exec_model_host.cc; declared here so algorithms can call them.
#if !defined(__CUDA_ARCH__)
uint64_t nowNs();
void waitBackoff(uint32_t& iteration);  // spin, then yield, then sleep with backoff
void setWaitSpin(uint32_t pauses);      // how long the spin phase is (fewer when oversubscribed)
void jitterSleep(ExecCtx& ctx);
bool processAlive(int pid);  // false only when `pid` is certainly gone (kill(pid, 0): ESRCH)
// BATON_TRACE: one span per FIFO step of a primitive (src/misc/trace.cc), from startNs to now.
void traceStep(const ExecCtx& ctx, const char* primitive, const char* proto, uint64_t step, uint64_t bytes,
               uint64_t startNs);
#endif

// Names a primitive by what it does (for the trace): send, recvReduceCopySend, ...
template <Moves M>
constexpr const char* primitiveName() {
  if (!M.recv) return M.dst ? "copySend" : "send";
  if (!M.send) return M.src ? "recvReduceCopy" : "recv";
  if (!M.src) return "recvCopySend";
  return M.dst ? "recvReduceCopySend" : "recvReduceSend";
}

// Traces one step when the timeline is on: start with traceStart(), end with traceEnd().
BATON_HD uint64_t traceStart(const ExecCtx& ctx) {
#if !defined(__CUDA_ARCH__)
  return ctx.trace ? nowNs() : 0;
#else
  (void)ctx;
  return 0;
#endif
}
template <Moves M>
BATON_HD void traceEnd(const ExecCtx& ctx, const char* proto, uint64_t step, uint64_t bytes, uint64_t startNs) {
#if !defined(__CUDA_ARCH__)
  if (ctx.trace && threadId(ctx) == 0) traceStep(ctx, primitiveName<M>(), proto, step, bytes, startNs);
#else
  (void)ctx, (void)proto, (void)step, (void)bytes, (void)startNs;
#endif
}

// The clock a bounded wait measures its timeout with: globaltimer on the GPU, CLOCK_MONOTONIC here.
BATON_HD uint64_t waitClockNs() {
#if defined(__CUDA_ARCH__)
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#else
  return nowNs();
#endif
}

// One pause of a wait loop, and how often (in pauses) it looks at the abort flag and the clock.
#if defined(__CUDA_ARCH__)
__device__ __forceinline__ void waitPause(uint32_t& it) { __nanosleep(64), ++it; }
constexpr uint32_t kWaitCheckEvery = 10000;  // NCCL_SPINS_BEFORE_CHECK_ABORT
#else
inline void waitPause(uint32_t& it) { waitBackoff(it); }
constexpr uint32_t kWaitCheckEvery = 64;  // each pause may already be a sleep
#endif

#if !defined(__CUDA_ARCH__)
inline void noteStore(uint64_t& w, uint64_t v) { AtomicRef64(w).store(v, BATON_MO(relaxed)); }
#endif

// One turn of a wait loop: on the CPU, first lend the proxy a hand (its assist hook, if any), then pause.
BATON_HD void waitTurn(ExecCtx& ctx, uint32_t& it) {
#if !defined(__CUDA_ARCH__)
  if (ctx.assist) ctx.assist(ctx.assistArg);
#else
  (void)ctx;
#endif
  waitPause(it);
}

// A wait that stalled (its give-up test ran: `start` was set) ended well: clear the channel's note.
BATON_HD void waitResumed(ExecCtx& ctx, uint64_t start) {
#if !defined(__CUDA_ARCH__)
  if (start && ctx.note) noteStore(ctx.note->state, 0);
#else
  (void)ctx, (void)start;
#endif
}

// The give-up test of every wait, run every kWaitCheckEvery pauses: the abort flag, no progress
// for ctx.timeoutNs since `start` (0: starts the clock now), or (CPU) a same-host peer process
// that no longer exists, looked at once a wait has lasted 50 ms, or a ring neighbour whose
// communicator failed and said so in a shared FIFO (lesson 10). On giving up it
// records who waited for what, expected and observed, in ctx.failure, and returns true.
BATON_HD bool waitGiveUp(ExecCtx& ctx, uint64_t& start, int peer, const char* what, uint64_t expected,
                         uint64_t observed) {
  int reason = kWaitOk, cause = -1;
  if (abortRequested(ctx.abortFlag)) reason = kWaitAborted;
  const uint64_t t = waitClockNs();
#if !defined(__CUDA_ARCH__)
  if (ctx.note) {  // the flight recorder's view of this wait (WaitNote)
    WaitNote& n = *ctx.note;
    if (start == 0) {
      noteStore(n.peer, (uint64_t)(peer + 1));
      noteStore(n.what, (uint64_t)(uintptr_t)what);
      noteStore(n.expected, expected);
      noteStore(n.sinceNs, t);
      noteStore(n.state, 1);
    }
    noteStore(n.observed, observed);
    noteStore(n.lastNs, t);
  }
#endif
  if (start == 0) start = t;
  if (reason == kWaitOk && ctx.timeoutNs && t - start > ctx.timeoutNs) reason = kWaitTimeout;
#if !defined(__CUDA_ARCH__)
  if (reason == kWaitOk && ctx.peerPids && peer >= 0 && ctx.peerPids[peer] > 0 && t - start > 50000000ull &&
      !processAlive(ctx.peerPids[peer]))
    reason = kWaitPeerDead;
  for (int i = 0; i < 2; ++i) {
    const uint64_t by = ctx.watch[i] ? loadAcquire(ctx.watch[i]) : 0;
    // Of both neighbours' announcements, the one that names a cause is the news.
    if (by && (reason == kWaitOk || (reason == kWaitPeerFailed && cause < 0 && (by >> 32) != 0)))
      reason = kWaitPeerFailed, peer = (int)(by & 0xffffffffu) - 1, cause = (int)(by >> 32) - 1;
  }
#endif
  if (reason == kWaitOk) return false;
#if !defined(__CUDA_ARCH__)
  if (ctx.note) noteStore(ctx.note->state, 1 + (uint64_t)reason);
#endif
  ctx.failed = true;
  ctx.failure = {reason, ctx.rank, peer, ctx.channel, what, expected, observed, cause};
  return true;
}

// Wait until `*word >= target` (a monotonically increasing step counter), the abort flag is set, or
// the timeout passes. On failure records who/what/expected/observed in ctx.failure and returns false.
BATON_HD bool waitAtLeast(ExecCtx& ctx, const uint64_t* word, uint64_t target, int peer, const char* what) {
  if (ctx.failed) return false;
  uint64_t v = loadAcquire(word);
  uint32_t it = 0;
  uint64_t start = 0;
  while (v < target) {
    waitTurn(ctx, it);
    v = loadAcquire(word);
    if (v < target && it % kWaitCheckEvery == 0 && waitGiveUp(ctx, start, peer, what, target, v)) return false;
  }
  waitResumed(ctx, start);
  return true;
}

// Publish a step counter. On the CPU the jitter mode sleeps first, so a consumer that reads payload
// before the flag (a missing acquire) sees stale data in tests instead of passing by luck.
BATON_HD void publish(ExecCtx& ctx, uint64_t* word, uint64_t value) {
#if !defined(__CUDA_ARCH__)
  if (ctx.jitter) jitterSleep(ctx);
#else
  (void)ctx;
#endif
  storeRelease(word, value);
}

// Byte copy split across the block's threads: 16-byte loads and stores when both ends are aligned
// (slots are; user buffers usually are), bytes otherwise.
BATON_HD void copyBytes(const ExecCtx& ctx, void* dst, const void* src, size_t bytes) {
#if defined(__CUDA_ARCH__)
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  const size_t tid = threadId(ctx), nt = threadCount(ctx);
  size_t done = 0;
  if (((reinterpret_cast<uintptr_t>(d) | reinterpret_cast<uintptr_t>(s)) & 15) == 0) {
    const size_t n16 = bytes / 16;
    for (size_t i = tid; i < n16; i += nt) reinterpret_cast<uint4*>(d)[i] = reinterpret_cast<const uint4*>(s)[i];
    done = n16 * 16;
  }
  for (size_t i = done + tid; i < bytes; i += nt) d[i] = s[i];
#else
  (void)ctx;
  if (bytes && dst != src) std::memcpy(dst, src, bytes);
#endif
}

BATON_HD size_t divUp(size_t a, size_t b) { return (a + b - 1) / b; }
BATON_HD size_t alignUp(size_t a, size_t b) { return divUp(a, b) * b; }
BATON_HD size_t minSize(size_t a, size_t b) { return a < b ? a : b; }

}  // namespace baton

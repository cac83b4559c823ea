/* baton's device-side communication API, a public extra in the shape of NCCL 2.28's device API
 * (ncclDevComm, LSA teams, window peer pointers, barriers, signals, put-with-signal): what a kernel
 * of your own uses to read and write its peers' memory and to synchronise with them while it
 * computes. Lesson: docs/lessons/11-async-tensor-parallelism.md; example: examples/11-device-api.
 *
 * Computes nothing itself. Host side (C): batonDevCommCreate / batonDevCommDestroy, collective over
 * a communicator, and batonDevWindowGet for a window's peer pointers. Device side (C++, inline):
 * batonLsaPointer, batonSignalAdd / batonWaitSignal / batonReadSignal, batonLsaBarrier and
 * batonPutSignal, compiled by the host compiler for code running on CPU threads and by nvcc for
 * CUDA kernels.
 *
 * Teams: the world (every rank of the communicator) and the LSA team ("load/store accessible": the
 * ranks whose memory this rank maps: the ranks of its host). Loads, stores, signal adds and barriers
 * work inside the LSA team; batonPutSignal reaches every rank of the world: a rank of another host
 * through its proxy thread and the NET back-end (device communicators created with reqs->netPuts;
 * from a CPU thread only: a CUDA kernel cannot call the network, as with NCCL's proxy). Every rank
 * passes the same requirements.
 *
 * Memory-ordering contract: batonSignalAdd(c, peer, s, v) is a release fetch-add on signal s of
 * LSA rank peer: every store the calling thread made before it (into the peer's window too) is
 * visible to a thread whose batonWaitSignal (an acquire load) sees the sum. batonPutSignal's bytes
 * are in the peer's window before its add (on another host the peer's proxy receives the bytes in
 * place, then makes the release add), and one rank's puts to one peer are applied in order. batonLsaBarrier's arrive
 * is a release store of the barrier's epoch into this rank's slot in every LSA peer's pad, and its
 * wait acquire-loads every peer's slot in its own pad, so when it returns every store a team member
 * made before its arrive is visible. One thread per rank calls a barrier (on a GPU: one thread of
 * the block, then a block barrier). Waits give up (returning false) when the communicator is
 * aborted or BATON_WAIT_TIMEOUT passes. */
#ifndef BATON_DEVICE_H
#define BATON_DEVICE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "nccl.h"

#define BATON_DEV_MAX_LSA 64 /* ranks per host this API serves */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  int signalCount;  /* signals per rank (counters peers add to) */
  int barrierCount; /* independent LSA barriers (e.g. one per concurrently synchronising block) */
  int netPuts;      /* 1: connect to the ranks of other hosts for batonPutSignal (0: LSA team only) */
} batonDevCommRequirements;

typedef struct {
  int rank, nRanks;                    /* world team */
  int lsaRank, lsaSize;                /* LSA team: this rank's index and the team's size */
  int lsaWorldRank[BATON_DEV_MAX_LSA]; /* LSA index -> world rank */
  uint64_t* lsaPad[BATON_DEV_MAX_LSA]; /* LSA index -> that rank's signals and barrier slots, mapped here */
  int signalCount, barrierCount;
  const volatile int* abortFlag; /* the communicator's: set by ncclCommAbort or a failed peer */
  uint64_t timeoutNs;            /* BATON_WAIT_TIMEOUT (0: none) */
  void* internal;                /* baton's bookkeeping */
} batonDevComm;

typedef struct {
  char* lsaBase[BATON_DEV_MAX_LSA]; /* LSA index -> that rank's window, mapped here */
  size_t size;                      /* this rank's window size (a symmetric window's, every rank's) */
  uint64_t serial;                  /* which of the communicator's windows, the same on every rank */
} batonDevWindow;

/* Collective over comm's ranks: allocates every rank's pad (ncclMemAlloc, a symmetric window) and
 * maps the LSA peers'; with reqs->netPuts, connects to the ranks of other hosts. Signals start at
 * 0. reqs may be NULL (1 signal, 1 barrier, no puts across hosts). */
ncclResult_t batonDevCommCreate(ncclComm_t comm, const batonDevCommRequirements* reqs, batonDevComm* devComm);
/* Collective: waits until every rank is done with the pads and every put sent to this rank is
 * applied, then frees them. */
ncclResult_t batonDevCommDestroy(ncclComm_t comm, batonDevComm* devComm);
/* The window's base on every LSA rank of devComm, mapped here (ncclInvalidArgument if one is not
 * reachable: a window of plain memory between processes). */
ncclResult_t batonDevWindowGet(const batonDevComm* devComm, ncclWindow_t win, batonDevWindow* out);
/* batonPutSignal's host side, for a peer of another host (and for arguments the inline path
 * refuses, so the error names them): checks, sends, returns once src may be reused. */
ncclResult_t batonDevPutSignalHost(const batonDevComm* devComm, const batonDevWindow* win, int peer, size_t offset,
                                   const void* src, size_t bytes, int signal);

#ifdef __cplusplus
}
#endif

/* ---- device side -------------------------------------------------------------------------------- */
#ifdef __cplusplus

#include <chrono> /* the host's waits (nvcc's host pass included) */
#include <thread>
#ifdef __CUDACC__
#include <cuda/atomic>
#define BATON_DEV_FN __host__ __device__ __forceinline__
#else
#include <atomic>
#define BATON_DEV_FN inline
#endif

namespace baton_dev {

#ifdef __CUDACC__
using Atomic64 = cuda::atomic_ref<uint64_t, cuda::thread_scope_system>;
#define BATON_DEV_MO(x) cuda::std::memory_order_##x
#else
using Atomic64 = std::atomic_ref<uint64_t>;
#define BATON_DEV_MO(x) std::memory_order_##x
#endif

/* The pad's layout: one 128-byte line per word, so no two ranks' words share a cache line. */
constexpr int kWordsPerLine = 16;
BATON_DEV_FN uint64_t* signalWord(const batonDevComm& c, int lsa, int signal) {
  return c.lsaPad[lsa] + (size_t)signal * kWordsPerLine;
}
/* Barrier b's slot for world rank `from` (written by `from`), then b's own epoch counter. */
BATON_DEV_FN uint64_t* barrierSlot(const batonDevComm& c, int lsa, int b, int from) {
  return c.lsaPad[lsa] + ((size_t)c.signalCount + (size_t)b * c.nRanks + from) * kWordsPerLine;
}
BATON_DEV_FN uint64_t* barrierEpoch(const batonDevComm& c, int b) {
  return c.lsaPad[c.lsaRank] + ((size_t)c.signalCount + (size_t)c.barrierCount * c.nRanks + b) * kWordsPerLine;
}

BATON_DEV_FN bool aborted(const batonDevComm& c) {
  if (!c.abortFlag) return false;
#ifdef __CUDA_ARCH__
  return *c.abortFlag != 0;
#else
  return __atomic_load_n(const_cast<const int*>(c.abortFlag), __ATOMIC_ACQUIRE) != 0;
#endif
}

/* Waits until *word >= target: spins, then yields, then sleeps with backoff (CPU: many ranks may
 * share few cores), giving up on abort or timeout. */
BATON_DEV_FN bool waitAtLeast(const batonDevComm& c, const uint64_t* word, uint64_t target) {
  Atomic64 a(*const_cast<uint64_t*>(word));
#ifdef __CUDA_ARCH__
  uint64_t start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  for (;;) {
    if (a.load(BATON_DEV_MO(acquire)) >= target) return true;
    if (aborted(c)) return false;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (c.timeoutNs && now - start > c.timeoutNs) return false;
    __nanosleep(100);
  }
#else
  const auto start = std::chrono::steady_clock::now();
  for (unsigned spin = 0;; ++spin) {
    if (a.load(BATON_DEV_MO(acquire)) >= target) return true;
    if (spin < 256) continue;
    if (aborted(c)) return false;
    if (c.timeoutNs &&
        (uint64_t)std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
                .count() > c.timeoutNs)
      return false;
    if (spin < 1024) std::this_thread::yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(spin < 4096 ? 1 : 50));
  }
#endif
}

}  // namespace baton_dev

/* Where offset `offset` of LSA rank lsaPeer's window is, in this rank's address space. */
BATON_DEV_FN void* batonLsaPointer(const batonDevWindow& w, size_t offset, int lsaPeer) {
  return w.lsaBase[lsaPeer] + offset;
}

/* Adds `value` to signal `signal` of LSA rank lsaPeer (release: this thread's earlier stores go first). */
BATON_DEV_FN void batonSignalAdd(const batonDevComm& c, int lsaPeer, int signal, uint64_t value) {
  baton_dev::Atomic64(*baton_dev::signalWord(c, lsaPeer, signal)).fetch_add(value, BATON_DEV_MO(release));
}

/* This rank's signal `signal` now (acquire). */
BATON_DEV_FN uint64_t batonReadSignal(const batonDevComm& c, int signal) {
  return baton_dev::Atomic64(*baton_dev::signalWord(c, c.lsaRank, signal)).load(BATON_DEV_MO(acquire));
}

/* Waits until this rank's signal `signal` reaches atLeast (signals only grow: a caller counts what it
 * expects since batonDevCommCreate). False: aborted or timed out. */
BATON_DEV_FN bool batonWaitSignal(const batonDevComm& c, int signal, uint64_t atLeast) {
  return baton_dev::waitAtLeast(c, baton_dev::signalWord(c, c.lsaRank, signal), atLeast);
}

/* Copies `bytes` bytes from src to offset `offset` of world rank peer's window w, then adds 1 to
 * the peer's signal `signal`, in that order. A peer of this host: stores and a release add. A peer
 * of another host: through the NET back-end to its proxy (host code only). False on an error
 * (ncclGetLastError names it) or, in a CUDA kernel, for a peer of another host. */
BATON_DEV_FN bool batonPutSignal(const batonDevComm& c, const batonDevWindow& w, int peer, size_t offset,
                                 const void* src, size_t bytes, int signal) {
  const bool valid =
      offset <= w.size && bytes <= w.size - offset && signal >= 0 && signal < c.signalCount && (src || bytes == 0);
  for (int l = 0; valid && l < c.lsaSize; ++l)
    if (c.lsaWorldRank[l] == peer) {
      memcpy(w.lsaBase[l] + offset, src, bytes);
      batonSignalAdd(c, l, signal, 1);
      return true;
    }
#ifdef __CUDA_ARCH__
  return false;
#else
  return batonDevPutSignalHost(&c, &w, peer, offset, src, bytes, signal) == ncclSuccess;
#endif
}

/* Barrier `barrier` over the LSA team (one thread per rank). False: aborted or timed out. */
BATON_DEV_FN bool batonLsaBarrier(const batonDevComm& c, int barrier) {
  uint64_t* mine = baton_dev::barrierEpoch(c, barrier);  // only this rank touches it
  const uint64_t epoch = ++*mine;
  for (int p = 0; p < c.lsaSize; ++p)
    baton_dev::Atomic64(*baton_dev::barrierSlot(c, p, barrier, c.rank)).store(epoch, BATON_DEV_MO(release));
  for (int p = 0; p < c.lsaSize; ++p)
    if (p != c.lsaRank &&
        !baton_dev::waitAtLeast(c, baton_dev::barrierSlot(c, c.lsaRank, barrier, c.lsaWorldRank[p]), epoch))
      return false;
  return true;
}

#endif /* __cplusplus */
#endif

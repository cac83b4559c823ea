// baton-latency --breakdown (issue 45): where an 8-byte AllReduce between 2 ranks of one host spends
// its time, each piece timed alone in the same run with the latency table's sampling
// (latency_table.h: warm-up, then samples of `iters` calls, the median sample of rank 0):
//   line-handoff       one cache line from one rank's core to the other's: a release store into
//                      the peer's symmetric window, seen by the peer's acquire load (a ping-pong
//                      through batonLsaPointer, halved): the floor of any shared-memory AllReduce
//   call-without-peer  the same ncclAllReduce on a 1-rank communicator (ncclCommSplit by rank):
//                      argument checks, planning, the kernel and completion, with nobody to wait for
//   rest               the whole call minus both: the second hand-off (the slot going back), the
//                      fold, and how late a spinning wait notices a line
// Pieces are timed by the clock: this VM exposes no hardware counters (`perf stat -e cycles` reads
// "not supported"), so cycle counts per piece are not available here.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "baton/device.h"
#include "latency_table.h"
#include "nccl.h"

// The median of sampleCalls (latency_table.h).
template <class Once, class Barrier>
double medianCallUs(const LatencyOptions& o, double per, Once once, Barrier barrier, bool* ok) {
  const std::vector<double> us = sampleCalls(o, per, once, barrier, ok);
  return us.empty() ? 0 : us[us.size() / 2];
}

// Needs exactly 2 ranks, both on this host (their windows mapped into each other). Returns 0, or 1
// after printing what failed.
inline int runLatencyBreakdown(ncclComm_t comm, const LatencyOptions& o) {
  int me = 0, n = 0;
  ncclCommUserRank(comm, &me);
  ncclCommCount(comm, &n);
  auto fail = [&](const char* what) {
    std::fprintf(stderr, "baton-latency --breakdown: %s: %s\n", what, ncclGetLastError(comm));
    return 1;
  };
  if (n != 2) {
    std::fprintf(stderr, "baton-latency --breakdown: needs 2 ranks (%d here)\n", n);
    return 1;
  }
  static float flag = 0;
  auto barrier = [&] { ncclAllReduce(&flag, &flag, 1, ncclFloat32, ncclSum, comm, nullptr); };
  float in[2] = {float(me + 1), 1}, out[2] = {};
  bool ok = true;

  // The whole call, then the same call with nobody to wait for.
  auto allreduce = [&](ncclComm_t c) {
    return ncclAllReduce(in, out, 2, ncclFloat32, ncclSum, c, nullptr) == ncclSuccess;
  };
  const double whole = medianCallUs(
      o, 1, [&] { return allreduce(comm); }, barrier, &ok);
  if (!ok || out[0] != 3 || out[1] != 2) return fail("ncclAllReduce (or its result)");
  ncclComm_t solo = nullptr;
  if (ncclCommSplit(comm, me, 0, &solo, nullptr) != ncclSuccess) return fail("ncclCommSplit");
  const double alone = medianCallUs(
      o, 1, [&] { return allreduce(solo); }, barrier, &ok);
  ncclCommDestroy(solo);
  if (!ok || out[0] != float(me + 1)) return fail("ncclAllReduce on a 1-rank communicator");

  // One cache line each way through the symmetric windows.
  const size_t span = NCCL_WIN_REQUIRED_ALIGNMENT;
  void* mem = nullptr;
  ncclWindow_t win = nullptr;
  batonDevComm dev{};
  batonDevWindow w{};
  const batonDevCommRequirements reqs{1, 1, 0};
  if (ncclMemAlloc(&mem, span) != ncclSuccess ||
      ncclCommWindowRegister(comm, mem, span, &win, NCCL_WIN_COLL_SYMMETRIC) ||
      batonDevCommCreate(comm, &reqs, &dev) != ncclSuccess)
    return fail("a symmetric window for the hand-off");
  if (dev.lsaSize != 2 || batonDevWindowGet(&dev, win, &w) != ncclSuccess)
    return fail("the hand-off needs both ranks on this host");
  auto* mine = reinterpret_cast<uint64_t*>(batonLsaPointer(w, 0, dev.lsaRank));
  auto* theirs = reinterpret_cast<uint64_t*>(batonLsaPointer(w, 0, 1 - dev.lsaRank));
  std::atomic_ref<uint64_t>(*mine).store(0);
  barrier();
  uint64_t count = 0;
  auto wait = [&](uint64_t v) {
    const auto start = std::chrono::steady_clock::now();
    while (std::atomic_ref<uint64_t>(*mine).load(std::memory_order_acquire) < v)
      if (std::chrono::steady_clock::now() - start > std::chrono::seconds(5)) return false;  // the peer is gone
    return true;
  };
  auto pingPong = [&] {
    ++count;
    if (me == 0) std::atomic_ref<uint64_t>(*theirs).store(count, std::memory_order_release);
    if (!wait(count)) return false;
    if (me == 1) std::atomic_ref<uint64_t>(*theirs).store(count, std::memory_order_release);
    return true;
  };
  const double handoff = medianCallUs(o, 2, pingPong, barrier, &ok);
  batonDevCommDestroy(comm, &dev);
  ncclCommWindowDeregister(comm, win);
  ncclMemFree(mem);
  if (!ok) return fail("the hand-off ping-pong timed out");

  if (me == 0) {
    std::printf("# 8 B AllReduce, 2 ranks: where the time goes (us, medians of %d samples of %d calls)\n", o.samples,
                o.iters);
    std::printf("breakdown allreduce         %.3f\n", whole);
    std::printf("breakdown line-handoff      %.3f\n", handoff);
    std::printf("breakdown call-without-peer %.3f\n", alone);
    std::printf("breakdown rest              %.3f\n", whole - handoff - alone);
  }
  std::fflush(stdout);
  return 0;
}

// Which algorithm body runs one channel's part of a collective: the one (collective, algorithm) ->
// body table. Every backend runs collectives through it: the CPU kernels (src/cpu_kernels/), the
// CUDA kernels (src/cuda/coll_kernels.cuh), the simulator's schedule (src/sim/schedule.cc, with
// recording primitives) and nvcc's compile check (device_check.cu), so a new algorithm, or a check
// every body needs (the step check, step_check.h), is added here once.
//
// Computes: nothing itself; it calls the body for a.func and a.algo (and, for the ring on Simple
// between ranks that reach each other's buffers, the direct-path body). What differs by backend is
// a policy, Paths: which bodies its kernels hold, and how wide a symmetric fold's tile is.
// Introduced when the stages of lessons 01-07 had grown three copies of this switch.
// Memory-ordering contract: none here; each body's file states its own.
#pragma once

#include "coll_args.h"
#include "naive_allreduce.h"
#include "oneshot_allreduce.h"
#include "reduce_ops.h"
#include "ring_allgather.h"
#include "ring_allgather_direct.h"
#include "ring_allreduce.h"
#include "ring_allreduce_direct.h"
#include "ring_broadcast.h"
#include "ring_broadcast_direct.h"
#include "ring_reduce.h"
#include "ring_reduce_direct.h"
#include "ring_reduce_scatter.h"
#include "ring_reduce_scatter_direct.h"
#include "step_check.h"
#include "symmetric.h"
#include "tree_allreduce.h"

namespace baton {

// A backend's kernels. The CPU's hold every body and fold symmetric tiles of 8 KiB on a worker's
// stack; the GPU's leave out the bodies only the CPU planner picks (naive, one-shot over the direct
// connectors, direct rings: it never gives them device buffers), which keeps ptxas time and the
// kernels' registers down, and fold one 16-byte vector per thread.
struct CpuPaths {
  static constexpr bool kHostOnly = true;
  static constexpr size_t kSymTileBytes = 8192;
};
struct GpuPaths {
  static constexpr bool kHostOnly = false;
  static constexpr size_t kSymTileBytes = 16;
};

// Whether the Simple ring takes its direct-path body (ring_direct.h): ranks that reach each
// other's buffers (the planner sets a.direct).
template <typename P>
BATON_HD bool takesDirect(const CollArgs& a) {
  return P::id == kProtoSimple && a.direct && a.ring.nRanks > 1;
}

// The ring and tree bodies of AllReduce, Reduce and ReduceScatter on elements of T with operator
// `op`, in protocol P (the simulator calls this with its recording protocols).
template <typename T, typename P, typename Op, typename Paths = CpuPaths>
BATON_HD void runReducingColl(ExecCtx& ctx, const CollArgs& a, const Op& op) {
  if (!blockStepsUsable<T, P>(ctx, a)) return;
  if constexpr (Paths::kHostOnly) {
    if (a.algo != kAlgoTree && takesDirect<P>(a)) {
      if (a.func == kFuncAllReduce) runRingAllReduceDirect<T>(ctx, a, op);
      else if (a.func == kFuncReduce) runRingReduceDirect<T>(ctx, a, op);
      else if (a.func == kFuncReduceScatter) runRingReduceScatterDirect<T>(ctx, a, op);
      return;
    }
  }
  switch (a.func) {
    case kFuncAllReduce:
      if (a.algo == kAlgoTree) runTreeAllReduce<T, P>(ctx, a, op);
      else runRingAllReduce<T, P>(ctx, a, op);
      break;
    case kFuncReduce: runRingReduce<T, P>(ctx, a, op); break;
    case kFuncReduceScatter: runRingReduceScatter<T, P>(ctx, a, op); break;
    default: break;
  }
}

// AllReduce, Reduce and ReduceScatter: what a kernel of either backend runs. The bodies that use no
// FIFO protocol (naive and one-shot, which pick their own; the symmetric ones) come first, so the
// three protocols' instances below share one copy of them.
template <typename T, typename Op, typename Paths = CpuPaths>
BATON_HD void runReducing(ExecCtx& ctx, const CollArgs& a, const Op& op) {
  constexpr size_t kTile = Paths::kSymTileBytes;
  if constexpr (Paths::kHostOnly) {
    if (a.func == kFuncAllReduce && a.algo == kAlgoNaive) return runNaiveAllReduce<T>(ctx, a, op);
    if (a.func == kFuncAllReduce && a.algo == kAlgoOneShot)
      return a.proto == kProtoSimple ? runOneShotAllReduceSimple<T>(ctx, a, op) : runOneShotAllReduce<T>(ctx, a, op);
  }
  if (a.func == kFuncAllReduce && a.algo == kAlgoSymOneShot) return runSymAllReduceOneShot<T, kTile>(ctx, a, op);
  if (a.func == kFuncAllReduce && a.algo == kAlgoSymTwoShot) return runSymAllReduceTwoShot<T, kTile>(ctx, a, op);
  if (a.func == kFuncReduceScatter && a.algo == kAlgoSymLoad) return runSymReduceScatter<T, kTile>(ctx, a, op);
  withProto(a.proto, [&](auto proto) { runReducingColl<T, decltype(proto), Op, Paths>(ctx, a, op); });
}

// The ring bodies of AllGather and Broadcast, in protocol P: they only move data, so they run on
// bytes whatever the datatype.
template <typename P, typename Paths = CpuPaths>
BATON_HD void runMovingColl(ExecCtx& ctx, const CollArgs& a) {
  const OpSum<uint8_t> none{};
  if (!blockStepsUsable<uint8_t, P>(ctx, a)) return;
  if constexpr (Paths::kHostOnly) {
    if (takesDirect<P>(a)) {
      if (a.func == kFuncAllGather) runRingAllGatherDirect<uint8_t>(ctx, a, none);
      else runRingBroadcastDirect<uint8_t>(ctx, a, none);
      return;
    }
  }
  if (a.func == kFuncAllGather) runRingAllGather<uint8_t, P>(ctx, a, none);
  else runRingBroadcast<uint8_t, P>(ctx, a, none);
}

// AllGather and Broadcast: what a kernel of either backend runs. Stores into windows first
// (AllGather, and the CUDA backend's AlltoAll, which its launch calls an AllGather).
template <typename Paths = CpuPaths>
BATON_HD void runMoving(ExecCtx& ctx, const CollArgs& a) {
  if (a.func == kFuncAllGather && (a.algo == kAlgoSymStore || a.algo == kAlgoSymAlltoAll))
    return runSymAllGather(ctx, a);
  withProto(a.proto, [&](auto proto) { runMovingColl<decltype(proto), Paths>(ctx, a); });
}

}  // namespace baton

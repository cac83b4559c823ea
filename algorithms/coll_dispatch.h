// Which algorithm body runs one channel's part of a collective: the one (collective, algorithm) ->
// body table. The CPU kernels (src/cpu_kernels/), the simulator's schedule (src/sim/schedule.cc,
// with recording primitives) and the CUDA build (device_check.cu) all run collectives through it,
// so a new algorithm is added here once.
//
// Computes: nothing itself; it calls the body for a.func and a.algo (and, for Ring AllReduce on
// Simple between threads of one process, the direct-path body). Introduced when the stages of
// lessons 01-07 had grown three copies of this switch.
// Memory-ordering contract: none here; each body's file states its own.
#pragma once

#include "coll_args.h"
#include "naive_allreduce.h"
#include "oneshot_allreduce.h"
#include "reduce_ops.h"
#include "ring_allgather.h"
#include "ring_allreduce.h"
#include "ring_broadcast.h"
#include "ring_allgather_direct.h"
#include "ring_allreduce_direct.h"
#include "ring_broadcast_direct.h"
#include "ring_reduce_direct.h"
#include "ring_reduce_scatter_direct.h"
#include "ring_reduce.h"
#include "ring_reduce_scatter.h"
#include "step_check.h"
#include "symmetric.h"
#include "tree_allreduce.h"

namespace baton {

// AllReduce, Reduce and ReduceScatter on elements of T with operator `op`, in protocol P.
template <typename T, typename P, typename Op>
BATON_HD void runReducingColl(ExecCtx& ctx, const CollArgs& a, const Op& op) {
  switch (a.func) {
    case kFuncAllReduce:
      if (a.algo == kAlgoNaive) runNaiveAllReduce<T>(ctx, a, op);
      else if (a.algo == kAlgoOneShot) runOneShotAllReduce<T>(ctx, a, op);
      else if (a.algo == kAlgoSymOneShot) runSymAllReduceOneShot<T>(ctx, a, op);
      else if (a.algo == kAlgoSymTwoShot) runSymAllReduceTwoShot<T>(ctx, a, op);
      else if (a.algo == kAlgoTree) {
        if (treeStepsUsable<T, P>(ctx, a)) runTreeAllReduce<T, P>(ctx, a, op);
      } else if (!ringStepsUsable<T, P>(ctx, a)) break;
      else if (P::id == kProtoSimple && a.direct && a.ring.nRanks > 1) runRingAllReduceDirect<T>(ctx, a, op);
      else runRingAllReduce<T, P>(ctx, a, op);
      break;
    case kFuncReduce:
      if (!ringStepsUsable<T, P>(ctx, a)) break;
      if (P::id == kProtoSimple && a.direct && a.ring.nRanks > 1) runRingReduceDirect<T>(ctx, a, op);
      else runRingReduce<T, P>(ctx, a, op);
      break;
    case kFuncReduceScatter:
      if (a.algo == kAlgoSymLoad) runSymReduceScatter<T>(ctx, a, op);
      else if (!ringStepsUsable<T, P>(ctx, a)) break;
      else if (P::id == kProtoSimple && a.direct && a.ring.nRanks > 1) runRingReduceScatterDirect<T>(ctx, a, op);
      else runRingReduceScatter<T, P>(ctx, a, op);
      break;
    default: break;
  }
}

// AllGather and Broadcast: they only move data, so they run on bytes whatever the datatype.
template <typename P>
BATON_HD void runMovingColl(ExecCtx& ctx, const CollArgs& a) {
  const OpSum<uint8_t> none{};
  if (a.func == kFuncAllGather && a.algo == kAlgoSymStore) runSymAllGather(ctx, a);
  else if (!ringStepsUsable<uint8_t, P>(ctx, a)) return;
  else if (a.func == kFuncAllGather && P::id == kProtoSimple && a.direct && a.ring.nRanks > 1)
    runRingAllGatherDirect<uint8_t>(ctx, a, none);
  else if (a.func == kFuncAllGather) runRingAllGather<uint8_t, P>(ctx, a, none);
  else if (P::id == kProtoSimple && a.direct && a.ring.nRanks > 1) runRingBroadcastDirect<uint8_t>(ctx, a, none);
  else runRingBroadcast<uint8_t, P>(ctx, a, none);
}

}  // namespace baton

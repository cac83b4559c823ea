// BATON_TRACE for the fused operations (lesson 11): every GEMM on a chunk of rows, and every wait
// for a chunk to arrive, as spans on the rank's host lane, beside the channel workers' transfers on
// their own lanes: the timeline shows which transfer each GEMM hides.
#pragma once

#include <cstdio>

#include "fused/row_exchange.h"
#include "misc/trace.h"

namespace baton {

// A wait for chunk `chunk` of rank `block`'s rows, recorded when it ends.
class FusedWaitSpan {
 public:
  FusedWaitSpan(const FusedCall& call, int block, int chunk)
      : call_(call), block_(block), chunk_(chunk), t0_(traceEnabled() ? traceNowNs() : 0) {}
  ~FusedWaitSpan() {
    if (!t0_) return;
    char name[64], args[64];
    snprintf(name, sizeof name, "wait rows of rank %d", block_);
    snprintf(args, sizeof args, "\"block\":%d,\"chunk\":%d", block_, chunk_);
    traceComplete(call_.rank, kTraceHostLane, name, "fused", t0_, traceNowNs(), args);
  }
  FusedWaitSpan(const FusedWaitSpan&) = delete;
  FusedWaitSpan& operator=(const FusedWaitSpan&) = delete;

 private:
  const FusedCall& call_;
  int block_, chunk_;
  uint64_t t0_;
};

// fn (a ConsumeRows or ProduceRows), recording each call as a "gemm" span when tracing is on.
template <typename Fn>
Fn tracedGemm(const FusedCall& call, const Fn& fn) {
  if (!traceEnabled()) return fn;
  return [&call, fn](int block, size_t row0, size_t nRows, auto rows) {
    const uint64_t t0 = traceNowNs();
    const ncclResult_t res = fn(block, row0, nRows, rows);
    char name[64], args[96];
    snprintf(name, sizeof name, "gemm rows of rank %d", block);
    snprintf(args, sizeof args, "\"block\":%d,\"row0\":%zu,\"rows\":%zu", block, row0, nRows);
    traceComplete(call.rank, kTraceHostLane, name, "fused", t0, traceNowNs(), args);
    return res;
  };
}

}  // namespace baton

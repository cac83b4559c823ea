// The fused and optimized stages on one host (window_exchange.h): peers' rows read in place,
// partials stored straight into their owner's window, a signal per chunk.
#include "fused/window_exchange.h"

#include <cstring>

#include "fused/fused_trace.h"
#include "misc/debug.h"

namespace baton {
namespace {

using Pattern = FusedWindow::Pattern;

// The i-th peer this rank visits (i = 0 .. nRanks-2).
int peerAt(const FusedCall& call, const WindowPlan& plan, int i) {
  if (plan.rotate) return (call.rank + 1 + i) % call.nRanks;
  return i < call.rank ? i : i + 1;
}
// The i-th rank whose partial for this rank's block arrives (the peers that visit this rank i-th).
int sourceAt(const FusedCall& call, const WindowPlan& plan, int i) {
  if (plan.rotate) return (call.rank - 1 - i + call.nRanks) % call.nRanks;
  return i < call.rank ? i : i + 1;
}

ncclResult_t waitBlock(const FusedCall& call, const FusedWindow& w, Pattern p, int source) {
  FusedWaitSpan span(call, source, 0);
  if (batonWaitSignal(w.dev(), w.signal(p, source), w.target(p, source, 0))) return ncclSuccess;
  return batonError(ncclRemoteError,
                    "%s: rank %d gave up waiting for rank %d's rows (communicator aborted, or BATON_WAIT_TIMEOUT "
                    "passed)",
                    call.fn, call.rank, source);
}

// Every rank is done with every window before any rank returns (and may start the next call).
ncclResult_t endCall(const FusedCall& call, FusedWindow& w, Pattern p) {
  w.account(p, 1);
  if (batonLsaBarrier(w.dev(), 0)) return ncclSuccess;
  return batonError(ncclRemoteError, "%s: rank %d gave up in the barrier that ends the call", call.fn, call.rank);
}

}  // namespace

ncclResult_t windowGatherRows(const FusedCall& call, FusedWindow& w, const WindowPlan& plan, const void* shard,
                              size_t rowBytes, char* gathered, bool wantGathered, const ConsumeRows& consume) {
  const int n = call.nRanks, r = call.rank;
  const size_t rows = call.rowsPerRank, blockBytes = rows * rowBytes;
  // Publish: this rank's rows into its own window, released to every peer by its signal.
  if (blockBytes) memcpy(w.base(r), shard, blockBytes);
  for (int p = 0; p < n; ++p)
    if (p != r) batonSignalAdd(w.dev(), p, w.signal(FusedWindow::kGather, r), 1);
  if (wantGathered && blockBytes) memcpy(gathered + (size_t)r * blockBytes, shard, blockBytes);
  BATON_CHECK(consume(r, 0, rows, shard));
  // Consume: each peer's rows where they lie, as soon as its signal says they are there.
  for (int i = 0; i < n - 1; ++i) {
    const int j = peerAt(call, plan, i);
    BATON_CHECK(waitBlock(call, w, FusedWindow::kGather, j));
    if (wantGathered && blockBytes) memcpy(gathered + (size_t)j * blockBytes, w.base(j), blockBytes);
    BATON_CHECK(consume(j, 0, rows, w.base(j)));
  }
  return endCall(call, w, FusedWindow::kGather);
}

ncclResult_t windowReduceScatterRows(const FusedCall& call, FusedWindow& w, const WindowPlan& plan, size_t rowFloats,
                                     const ProduceRows& produce, float* out) {
  const int n = call.nRanks, r = call.rank;
  const size_t rows = call.rowsPerRank, blockFloats = rows * rowFloats;
  // Rank `from`'s partial for rank `owner`'s block: slot `from` of the owner's window.
  auto slot = [&](int owner, int from) { return (float*)w.base(owner) + (size_t)from * blockFloats; };
  for (int i = 0; i < n - 1; ++i) {
    const int j = peerAt(call, plan, i);
    BATON_CHECK(produce(j, 0, rows, slot(j, r)));
    batonSignalAdd(w.dev(), j, w.signal(FusedWindow::kReduceScatter, r), 1);
  }
  BATON_CHECK(produce(r, 0, rows, out));
  for (int i = 0; i < n - 1; ++i) {
    const int from = sourceAt(call, plan, i);
    BATON_CHECK(waitBlock(call, w, FusedWindow::kReduceScatter, from));
    const float* in = slot(r, from);
    for (size_t e = 0; e < blockFloats; ++e) out[e] += in[e];
  }
  return endCall(call, w, FusedWindow::kReduceScatter);
}

}  // namespace baton

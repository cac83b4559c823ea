// The fused and optimized stages on one host (window_exchange.h): peers' rows read in place,
// partials stored straight into their owner's window, a signal per chunk.
#include "fused/window_exchange.h"

#include <algorithm>
#include <cstring>

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

int chunksFor(const FusedCall& call, const WindowPlan& plan) {
  return (int)std::max<size_t>(1, std::min<size_t>((size_t)plan.chunks, call.rowsPerRank));
}

ncclResult_t waitChunk(const FusedCall& call, const FusedWindow& w, Pattern p, int source, int chunk) {
  if (batonWaitSignal(w.dev(), w.signal(p, source), w.target(p, source, chunk))) return ncclSuccess;
  return batonError(ncclRemoteError,
                    "%s: rank %d gave up waiting for chunk %d of rank %d's rows (communicator aborted, or "
                    "BATON_WAIT_TIMEOUT passed)",
                    call.fn, call.rank, chunk, source);
}

// Every rank is done with every window before any rank returns (and may start the next call).
ncclResult_t endCall(const FusedCall& call, FusedWindow& w, Pattern p, int chunks) {
  w.account(p, chunks);
  if (batonLsaBarrier(w.dev(), 0)) return ncclSuccess;
  return batonError(ncclRemoteError, "%s: rank %d gave up in the barrier that ends the call", call.fn, call.rank);
}

}  // namespace

ncclResult_t windowGatherRows(const FusedCall& call, FusedWindow& w, const WindowPlan& plan, const void* shard,
                              size_t rowBytes, char* gathered, bool wantGathered, const ConsumeRows& consume) {
  const int n = call.nRanks, r = call.rank, chunks = chunksFor(call, plan);
  const size_t rows = call.rowsPerRank, blockBytes = rows * rowBytes;
  // Publish: this rank's rows into its own window, chunk by chunk, each released to every peer.
  char* mine = w.base(r);
  for (int c = 0; c < chunks; ++c) {
    const size_t r0 = chunkRow(rows, chunks, c), r1 = chunkRow(rows, chunks, c + 1);
    if (r1 > r0) memcpy(mine + r0 * rowBytes, (const char*)shard + r0 * rowBytes, (r1 - r0) * rowBytes);
    for (int p = 0; p < n; ++p)
      if (p != r) batonSignalAdd(w.dev(), p, w.signal(FusedWindow::kGather, r), 1);
  }
  if (wantGathered && blockBytes) memcpy(gathered + (size_t)r * blockBytes, shard, blockBytes);
  BATON_CHECK(consume(r, 0, rows, shard));
  // Consume: each peer's chunks where they lie, as soon as their signal says they are there.
  for (int i = 0; i < n - 1; ++i) {
    const int j = peerAt(call, plan, i);
    for (int c = 0; c < chunks; ++c) {
      BATON_CHECK(waitChunk(call, w, FusedWindow::kGather, j, c));
      const size_t r0 = chunkRow(rows, chunks, c), r1 = chunkRow(rows, chunks, c + 1);
      const char* src = w.base(j) + r0 * rowBytes;
      if (wantGathered && r1 > r0) memcpy(gathered + (size_t)j * blockBytes + r0 * rowBytes, src, (r1 - r0) * rowBytes);
      BATON_CHECK(consume(j, r0, r1 - r0, src));
    }
  }
  return endCall(call, w, FusedWindow::kGather, chunks);
}

ncclResult_t windowReduceScatterRows(const FusedCall& call, FusedWindow& w, const WindowPlan& plan, size_t rowFloats,
                                     const ProduceRows& produce, float* out) {
  const int n = call.nRanks, r = call.rank, chunks = chunksFor(call, plan);
  const size_t rows = call.rowsPerRank, blockFloats = rows * rowFloats;
  // Rank `from`'s partial for rank `owner`'s block: slot `from` of the owner's window.
  auto slot = [&](int owner, int from) { return (float*)w.base(owner) + (size_t)from * blockFloats; };
  for (int i = 0; i < n - 1; ++i) {
    const int j = peerAt(call, plan, i);
    for (int c = 0; c < chunks; ++c) {
      const size_t r0 = chunkRow(rows, chunks, c), r1 = chunkRow(rows, chunks, c + 1);
      BATON_CHECK(produce(j, r0, r1 - r0, slot(j, r) + r0 * rowFloats));
      batonSignalAdd(w.dev(), j, w.signal(FusedWindow::kReduceScatter, r), 1);
    }
  }
  BATON_CHECK(produce(r, 0, rows, out));
  for (int i = 0; i < n - 1; ++i) {
    const int from = sourceAt(call, plan, i);
    for (int c = 0; c < chunks; ++c) {
      BATON_CHECK(waitChunk(call, w, FusedWindow::kReduceScatter, from, c));
      const size_t r0 = chunkRow(rows, chunks, c), r1 = chunkRow(rows, chunks, c + 1);
      const float* in = slot(r, from) + r0 * rowFloats;
      float* o = out + r0 * rowFloats;
      for (size_t e = 0; e < (r1 - r0) * rowFloats; ++e) o[e] += in[e];
    }
  }
  return endCall(call, w, FusedWindow::kReduceScatter, chunks);
}

}  // namespace baton

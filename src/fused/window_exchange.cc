// The window side of the fused and optimized stages (window_exchange.h).
#include "fused/window_exchange.h"

#include <cstring>

#include "fused/fused_trace.h"
#include "misc/debug.h"

namespace baton {

int visitAt(const FusedCall& call, bool rotate, int i) {
  if (rotate) return (call.rank + 1 + i) % call.nRanks;
  return i < call.rank ? i : i + 1;
}

int sourceAt(const FusedCall& call, bool rotate, int i) {
  if (rotate) return (call.rank - 1 - i + call.nRanks) % call.nRanks;
  return i < call.rank ? i : i + 1;
}

void publishRows(FusedWindow& w, const void* shard, size_t blockBytes) {
  const int me = w.dev().rank;
  if (blockBytes) memcpy(w.base(me), shard, blockBytes);
  for (int p = 0; p < w.dev().nRanks; ++p)
    if (p != me && w.local(p)) w.signalPeer(p, FusedWindow::kGather);
}

ncclResult_t waitBlock(const FusedCall& call, const FusedWindow& w, FusedWindow::Pattern p, int source) {
  FusedWaitSpan span(call, source, 0);
  if (batonWaitSignal(w.dev(), w.signal(p, source), w.target(p, source))) return ncclSuccess;
  return batonError(ncclRemoteError,
                    "%s: rank %d gave up waiting for rank %d's rows (communicator aborted, or BATON_WAIT_TIMEOUT "
                    "passed)",
                    call.fn, call.rank, source);
}

ncclResult_t endWindowCall(const FusedCall& call, FusedWindow& w, FusedWindow::Pattern p) {
  w.account(p);
  if (batonLsaBarrier(w.dev(), 0)) return ncclSuccess;
  return batonError(ncclRemoteError, "%s: rank %d gave up in the barrier that ends the call", call.fn, call.rank);
}

}  // namespace baton

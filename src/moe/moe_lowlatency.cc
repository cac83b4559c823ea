// MoE stage 4, low latency (include/baton/moe.h, lesson 12): no exchange through the transports'
// FIFOs at all. Each rank writes straight into its peers' symmetric windows (src/fused/fused_window.h)
// and says so with one signal per (pattern, source); the receiver copies out of its own window. On
// one host a write is a store into the peer's mapped window and a release add; a rank of another
// host is written with one put-with-signal per region (the proxies carry it, as NCCL's proxy
// carries a GPU's puts to the NIC). Written against the device-side API (include/baton/device.h),
// as a GPU kernel would be.
//
// Window of rank r, laid out alike on every rank (the agreed counts size it; the largest rank's
// need is every rank's size; the regions only grow, and only in dispatch, so a combine on an older
// routing finds them where every rank does):
//   dispatch    per source s, the tokens s sends r (once each, with their expert ids), in s's
//               token order;
//   weights[2]  per source s, the topk weights of each of those tokens (combine's first step);
//   partials[2] per expert rank p, one fp32 partial per token r sent p, in r's token order.
// Double buffered: combine-type calls alternate halves, so a rank one call ahead writes the other
// half. Why one call ahead at most: a rank's call ends only after every peer stored its partials of
// that call, which each does only after finishing its previous call. Dispatch needs no second half:
// it begins with the agreement all-gather, which every rank reaches only after its previous call
// (so after copying its rows out), across hosts too; it also ends with a barrier of the host's
// ranks once its rows are copied out (it may have grown the regions).
//
// Memory-ordering contract: a sender's stores into a peer's region are released by its signal add
// on that peer (batonSignalAdd, release); the peer acquires them in batonWaitSignal before loading.
// Signals only grow, so nothing is reset between calls (FusedWindow::target/account count them).
#include <algorithm>
#include <cstring>
#include <vector>

#include "fused/blas.h"
#include "fused/fused_window.h"
#include "misc/debug.h"
#include "moe/moe_routing.h"

namespace baton {
namespace {

constexpr size_t kAlign = 64;
size_t up(size_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

// Where every region of every rank's window is: offsets in bytes from the window's base.
struct LowLatencyLayout {
  size_t weights[2], partials[2], bytes;
  size_t dispatchRow, weightsRow, partialRow;  // bytes per token in each region
  const batonMoeRouting* r;
  size_t to(int dst, int src) const { return r->sendTokens[(size_t)src * r->comm->nRanks + dst]; }
  // Rank dst's region for what source src sends it: tokens before src's, in dst's window.
  size_t before(int dst, int src) const {
    size_t t = 0;
    for (int s = 0; s < src; ++s) t += to(dst, s);
    return t;
  }
  size_t dispatchAt(int dst, int src) const { return before(dst, src) * dispatchRow; }
  size_t weightsAt(int half, int dst, int src) const { return weights[half] + before(dst, src) * weightsRow; }
  // In token rank t's window, expert rank p's partials: tokens t sent to ranks before p, then p's.
  size_t partialsAt(int half, int t, int p) const {
    size_t n = 0;
    for (int q = 0; q < p; ++q) n += to(q, t);
    return partials[half] + n * partialRow;
  }
};

// The layout of r's regions in w: each region as large as any routing so far needed (grow: first
// raised to r's needs, which dispatch does).
LowLatencyLayout layoutOf(const batonMoeRouting& r, FusedWindow& w, bool grow) {
  const int n = r.comm->nRanks;
  LowLatencyLayout L{};
  L.r = &r;
  L.dispatchRow = r.wireBytes + (size_t)r.topk * sizeof(int32_t);
  L.weightsRow = (size_t)r.topk * sizeof(float);
  L.partialRow = r.hidden * sizeof(float);
  size_t* region = w.moeRegions;  // dispatch, weights, partials
  for (int q = 0; grow && q < n; ++q) {
    size_t in = 0, out = 0;
    for (int s = 0; s < n; ++s) in += L.to(q, s), out += L.to(s, q);
    region[0] = std::max(region[0], up(in * L.dispatchRow));
    region[1] = std::max(region[1], up(in * L.weightsRow));
    region[2] = std::max(region[2], up(out * L.partialRow));
  }
  L.weights[0] = region[0], L.weights[1] = L.weights[0] + region[1];
  L.partials[0] = L.weights[1] + region[1], L.partials[1] = L.partials[0] + region[2];
  L.bytes = L.partials[1] + region[2] + kAlign;
  return L;
}

// The window the stage writes through: the fused stages' on one host, the one with puts across hosts.
FusedWindow& windowOf(const ncclComm* comm) { return comm->moeNetWindow ? *comm->moeNetWindow : *comm->fusedWindow; }

ncclResult_t wait(const batonMoeRouting& r, const FusedWindow& w, FusedWindow::Pattern p, int source,
                  const char* what) {
  if (batonWaitSignal(w.dev(), w.signal(p, source), w.target(p, source))) return ncclSuccess;
  return batonError(ncclRemoteError,
                    "MoE low-latency stage: rank %d gave up waiting for rank %d's %s (communicator aborted, or "
                    "BATON_WAIT_TIMEOUT passed)",
                    r.comm->rank, source, what);
}

// The i-th peer a rank serves: itself last, the others rotated so no two ranks start alike.
int peerAt(int me, int n, int i) { return (me + 1 + i) % n; }

ncclResult_t deliver(const batonMoeRouting& r, FusedWindow& w, int p, FusedWindow::Pattern pat, size_t at,
                     size_t bytes) {
  if (w.deliver(p, pat, at, bytes) == ncclSuccess) return ncclSuccess;
  return batonError(ncclRemoteError, "MoE low-latency stage: rank %d could not put %zu bytes to rank %d: %s",
                    r.comm->rank, bytes, p, lastError());
}

}  // namespace

ncclResult_t moeLowLatencyWindow(batonMoeRouting* r) {
  ncclComm* comm = r->comm;
  if (!comm->fusedWindow) comm->fusedWindow = std::make_shared<FusedWindow>();
  // The device communicator first (no window memory), to learn whether every rank is on this host.
  bool usable = false;
  BATON_CHECK(comm->fusedWindow->ensure(comm, 0, &usable));
  const bool oneHost = comm->fusedWindow->dev().lsaSize == comm->nRanks;  // alike on every rank
  if (!oneHost && !comm->moeNetWindow) {
    comm->moeNetWindow = std::make_shared<FusedWindow>();
    BATON_CHECK(comm->moeNetWindow->ensure(comm, 0, &usable, /*netPuts=*/true));
  }
  FusedWindow& w = windowOf(comm);
  return w.ensure(comm, layoutOf(*r, w, true).bytes, &usable, !oneHost);
}

ncclResult_t moeLowLatencyDispatchEnd(const batonMoeRouting& r) {
  if (batonLsaBarrier(windowOf(r.comm).dev(), 0)) return ncclSuccess;
  return batonError(ncclRemoteError, "batonMoeDispatch: rank %d gave up in the barrier that ends the low-latency stage",
                    r.comm->rank);
}

namespace {

// Each destination's tokens, in token order, then its signal: it may copy them out while this
// rank serves the next destination. This rank's own tokens stay where they are (their rows are
// copied from the caller's tokens, forEachArrived below); only their signal goes, so every rank
// counts signals alike.
ncclResult_t storeTokens(const batonMoeRouting* r, FusedWindow& w, const LowLatencyLayout& L, const void* tokens) {
  const int n = r->comm->nRanks, me = r->comm->rank, k = r->topk;
  for (int i = 0; i < n; ++i) {
    const int p = peerAt(me, n, i);
    const size_t at = L.dispatchAt(p, me), bytes = L.to(p, me) * L.dispatchRow;
    if (p == me) {
      BATON_CHECK(deliver(*r, w, p, FusedWindow::kMoeDispatch, at, 0));
      continue;
    }
    char* dst = w.writable(p, at, bytes);
    for (size_t t = 0; t < r->numTokens; ++t)
      for (int j = 0; j < k; ++j) {
        if (!r->firstOnRank(t, j) || r->rankOf(r->topkIdx[t * k + j]) != p) continue;
        memcpy(dst, static_cast<const char*>(tokens) + t * r->wireBytes, r->wireBytes);
        memcpy(dst + r->wireBytes, &r->topkIdx[t * k], k * sizeof(int32_t));
        dst += L.dispatchRow;
      }
    BATON_CHECK(deliver(*r, w, p, FusedWindow::kMoeDispatch, at, bytes));
  }
  return ncclSuccess;
}

// Calls fn(seq, token bytes, its topk ids) for each token source s sent this rank, in s's token
// order: from this rank's window for a peer, from the caller's tokens for this rank itself.
template <typename Fn>
void forEachArrived(const batonMoeRouting& r, const FusedWindow& w, const LowLatencyLayout& L, int s,
                    const void* tokens, Fn fn) {
  const int me = r.comm->rank, k = r.topk;
  if (s != me) {
    const char* in = w.base(me) + L.dispatchAt(me, s);
    for (uint32_t seq = 0; seq < L.to(me, s); ++seq, in += L.dispatchRow) {
      int32_t ids[kMoeMaxTopk];
      memcpy(ids, in + r.wireBytes, k * sizeof(int32_t));
      fn(seq, in, ids);
    }
    return;
  }
  uint32_t seq = 0;
  for (size_t t = 0; t < r.numTokens; ++t)
    for (int j = 0; j < k; ++j)
      if (r.firstOnRank(t, j) && r.rankOf(r.topkIdx[t * k + j]) == me) {
        fn(seq++, static_cast<const char*>(tokens) + t * r.wireBytes, &r.topkIdx[t * k]);
        break;
      }
}

}  // namespace

ncclResult_t moeDispatchLowLatency(batonMoeRouting* r, const void* tokens, std::vector<const char*>* data) {
  ncclComm* comm = r->comm;
  FusedWindow& w = windowOf(comm);
  const int n = comm->nRanks, me = comm->rank, k = r->topk;
  const LowLatencyLayout L = layoutOf(*r, w, false);
  BATON_CHECK(storeTokens(r, w, L, tokens));
  for (int s = 0; s < n; ++s) {
    BATON_CHECK(wait(*r, w, FusedWindow::kMoeDispatch, s, "tokens"));
    forEachArrived(*r, w, L, s, tokens, [&](uint32_t seq, const char* in, const int32_t* ids) {
      for (int j = 0; j < k; ++j) {
        if (ids[j] < 0 || r->rankOf(ids[j]) != me) continue;
        r->rows.push_back({s, j, ids[j] % r->perRank, seq, 0});
        data->push_back(in);
      }
    });
  }
  w.account(FusedWindow::kMoeDispatch);
  return ncclSuccess;
}

ncclResult_t moeDispatchLowLatencyGemm(batonMoeRouting* r, const void* tokens, const MoeGemm& g) {
  ncclComm* comm = r->comm;
  FusedWindow& w = windowOf(comm);
  const int n = comm->nRanks, me = comm->rank, k = r->topk, per = r->perRank;
  const size_t rowBytes = r->hidden * r->elemSize;
  const LowLatencyLayout L = layoutOf(*r, w, false);
  BATON_CHECK(storeTokens(r, w, L, tokens));
  // Sources in the order they are likely in: this rank's own first, then as the peers serve it.
  std::vector<size_t> cursor(g.blockStart.begin(), g.blockStart.end() - 1);
  std::vector<std::vector<MoeRow>> bySource(n);
  for (int i = 0; i < n; ++i) {
    const int s = (me + n - i) % n;
    BATON_CHECK(wait(*r, w, FusedWindow::kMoeDispatch, s, "tokens"));
    forEachArrived(*r, w, L, s, tokens, [&](uint32_t seq, const char* in, const int32_t* ids) {
      for (int j = 0; j < k; ++j) {
        if (ids[j] < 0 || r->rankOf(ids[j]) != me) continue;
        const int e = ids[j] % per;
        memcpy(static_cast<char*>(g.recvTokens) + cursor[(size_t)e * n + s]++ * rowBytes, in, rowBytes);
        bySource[s].push_back({s, j, e, seq, 0});
      }
    });
    // This source's rows are in place: its blocks' GEMMs run while later sources still store.
    for (int e = 0; e < per; ++e) {
      const size_t first = g.blockStart[(size_t)e * n + s];
      BATON_CHECK(moeExpertGemm(*r, g, e, first, cursor[(size_t)e * n + s] - first));
    }
  }
  for (int s = 0; s < n; ++s) r->rows.insert(r->rows.end(), bySource[s].begin(), bySource[s].end());
  w.account(FusedWindow::kMoeDispatch);
  return ncclSuccess;
}

ncclResult_t moeCombineLowLatency(const batonMoeRouting& r, const char* expertOut, const float* weights, void* out) {
  ncclComm* comm = r.comm;
  FusedWindow& w = windowOf(comm);
  const int n = comm->nRanks, me = comm->rank, k = r.topk;
  const size_t h = r.hidden, rowBytes = h * r.elemSize;
  const LowLatencyLayout L = layoutOf(r, w, false);
  const int half = (int)(w.moeCombines++ % 2);
  // Arrival row a's expert output (NULL past the last).
  auto rowAt = [&](size_t a) { return a < r.rows.size() ? expertOut + (size_t)r.rowOf[a] * rowBytes : nullptr; };
  // 1. The weights of the tokens this rank sent each expert rank, into that rank's window.
  for (int i = 0; i < n; ++i) {
    const int p = peerAt(me, n, i);
    const size_t at = L.weightsAt(half, p, me), bytes = L.to(p, me) * L.weightsRow;
    float* dst = reinterpret_cast<float*>(w.writable(p, at, bytes));
    for (size_t t = 0; t < r.numTokens; ++t)
      for (int j = 0; j < k; ++j) {
        if (!r.firstOnRank(t, j) || r.rankOf(r.topkIdx[t * k + j]) != p) continue;
        for (int x = 0; x < k; ++x) *dst++ = moeWeight(r, weights, t, x);
      }
    BATON_CHECK(deliver(r, w, p, FusedWindow::kMoeWeights, at, bytes));
  }
  // 2. Per peer source, once its weights are here: each of its tokens' rows summed in fp32, stored
  // straight into the source's window (rows arrive grouped by source, then token). This rank's own
  // tokens are summed in step 3, where they are used: through the window they would be written
  // and read back once more (its signal still goes, so every rank counts signals alike).
  size_t a = 0, mine = 0;
  for (int s = 0; s < n; ++s) {
    BATON_CHECK(wait(r, w, FusedWindow::kMoeWeights, s, "weights"));
    const size_t at = L.partialsAt(half, s, me);
    if (s == me) {
      for (mine = a; a < r.rows.size() && r.rows[a].src == s;) ++a;
      BATON_CHECK(deliver(r, w, s, FusedWindow::kMoePartials, at, 0));
      continue;
    }
    const float* wt = reinterpret_cast<const float*>(w.base(me) + L.weightsAt(half, me, s));
    const size_t bytes = L.to(me, s) * L.partialRow;
    float* partial = reinterpret_cast<float*>(w.writable(s, at, bytes));
    for (uint32_t seq = 0; seq < L.to(me, s); ++seq) {  // every token sent here has a row here
      float* dst = partial + (size_t)seq * h;
      for (bool first = true; a < r.rows.size() && r.rows[a].src == s && r.rows[a].seq == seq; ++a, first = false)
        moeAccumulate(r.type, rowAt(a), wt[(size_t)seq * k + r.rows[a].j], dst, h, first, rowAt(a + 1));
    }
    BATON_CHECK(deliver(r, w, s, FusedWindow::kMoePartials, at, bytes));
  }
  // 3. This rank's tokens, one at a time: one partial per rank they went to (this rank's made here,
  // as step 2 makes a peer's), summed in the order of their slots, rounded once into out.
  std::vector<const float*> from(n);
  for (int p = 0; p < n; ++p) {
    BATON_CHECK(wait(r, w, FusedWindow::kMoePartials, p, "partials"));
    from[p] = reinterpret_cast<const float*>(w.base(me) + L.partialsAt(half, me, p));
  }
  std::vector<float> own(h);
  uint32_t seqMine = 0;
  for (size_t t = 0; t < r.numTokens; ++t) {
    const float* parts[kMoeMaxTopk];
    int count = 0;
    for (int j = 0; j < k; ++j) {
      if (!r.firstOnRank(t, j)) continue;
      const int p = r.rankOf(r.topkIdx[t * k + j]);
      if (p == me) {
        for (bool f = true; mine < r.rows.size() && r.rows[mine].src == me && r.rows[mine].seq == seqMine;
             ++mine, f = false)
          moeAccumulate(r.type, rowAt(mine), moeWeight(r, weights, t, r.rows[mine].j), own.data(), h, f,
                        rowAt(mine + 1));
        ++seqMine;
        parts[count++] = own.data();
      } else {
        parts[count++] = from[p];
        from[p] += h;
      }
    }
    moeSumRound(r.type, parts, count, h, static_cast<char*>(out) + t * rowBytes);  // count 0: no expert, zeros
  }
  w.account(FusedWindow::kMoeWeights);
  w.account(FusedWindow::kMoePartials);
  return ncclSuccess;
}

}  // namespace baton

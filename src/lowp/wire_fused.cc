// The wire-format collectives' fused stage (include/baton/lowp.h, lesson 15): the codecs run inside
// the point-to-point copy loop (algorithms/wire_codec_steps.h). A sender quantizes its elements
// straight into the FIFO slot and a receiver decodes the slot straight into its output or its fp32
// sum, so no quantized buffer is written and read again: one pass over the data where the naive
// stage makes three.
//
// Each operation is one exchange: a set of legs the channel worker progresses together, as it does
// a group's sends and receives.
//   AllGather      a send of this rank's block to every peer, the one to the next rank also decoding
//                  what it quantized into this rank's own place (quantized once at 2 ranks; once per
//                  peer beyond), and a receive from every peer decoded into its place.
//   ReduceScatter  a send of chunk p to every rank p, and the receives added to the fp32 sum step by
//                  step in rank order, this rank's own chunk in its place: the naive stage's sum,
//                  bit for bit.
//   AllReduce      rsag: the ReduceScatter above on ceil(count / n) chunks and the AllGather of the
//                  sums in the same exchange, each step of the sums going out once it is complete.
// Steps are segments of wireFusedStepElems elements: MX results are the naive stage's bit for bit;
// NVFP4's per-segment fp32 scale is taken per step (as the pipelined stage takes it per piece).
#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "alltoall.h"
#include "enqueue.h"
#include "lowp/wire_call.h"
#include "lowp/wire_steps.h"
#include "misc/debug.h"
#include "sendrecv_progress.h"

namespace baton {
namespace {

struct WireLeg {
  enum Kind { kSend, kRecv, kLocal } kind = kSend;
  int peer = -1;
  WireStepCodec codec;
  bool counts = false;  // its encoder's NaN blocks count (a block sent to several peers counts once)
  // Indices into the exchange's legs: `after` must be complete before this leg starts (the one
  // before it on the same connection); this leg takes step k only once `stepAfter` has.
  int after = -1, stepAfter = -1;
};

// One exchange's legs, progressed together; their dependencies order the fp32 sums and the
// messages on each connection.
struct WireExchange {
  std::vector<WireLeg> legs;
  std::vector<uint8_t> scratch;  // the local leg's one segment
  uint64_t nonFinite() const {
    uint64_t b = 0;
    for (const WireLeg& l : legs) b += l.counts ? l.codec.nonFinite : 0;
    return b;
  }
};

ncclResult_t runWireExchange(ncclComm* comm, const Task& t, ExecCtx& ctx) {
  auto* x = static_cast<WireExchange*>(t.roundsArg.get());
  std::vector<int> sendPeers, recvPeers;
  for (const WireLeg& l : x->legs)
    if (l.codec.elems && l.kind != WireLeg::kLocal)
      (l.kind == WireLeg::kSend ? sendPeers : recvPeers).push_back(l.peer);
  BATON_CHECK(connectPeers(comm, sendPeers, recvPeers));
  std::vector<SendRecvTransfer> xs;
  std::vector<int> after, at(x->legs.size(), -1);  // at: a leg's transfer (-1: empty, done at once)
  for (WireLeg& l : x->legs) {
    if (l.codec.elems == 0) continue;  // the peer's matching leg is empty too
    SendRecvTransfer tr;
    tr.codec = &l.codec;
    tr.bytes = wireTransferBytes(l.codec);
    tr.peer = l.kind == WireLeg::kLocal ? comm->rank : l.peer;
    tr.isSend = l.kind == WireLeg::kSend;
    if (l.kind != WireLeg::kLocal) {
      tr.conn = tr.isSend ? &comm->peerSend[l.peer] : &comm->peerRecv[l.peer];
      const size_t seg = wireSegmentBytes(l.codec.wire, l.codec.stepElems);
      if (seg > tr.conn->stepBytes[kProtoSimple])
        return batonError(ncclInternalError, "wire exchange: a step of %zu bytes exceeds rank %d's slot of %llu", seg,
                          l.peer, (unsigned long long)tr.conn->stepBytes[kProtoSimple]);
    }
    at[size_t(&l - x->legs.data())] = (int)xs.size();
    xs.push_back(tr);
  }
  auto transfer = [&](int leg) { return leg < 0 ? -1 : at[(size_t)leg]; };
  for (size_t i = 0; i < x->legs.size(); ++i) {
    if (at[i] < 0) continue;
    after.push_back(transfer(x->legs[i].after));
    const int s = transfer(x->legs[i].stepAfter);
    if (s >= 0) xs[(size_t)at[i]].stepAfter = &xs[(size_t)s];
  }
  sendRecvRunAll(ctx, xs.data(), after.data(), (int)xs.size());
  return ncclSuccess;
}

ncclResult_t runExchange(const WireCall& c, const std::shared_ptr<WireExchange>& x) {
  Task t = sendRecvTask(Task::kAlltoAll, nullptr, nullptr, 0, ncclInt8, -1);
  t.alltoallAlgo = kAlltoAllPairwise;  // only named in messages; runRounds runs the exchange
  t.runRounds = &runWireExchange;
  t.roundsArg = x;
  for (const WireLeg& l : x->legs)  // its size, for the proxy's assist choice (small exchanges only)
    if (l.kind == WireLeg::kSend) t.count += wireTransferBytes(l.codec);
  return runTasksNow(c.comm, {t});
}

WireElem elemOf(ncclDataType_t t) {
  return t == ncclFloat ? WireElem::kFloat : t == ncclBfloat16 ? WireElem::kBfloat16 : WireElem::kHalf;
}

WireLeg leg(const WireCall& c, WireLeg::Kind kind, int peer, size_t elems, WireRounding r) {
  WireLeg l;
  l.kind = kind, l.peer = peer;
  l.codec.wire = c.wire, l.codec.elems = elems;
  l.codec.stepElems = wireFusedStepElems(c);
  l.codec.rounding = r;
  return l;
}

// Every rank's block (elems[p] elements; this rank's at src, of type in) to every rank, decoded as
// `out` into dst + p * stride elements; the rounding stream is the naive stage's segment `segment`.
// This rank's own block is decoded from what its send to the next rank quantized (once, as the
// naive stage does), unless it has no peer, or its sends to several peers read src where its own
// output lies (in place, more than 2 ranks): then *late gets a local leg to run after the exchange.
std::shared_ptr<WireExchange> gatherExchange(const WireCall& c, const void* src, WireElem in, void* dst, WireElem out,
                                             size_t stride, const std::vector<size_t>& elems, int segment,
                                             WireLeg* late) {
  auto x = std::make_shared<WireExchange>();
  x->scratch.resize(wireSegmentBytes(c.wire, wireFusedStepElems(c)));
  const WireRounding r = c.rounding(segment);
  const size_t outBytes = typeSize(c.type);
  auto at = [&](int p) { return static_cast<void*>(static_cast<char*>(dst) + (size_t)p * stride * outBytes); };
  const bool inPlace = src == at(c.rank);
  const int next = (c.rank + 1) % c.nRanks;
  for (int p = 0; p < c.nRanks; ++p) {
    if (p == c.rank) continue;
    WireLeg s = leg(c, WireLeg::kSend, p, elems[(size_t)c.rank], r);
    s.codec.srcElem = in, s.codec.src = src;
    if (p == next && (!inPlace || c.nRanks == 2)) s.codec.dstElem = out, s.codec.dst = at(c.rank), s.counts = true;
    x->legs.push_back(s);
    WireLeg v = leg(c, WireLeg::kRecv, p, elems[(size_t)p], r);
    v.codec.dstElem = out, v.codec.dst = at(p);
    x->legs.push_back(v);
  }
  *late = leg(c, WireLeg::kLocal, c.rank, 0, r);  // empty: nothing to do after
  if (c.nRanks == 1 || (inPlace && c.nRanks > 2)) {
    WireLeg l = leg(c, WireLeg::kLocal, c.rank, elems[(size_t)c.rank], r);
    l.codec.srcElem = in, l.codec.src = src, l.codec.dstElem = out, l.codec.dst = at(c.rank);
    l.codec.scratch = x->scratch.data();
    l.counts = true;
    *late = l;
  }
  return x;
}

// Runs a local leg on this thread, step by step (scratch holds one step).
uint64_t runLocalLeg(WireLeg& l) {
  for (size_t k = 0; k < wireSteps(l.codec); ++k) wireLocalStep(l.codec, k);
  return l.codec.nonFinite;
}

// Chunk p (elems[p] elements at src + p * stride, of type in) to rank p, quantized with the naive
// stage's segment p; acc (zeroed here) receives this rank's chunk summed over ranks in rank order.
std::shared_ptr<WireExchange> reduceExchange(const WireCall& c, const void* src, WireElem in, size_t stride,
                                             const std::vector<size_t>& elems, float* acc) {
  auto x = std::make_shared<WireExchange>();
  x->scratch.resize(wireSegmentBytes(c.wire, wireFusedStepElems(c)));
  const size_t inBytes = typeSize(c.type), mine = elems[(size_t)c.rank];
  std::fill(acc, acc + mine, 0.f);
  auto chunk = [&](int p) { return static_cast<const char*>(src) + (size_t)p * stride * inBytes; };
  for (int p = 0; p < c.nRanks; ++p) {
    if (p == c.rank) continue;
    WireLeg s = leg(c, WireLeg::kSend, p, elems[p], c.rounding(p));
    s.codec.srcElem = in, s.codec.src = chunk(p), s.counts = true;
    x->legs.push_back(s);
  }
  for (int p = 0; p < c.nRanks; ++p) {  // the sum's order: each step added in rank order
    WireLeg v = leg(c, p == c.rank ? WireLeg::kLocal : WireLeg::kRecv, p, mine, c.rounding(p));
    v.stepAfter = p == 0 ? -1 : (int)x->legs.size() - 1;
    v.codec.dst = acc, v.codec.add = true;
    if (p == c.rank) v.codec.srcElem = in, v.codec.src = chunk(p), v.codec.scratch = x->scratch.data(), v.counts = true;
    x->legs.push_back(v);
  }
  return x;
}

}  // namespace

size_t wireFusedStepElems(const WireCall& c) {
  const size_t fit = wireElemsPerSlot(c.wire, c.comm->tun.sendrecvStepBytes);
  const size_t piece = std::max<size_t>(32, c.pieceBytes / typeSize(c.type) / 32 * 32);
  return std::max<size_t>(32, std::min(fit, piece));
}

ncclResult_t wireAllGatherFused(const WireCall& c, const void* sendbuff, void* recvbuff) {
  if (c.count == 0) return ncclSuccess;
  const WireElem e = elemOf(c.type);
  WireLeg late;
  auto x =
      gatherExchange(c, sendbuff, e, recvbuff, e, c.count, std::vector<size_t>((size_t)c.nRanks, c.count), 0, &late);
  BATON_CHECK(runExchange(c, x));
  reportNonFinite(c, x->nonFinite() + runLocalLeg(late));
  return ncclSuccess;
}

ncclResult_t wireReduceScatterFused(const WireCall& c, const void* sendbuff, void* recvbuff) {
  if (c.count == 0) return ncclSuccess;
  float* acc = c.buffer<float>(FusedScratch::kWireSum, c.count);
  auto x = reduceExchange(c, sendbuff, elemOf(c.type), c.count, std::vector<size_t>((size_t)c.nRanks, c.count), acc);
  BATON_CHECK(runExchange(c, x));
  divideWireSums(c, acc, c.count);
  withWireType(c.type, [&](auto tag) {
    using T = decltype(tag);
    T* dst = static_cast<T*>(recvbuff);
    for (size_t i = 0; i < c.count; ++i) dst[i] = TypeTraits<T>::store(acc[i]);
    return ncclSuccess;
  });
  reportNonFinite(c, x->nonFinite());
  return ncclSuccess;
}

// rsag: chunk p is [p * chunk, p * chunk + len(p)), as in the naive stage. With peers, one exchange:
// the ReduceScatter's legs, then the AllGather's, each of its sends taking step k of the sums once
// the sum's last leg has added it (and after the ReduceScatter's message on that connection), so
// the sums start out while the last chunks still arrive. The send to the next rank divides the
// sums for ncclAvg, quantizes them once and decodes them into this rank's own chunk; the other
// sends follow it step by step.
ncclResult_t wireAllReduceFused(const WireCall& c, const void* sendbuff, void* recvbuff) {
  if (c.count == 0) return ncclSuccess;
  const size_t n = (size_t)c.nRanks, chunk = (c.count + n - 1) / n, me = (size_t)c.rank;
  std::vector<size_t> len(n);
  for (size_t p = 0; p < n; ++p) len[p] = std::min(chunk, c.count - std::min(c.count, p * chunk));
  float* acc = c.buffer<float>(FusedScratch::kWireSum, chunk);
  const WireElem out = elemOf(c.type);
  auto x = reduceExchange(c, sendbuff, elemOf(c.type), chunk, len, acc);
  if (n == 1) {
    BATON_CHECK(runExchange(c, x));
    divideWireSums(c, acc, len[me]);
    WireLeg late;
    // No peers: only `late`, whose scratch the exchange holds.
    auto ag = gatherExchange(c, acc, WireElem::kFloat, recvbuff, out, chunk, len, c.nRanks, &late);
    reportNonFinite(c, x->nonFinite() + runLocalLeg(late));
    return ncclSuccess;
  }
  // reduceExchange's legs: the sends to every peer, then the sum's legs, one per rank.
  std::vector<int> rsSend(n, -1), rsRecv(n, -1);
  for (size_t i = 0; i < x->legs.size(); ++i)
    (x->legs[i].kind == WireLeg::kSend ? rsSend : rsRecv)[(size_t)x->legs[i].peer] = (int)i;
  const int sumLast = (int)x->legs.size() - 1;
  int first = -1;
  for (size_t q = 1; q < n; ++q) {
    const size_t p = (me + q) % n;
    WireLeg s = leg(c, WireLeg::kSend, (int)p, len[me], c.rounding(c.nRanks));
    s.codec.srcElem = WireElem::kFloat, s.codec.src = acc;
    s.after = rsSend[p];
    s.stepAfter = first < 0 ? sumLast : first;
    if (first < 0) {
      s.codec.dstElem = out, s.codec.dst = static_cast<char*>(recvbuff) + me * chunk * typeSize(c.type);
      s.codec.divideBy = c.avg ? float(c.nRanks) : 1.f;
      s.counts = true;
      first = (int)x->legs.size();
    }
    x->legs.push_back(s);
    WireLeg v = leg(c, WireLeg::kRecv, (int)p, len[p], c.rounding(c.nRanks));
    v.codec.dstElem = out, v.codec.dst = static_cast<char*>(recvbuff) + p * chunk * typeSize(c.type);
    v.after = rsRecv[p];
    x->legs.push_back(v);
  }
  BATON_CHECK(runExchange(c, x));
  reportNonFinite(c, x->nonFinite());
  return ncclSuccess;
}

}  // namespace baton

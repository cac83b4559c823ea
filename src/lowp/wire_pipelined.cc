// The wire-format collectives' pipelined stage (include/baton/lowp.h, lesson 15): the naive stage
// applied piece by piece, with the pieces overlapped. While the channel workers move piece k's
// bytes, this thread quantizes piece k+1 and decodes piece k-1, so a slow link stays busy instead
// of idling through each codec pass. Each piece is quantized on its own (its NVFP4 segment scale,
// its chunks per rank), so results are the naive stage's on each piece (wirePieceElems says how
// large a piece is). Double buffers: two pieces in flight per exchange at most.
#include <algorithm>
#include <memory>
#include <thread>
#include <vector>

#include "completion.h"
#include "enqueue.h"
#include "lowp/wire_call.h"
#include "lowp/wire_steps.h"
#include "misc/debug.h"

namespace baton {
namespace {

// The exchanges in flight; waits for all of them on every way out, so no worker still writes a
// buffer after an error returns.
class InFlight {
 public:
  explicit InFlight(ncclComm* comm) : comm_(comm) {}
  ~InFlight() {
    for (auto& d : steps_)
      if (d) d->wait();
  }
  // Hands `tasks` to the channel workers as step `slot`; this thread goes on computing.
  ncclResult_t launch(std::vector<Task> tasks, int slot) {
    if (steps_.size() <= size_t(slot)) steps_.resize(slot + 1);
    BATON_CHECK(launchTasks(comm_, tasks, &steps_[slot], /*callerRuns=*/false));
    std::this_thread::yield();  // let a worker pinned to this core start the transfer
    return ncclSuccess;
  }
  ncclResult_t wait(int slot) {
    if (size_t(slot) >= steps_.size() || !steps_[slot]) return ncclSuccess;
    const ncclResult_t res = steps_[slot]->wait();
    steps_[slot].reset();
    return res;
  }

 private:
  ncclComm* comm_;
  std::vector<std::shared_ptr<Completion>> steps_;
};

// One piece: elements [begin, begin + len) of the operation's count; its chunk per rank
// (ReduceScatter and AllReduce: ceil(len / n); AllGather: len) and bytes per segment.
struct Piece {
  size_t begin = 0, len = 0, chunk = 0, segBytes = 0;
  size_t chunkLen(size_t p) const { return std::min(chunk, len - std::min(len, p * chunk)); }
};

std::vector<Piece> piecesOf(const WireCall& c, bool chunked) {
  const size_t per = wirePieceElems(c), n = (size_t)c.nRanks;
  std::vector<Piece> v;
  for (size_t b = 0; b < c.count; b += per) {
    Piece p;
    p.begin = b, p.len = std::min(per, c.count - b);
    p.chunk = chunked ? (p.len + n - 1) / n : p.len;
    p.segBytes = wireSegmentBytes(c.wire, p.chunk);
    v.push_back(p);
  }
  return v;
}

}  // namespace

size_t wirePieceElems(const WireCall& c) {
  const size_t unit = 32 * (size_t)c.nRanks, elems = c.pieceBytes / typeSize(c.type);
  return std::max(unit, elems / unit * unit);
}

// AllGather: Q(k) quantizes this rank's piece, X(k) all-gathers it, D(k) decodes every rank's.
ncclResult_t wireAllGatherPipelined(const WireCall& c, const void* sendbuff, void* recvbuff) {
  if (c.count == 0) return ncclSuccess;
  const std::vector<Piece> pieces = piecesOf(c, false);
  const size_t n = (size_t)c.nRanks, maxSeg = pieces[0].segBytes;
  uint8_t* buf = c.buffer<uint8_t>(FusedScratch::kWireSend, 2 * (n + 1) * maxSeg);
  auto mine = [&](size_t k) { return buf + (k % 2) * (n + 1) * maxSeg; };
  auto all = [&](size_t k) { return mine(k) + maxSeg; };
  return withWireType(c.type, [&](auto tag) -> ncclResult_t {
    using T = decltype(tag);
    const T* src = static_cast<const T*>(sendbuff);
    T* dst = static_cast<T*>(recvbuff);
    InFlight flight(c.comm);
    uint64_t bad = 0;
    for (size_t k = 0; k <= pieces.size(); ++k) {
      if (k < pieces.size()) {
        const Piece& q = pieces[k];
        bad += quantizeSegment(c.wire, src + q.begin, q.len, mine(k), c.rounding(int(k)));
        BATON_CHECK(flight.launch(wireGatherTasks(c, mine(k), all(k), q.segBytes), int(k % 2)));
      }
      if (k >= 1) {
        const Piece& q = pieces[k - 1];
        BATON_CHECK(flight.wait(int((k - 1) % 2)));
        for (size_t p = 0; p < n; ++p)
          dequantizeSegment(c.wire, all(k - 1) + p * q.segBytes, q.len, dst + p * c.count + q.begin);
      }
    }
    reportNonFinite(c, bad);
    return ncclSuccess;
  });
}

// ReduceScatter (requantize = false) and AllReduce rsag (true): Q(k) quantizes each rank's chunk of
// piece k, X1(k) exchanges them, S(k) sums this rank's; ReduceScatter stores the sums, AllReduce
// quantizes them again, X2(k) all-gathers them and D(k) decodes every rank's.
ncclResult_t wireReducePipelined(const WireCall& c, const void* sendbuff, void* recvbuff, bool requantize) {
  if (c.count == 0) return ncclSuccess;
  const std::vector<Piece> pieces = piecesOf(c, requantize);
  const size_t n = (size_t)c.nRanks, maxSeg = pieces[0].segBytes, maxChunk = pieces[0].chunk;
  // Per parity: out (n segments), in (n), mine (1), all (n).
  const size_t slot = (3 * n + 1) * maxSeg;
  uint8_t* buf = c.buffer<uint8_t>(FusedScratch::kWireSend, 2 * slot);
  float* acc = c.buffer<float>(FusedScratch::kWireSum, maxChunk);
  auto out = [&](size_t k) { return buf + (k % 2) * slot; };
  auto in = [&](size_t k) { return out(k) + n * maxSeg; };
  auto mine = [&](size_t k) { return in(k) + n * maxSeg; };
  auto all = [&](size_t k) { return mine(k) + maxSeg; };
  return withWireType(c.type, [&](auto tag) -> ncclResult_t {
    using T = decltype(tag);
    const T* src = static_cast<const T*>(sendbuff);
    T* dst = static_cast<T*>(recvbuff);
    InFlight flight(c.comm);  // slots 0, 1: X1 by parity; 2, 3: X2 by parity
    uint64_t bad = 0;
    const size_t K = pieces.size();
    const int seg = c.nRanks + 1;  // stochastic rounding streams per piece
    for (size_t k = 0; k <= K + 1; ++k) {
      if (k < K) {  // Q(k), X1(k)
        const Piece& q = pieces[k];
        for (size_t p = 0; p < n; ++p) {
          // ReduceScatter: rank p's piece is at p * count + begin; AllReduce: the piece's chunk p.
          const T* from = requantize ? src + q.begin + p * q.chunk : src + p * c.count + q.begin;
          const size_t len = requantize ? q.chunkLen(p) : q.len;
          bad += quantizeSegment(c.wire, from, len, out(k) + p * q.segBytes, c.rounding(int(k) * seg + int(p)));
        }
        BATON_CHECK(flight.launch(wireAlltoallTasks(c, out(k), in(k), q.segBytes), int(k % 2)));
      }
      if (k >= 1 && k <= K) {  // S(k-1), X2(k-1)
        const Piece& q = pieces[k - 1];
        BATON_CHECK(flight.wait(int((k - 1) % 2)));
        const size_t len = requantize ? q.chunkLen((size_t)c.rank) : q.len;
        sumWireSegments(c, in(k - 1), q.segBytes, len, acc);
        if (!requantize) {
          for (size_t i = 0; i < len; ++i) dst[q.begin + i] = TypeTraits<T>::store(acc[i]);
        } else {
          bad += quantizeSegment(c.wire, acc, len, mine(k - 1), c.rounding(int(k - 1) * seg + c.nRanks));
          BATON_CHECK(flight.launch(wireGatherTasks(c, mine(k - 1), all(k - 1), q.segBytes), 2 + int((k - 1) % 2)));
        }
      }
      if (requantize && k >= 2) {  // D(k-2)
        const Piece& q = pieces[k - 2];
        BATON_CHECK(flight.wait(2 + int((k - 2) % 2)));
        for (size_t p = 0; p < n; ++p)
          dequantizeSegment(c.wire, all(k - 2) + p * q.segBytes, q.chunkLen(p), dst + q.begin + p * q.chunk);
      }
    }
    reportNonFinite(c, bad);
    return ncclSuccess;
  });
}

}  // namespace baton

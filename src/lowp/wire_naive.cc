// The wire-format collectives' naive stage (include/baton/lowp.h, lesson 15): quantize into a
// buffer, move the bytes with an ordinary collective, decode. Three passes over memory; the
// pipelined stage (wire_pipelined.cc) overlaps them piece by piece.
#include <algorithm>

#include "enqueue.h"
#include "lowp/wire_call.h"
#include "lowp/wire_steps.h"
#include "misc/debug.h"

namespace baton {

ncclResult_t wireAllGatherNaive(const WireCall& c, const void* sendbuff, void* recvbuff, bool packed) {
  if (c.count == 0) return ncclSuccess;
  const size_t segB = wireSegmentBytes(c.wire, c.count), n = (size_t)c.nRanks;
  uint8_t* mine = c.buffer<uint8_t>(FusedScratch::kWireSend, segB);
  uint8_t* all = packed ? static_cast<uint8_t*>(recvbuff) : c.buffer<uint8_t>(FusedScratch::kWireRecv, segB * n);
  return withWireType(c.type, [&](auto tag) {
    using T = decltype(tag);
    const uint32_t bad = quantizeSegment(c.wire, static_cast<const T*>(sendbuff), c.count, mine, c.rounding(0));
    BATON_CHECK(runTasksNow(c.comm, wireGatherTasks(c, mine, all, segB)));
    if (!packed)
      for (size_t p = 0; p < n; ++p)
        dequantizeSegment(c.wire, all + p * segB, c.count, static_cast<T*>(recvbuff) + p * c.count);
    reportNonFinite(c, bad);
    return ncclSuccess;
  });
}

ncclResult_t wireReduceScatterNaive(const WireCall& c, const void* sendbuff, void* recvbuff) {
  if (c.count == 0) return ncclSuccess;
  const size_t segB = wireSegmentBytes(c.wire, c.count), n = (size_t)c.nRanks;
  uint8_t* out = c.buffer<uint8_t>(FusedScratch::kWireSend, segB * n);
  uint8_t* in = c.buffer<uint8_t>(FusedScratch::kWireRecv, segB * n);
  float* acc = c.buffer<float>(FusedScratch::kWireSum, c.count);
  return withWireType(c.type, [&](auto tag) {
    using T = decltype(tag);
    uint64_t bad = 0;
    const T* src = static_cast<const T*>(sendbuff);
    if (c.algo == WireAlgo::kRing) {
      BATON_CHECK(wireRingReduce(c, src, c.count, c.count, c.count * n, acc, &bad));
      divideWireSums(c, acc, c.count);
    } else {
      for (size_t p = 0; p < n; ++p)
        bad += quantizeSegment(c.wire, src + p * c.count, c.count, out + p * segB, c.rounding(int(p)));
      BATON_CHECK(runTasksNow(c.comm, wireAlltoallTasks(c, out, in, segB)));
      sumWireSegments(c, in, segB, c.count, acc);
    }
    T* dst = static_cast<T*>(recvbuff);
    for (size_t i = 0; i < c.count; ++i) dst[i] = TypeTraits<T>::store(acc[i]);
    reportNonFinite(c, bad);
    return ncclSuccess;
  });
}

ncclResult_t wireAllReduceNaive(const WireCall& c, const void* sendbuff, void* recvbuff) {
  if (c.count == 0) return ncclSuccess;
  const size_t n = (size_t)c.nRanks;
  return withWireType(c.type, [&](auto tag) {
    using T = decltype(tag);
    const T* src = static_cast<const T*>(sendbuff);
    T* dst = static_cast<T*>(recvbuff);
    uint64_t bad = 0;
    if (c.algo == WireAlgo::kOneShot) {
      const size_t segB = wireSegmentBytes(c.wire, c.count);
      uint8_t* mine = c.buffer<uint8_t>(FusedScratch::kWireSend, segB);
      uint8_t* all = c.buffer<uint8_t>(FusedScratch::kWireRecv, segB * n);
      float* acc = c.buffer<float>(FusedScratch::kWireSum, c.count);
      bad += quantizeSegment(c.wire, src, c.count, mine, c.rounding(0));
      BATON_CHECK(runTasksNow(c.comm, wireGatherTasks(c, mine, all, segB)));
      sumWireSegments(c, all, segB, c.count, acc);
      for (size_t i = 0; i < c.count; ++i) dst[i] = TypeTraits<T>::store(acc[i]);
      reportNonFinite(c, bad);
      return ncclSuccess;
    }
    // rsag and ring: chunk p is [p * chunk, p * chunk + len(p)); the last chunks may be short or empty.
    const size_t chunk = (c.count + n - 1) / n;
    auto len = [&](size_t p) { return std::min(chunk, c.count - std::min(c.count, p * chunk)); };
    const size_t segB = wireSegmentBytes(c.wire, chunk), mineLen = len((size_t)c.rank);
    float* acc = c.buffer<float>(FusedScratch::kWireSum, chunk);
    if (c.algo == WireAlgo::kRing) {
      BATON_CHECK(wireRingReduce(c, src, chunk, chunk, c.count, acc, &bad));
      divideWireSums(c, acc, mineLen);
    }
    uint8_t* out = c.buffer<uint8_t>(FusedScratch::kWireSend, segB * n);
    uint8_t* in = c.buffer<uint8_t>(FusedScratch::kWireRecv, segB * n);
    if (c.algo != WireAlgo::kRing) {
      for (size_t p = 0; p < n; ++p)
        bad += quantizeSegment(c.wire, src + p * chunk, len(p), out + p * segB, c.rounding(int(p)));
      BATON_CHECK(runTasksNow(c.comm, wireAlltoallTasks(c, out, in, segB)));
      sumWireSegments(c, in, segB, mineLen, acc);
    }
    // The sums are quantized again (from fp32, not rounded to T first) and gathered; every rank,
    // this one included, decodes the same bytes, so every rank's result is the same.
    bad += quantizeSegment(c.wire, acc, mineLen, out, c.rounding(c.nRanks));
    BATON_CHECK(runTasksNow(c.comm, wireGatherTasks(c, out, in, segB)));
    for (size_t p = 0; p < n; ++p) dequantizeSegment(c.wire, in + p * segB, len(p), dst + p * chunk);
    reportNonFinite(c, bad);
    return ncclSuccess;
  });
}

}  // namespace baton

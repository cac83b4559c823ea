// The wire-format collectives' naive stage (include/baton/lowp.h, lesson 15): quantize into a
// buffer, move the bytes with an ordinary collective, decode. Three passes over memory; the
// optimized stage will fold the codecs into the protocol's copy loops.
#include <algorithm>
#include <cinttypes>
#include <memory>
#include <vector>

#include "alltoall.h"
#include "alltoall/alltoall_choice.h"
#include "alltoall/alltoall_executor.h"
#include "enqueue.h"
#include "lowp/wire_call.h"
#include "misc/debug.h"
#include "task.h"

namespace baton {
namespace {

template <typename F>
ncclResult_t withType(ncclDataType_t t, F&& f) {
  switch (t) {
    case ncclFloat: return f(float{});
    case ncclBfloat16: return f(bfloat16_t{});
    default: return f(half_t{});  // the call's checks let only float, bfloat16 and half through
  }
}

ncclResult_t gatherBytes(const WireCall& c, const void* mine, void* all, size_t bytes) {
  Task t = collTask(kFuncAllGather, mine, all, bytes, ncclInt8);
  t.op.nRanks = c.nRanks;
  return runTasksNow(c.comm, {t});
}

// Block p of send (blockBytes each) goes to rank p, whose block `rank` of recv it becomes.
ncclResult_t alltoallBytes(const WireCall& c, const void* send, void* recv, size_t blockBytes) {
  const size_t n = (size_t)c.nRanks;
  auto layout = std::make_shared<std::vector<size_t>>(4 * n);
  for (size_t p = 0; p < n; ++p) {
    (*layout)[p] = (*layout)[2 * n + p] = blockBytes;
    (*layout)[n + p] = (*layout)[3 * n + p] = p * blockBytes;
  }
  // The scratch is in no window unless it is: a forced window must not fail on it.
  const bool inWindow = alltoallWindowFit(c.comm, recv, 1) == kWindowInside;
  const int algo = chooseAlltoAll(c.comm, blockBytes, /*sizeAgreed=*/true, inWindow ? kWindowInside : kWindowNone);
  return runTasksNow(c.comm, alltoallTasks(c.comm, algo, send, recv, std::move(layout), /*uniform=*/true));
}

void reportNonFinite(const WireCall& c, uint64_t blocks) {
  if (blocks)
    BATON_INFO(kSubColl, "%s: %" PRIu64 " blocks held a NaN or an infinity and travel as NaN (rank %d)", c.fn, blocks,
               c.rank);
}

// acc[0..n) = the fp32 sum of `segs` segments of `len` elements each, segBytes apart, in order;
// divided by the rank count for ncclAvg.
void sumSegments(const WireCall& c, const uint8_t* segs, size_t segBytes, int count, size_t len, float* acc) {
  std::fill(acc, acc + len, 0.f);
  for (int p = 0; p < count; ++p) dequantizeAdd(c.wire, segs + (size_t)p * segBytes, len, acc);
  if (c.avg)
    for (size_t i = 0; i < len; ++i) acc[i] /= float(c.nRanks);
}

}  // namespace

ncclResult_t wireAllGatherNaive(const WireCall& c, const void* sendbuff, void* recvbuff, bool packed) {
  if (c.count == 0) return ncclSuccess;
  const size_t segB = wireSegmentBytes(c.wire, c.count), n = (size_t)c.nRanks;
  uint8_t* mine = c.buffer<uint8_t>(FusedScratch::kWireSend, segB);
  uint8_t* all = packed ? static_cast<uint8_t*>(recvbuff) : c.buffer<uint8_t>(FusedScratch::kWireRecv, segB * n);
  return withType(c.type, [&](auto tag) {
    using T = decltype(tag);
    const uint32_t bad = quantizeSegment(c.wire, static_cast<const T*>(sendbuff), c.count, mine, c.rounding(0));
    BATON_CHECK(gatherBytes(c, mine, all, segB));
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
  return withType(c.type, [&](auto tag) {
    using T = decltype(tag);
    uint64_t bad = 0;
    for (size_t p = 0; p < n; ++p)
      bad += quantizeSegment(c.wire, static_cast<const T*>(sendbuff) + p * c.count, c.count, out + p * segB,
                             c.rounding(int(p)));
    BATON_CHECK(alltoallBytes(c, out, in, segB));
    sumSegments(c, in, segB, c.nRanks, c.count, acc);
    T* dst = static_cast<T*>(recvbuff);
    for (size_t i = 0; i < c.count; ++i) dst[i] = TypeTraits<T>::store(acc[i]);
    reportNonFinite(c, bad);
    return ncclSuccess;
  });
}

ncclResult_t wireAllReduceNaive(const WireCall& c, const void* sendbuff, void* recvbuff) {
  if (c.count == 0) return ncclSuccess;
  const size_t n = (size_t)c.nRanks;
  return withType(c.type, [&](auto tag) {
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
      BATON_CHECK(gatherBytes(c, mine, all, segB));
      sumSegments(c, all, segB, c.nRanks, c.count, acc);
      for (size_t i = 0; i < c.count; ++i) dst[i] = TypeTraits<T>::store(acc[i]);
      reportNonFinite(c, bad);
      return ncclSuccess;
    }
    // rsag: chunk p is [p * chunk, p * chunk + len(p)); the last chunks may be short or empty.
    const size_t chunk = (c.count + n - 1) / n;
    auto len = [&](size_t p) { return std::min(chunk, c.count - std::min(c.count, p * chunk)); };
    const size_t segB = wireSegmentBytes(c.wire, chunk), mineLen = len((size_t)c.rank);
    uint8_t* out = c.buffer<uint8_t>(FusedScratch::kWireSend, segB * n);
    uint8_t* in = c.buffer<uint8_t>(FusedScratch::kWireRecv, segB * n);
    float* acc = c.buffer<float>(FusedScratch::kWireSum, chunk);
    for (size_t p = 0; p < n; ++p)
      bad += quantizeSegment(c.wire, src + p * chunk, len(p), out + p * segB, c.rounding(int(p)));
    BATON_CHECK(alltoallBytes(c, out, in, segB));
    sumSegments(c, in, segB, c.nRanks, mineLen, acc);
    // The sums are quantized again (from fp32, not rounded to T first) and gathered; every rank,
    // this one included, decodes the same bytes, so every rank's result is the same.
    bad += quantizeSegment(c.wire, acc, mineLen, out, c.rounding(c.nRanks));
    BATON_CHECK(gatherBytes(c, out, in, segB));
    for (size_t p = 0; p < n; ++p) dequantizeSegment(c.wire, in + p * segB, len(p), dst + p * chunk);
    reportNonFinite(c, bad);
    return ncclSuccess;
  });
}

}  // namespace baton

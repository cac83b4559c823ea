// The wire formats' ring ReduceScatter (include/baton/lowp.h, lesson 15): the ring of lesson 02,
// with every partial sum quantized as it crosses a hop. Rank r first sends its own chunk r-1;
// at each step it decodes the partial sum it receives, adds its own part of that chunk in fp32,
// and sends the sum on, quantized again; after nRanks-1 steps it holds the whole sum of chunk r.
// Each chunk's sum is built in one fixed order (from rank j+1 around to rank j), so the result is
// deterministic, but it carries nRanks-1 quantizations of growing partial sums where the AlltoAll
// recipe carries one per input (lesson 15 compares them).
#include <algorithm>
#include <vector>

#include "enqueue.h"
#include "lowp/wire_call.h"
#include "lowp/wire_steps.h"
#include "misc/debug.h"
#include "task.h"

namespace baton {

template <typename T>
ncclResult_t wireRingReduce(const WireCall& c, const T* src, size_t stride, size_t chunk, size_t total, float* acc,
                            uint64_t* bad) {
  const int n = c.nRanks, me = c.rank, next = (me + 1) % n, prev = (me + n - 1) % n;
  // chunk j is [j * stride, j * stride + len(j)) of the input's `total` elements
  auto len = [&](int j) { return std::min(chunk, total - std::min(total, size_t(j) * stride)); };
  if (n == 1) {  // nothing crosses a wire
    for (size_t i = 0; i < len(0); ++i) acc[i] = TypeTraits<T>::load(src[i]);
    return ncclSuccess;
  }
  const size_t segB = wireSegmentBytes(c.wire, chunk);
  uint8_t* out = c.buffer<uint8_t>(FusedScratch::kWireSend, 2 * segB);
  uint8_t* in = out + segB;
  int j = (me + n - 1) % n;
  *bad += quantizeSegment(c.wire, src + size_t(j) * stride, len(j), out, c.rounding(0));
  for (int s = 0; s < n - 1; ++s) {
    BATON_CHECK(runTasksNow(c.comm, {sendRecvTask(Task::kSend, out, nullptr, segB, ncclInt8, next),
                                     sendRecvTask(Task::kRecv, nullptr, in, segB, ncclInt8, prev)}));
    j = (me + 2 * n - s - 2) % n;  // the chunk that arrived; at the last step, this rank's own
    const T* own = src + size_t(j) * stride;
    const size_t l = len(j);
    dequantizeSegment(c.wire, in, l, acc);
    for (size_t i = 0; i < l; ++i) acc[i] += TypeTraits<T>::load(own[i]);
    if (s < n - 2) *bad += quantizeSegment(c.wire, acc, l, out, c.rounding(s + 1));
  }
  return ncclSuccess;
}

template ncclResult_t wireRingReduce(const WireCall&, const float*, size_t, size_t, size_t, float*, uint64_t*);
template ncclResult_t wireRingReduce(const WireCall&, const bfloat16_t*, size_t, size_t, size_t, float*, uint64_t*);
template ncclResult_t wireRingReduce(const WireCall&, const half_t*, size_t, size_t, size_t, float*, uint64_t*);

}  // namespace baton

// The steps both wire-format stages take (wire_steps.h).
#include "lowp/wire_steps.h"

#include <algorithm>
#include <cinttypes>
#include <memory>

#include "alltoall.h"
#include "alltoall/alltoall_choice.h"
#include "alltoall/alltoall_executor.h"
#include "misc/debug.h"

namespace baton {

std::vector<Task> wireGatherTasks(const WireCall& c, const void* mine, void* all, size_t bytes) {
  Task t = collTask(kFuncAllGather, mine, all, bytes, ncclInt8);
  t.op.nRanks = c.nRanks;
  return {t};
}

std::vector<Task> wireAlltoallTasks(const WireCall& c, const void* send, void* recv, size_t blockBytes) {
  const size_t n = (size_t)c.nRanks;
  auto layout = std::make_shared<std::vector<size_t>>(4 * n);
  for (size_t p = 0; p < n; ++p) {
    (*layout)[p] = (*layout)[2 * n + p] = blockBytes;
    (*layout)[n + p] = (*layout)[3 * n + p] = p * blockBytes;
  }
  // The scratch is in no window unless it is: a forced window must not fail on it.
  const bool inWindow = alltoallWindowFit(c.comm, recv, 1) == kWindowInside;
  const int algo = chooseAlltoAll(c.comm, blockBytes, /*sizeAgreed=*/true, inWindow ? kWindowInside : kWindowNone);
  return alltoallTasks(c.comm, algo, send, recv, std::move(layout), /*uniform=*/true);
}

void sumWireSegments(const WireCall& c, const uint8_t* segs, size_t segBytes, size_t len, float* acc) {
  std::fill(acc, acc + len, 0.f);
  for (int p = 0; p < c.nRanks; ++p) dequantizeAdd(c.wire, segs + (size_t)p * segBytes, len, acc);
  divideWireSums(c, acc, len);
}

void divideWireSums(const WireCall& c, float* acc, size_t len) {
  if (c.avg)
    for (size_t i = 0; i < len; ++i) acc[i] /= float(c.nRanks);
}

void reportNonFinite(const WireCall& c, uint64_t blocks) {
  if (blocks)
    BATON_INFO(kSubColl, "%s: %" PRIu64 " blocks held a NaN or an infinity and travel as NaN (rank %d)", c.fn, blocks,
               c.rank);
}

}  // namespace baton

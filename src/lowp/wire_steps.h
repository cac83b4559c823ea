// The steps both stages of the wire-format collectives take (src/lowp/wire_naive.cc,
// wire_pipelined.cc; lesson 15): the datatype dispatch, the byte exchanges as tasks for the
// channel workers, the fp32 sum of decoded segments, the INFO line about NaN blocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "lowp/wire_call.h"
#include "task.h"

namespace baton {

// f(T{}) for the call's datatype: float, bfloat16 or half (the checks let no other through).
template <typename F>
ncclResult_t withWireType(ncclDataType_t t, F&& f) {
  switch (t) {
    case ncclFloat: return f(float{});
    case ncclBfloat16: return f(bfloat16_t{});
    default: return f(half_t{});
  }
}

// An AllGather of `bytes` from every rank.
std::vector<Task> wireGatherTasks(const WireCall& c, const void* mine, void* all, size_t bytes);
// An AlltoAll of blockBytes per rank: block p of send goes to rank p, as its block `rank` of recv.
std::vector<Task> wireAlltoallTasks(const WireCall& c, const void* send, void* recv, size_t blockBytes);

// acc[0..len) = the fp32 sum of nRanks segments segBytes apart, decoded in rank order, divided
// by nRanks for ncclAvg.
void sumWireSegments(const WireCall& c, const uint8_t* segs, size_t segBytes, size_t len, float* acc);

// ncclAvg: acc[0..len) /= nRanks (the fp32 sums, before they are stored or quantized again).
void divideWireSums(const WireCall& c, float* acc, size_t len);

// One INFO line when blocks held a NaN or an infinity (they travel as NaN).
void reportNonFinite(const WireCall& c, uint64_t blocks);

}  // namespace baton

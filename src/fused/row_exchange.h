// How a fused operation's row blocks move between ranks, one implementation per stage (lesson 11).
//
// The four fused operations are two communication patterns with a GEMM at each chunk:
//   gatherRows:        every rank's block arrives here; consume(j, block) runs once per rank j as
//                      soon as block j is here (AllGather+GEMM, and the backward's AllGather side);
//   reduceScatterRows: produce(j, partial) computes this rank's fp32 contribution to rank j's block;
//                      out receives the sum of every rank's contribution to this rank's block
//                      (GEMM+ReduceScatter, and the backward's ReduceScatter side).
// naive runs the whole collective, then every GEMM (or every GEMM, then the collective);
// decomposed sends per-peer chunks on the channel workers while the calling thread computes, one
// step of n-1 ahead: at step s rank r sends to r+s and receives from r-s (gather) or sends its
// partial for r-s and receives r+s's partial for r (reduce-scatter).
#pragma once

#include <cstddef>
#include <functional>

#include "fused/fused_call.h"

namespace baton {

using ConsumeBlock = std::function<ncclResult_t(int rank, const void* block)>;
using ProduceBlock = std::function<ncclResult_t(int rank, float* partial)>;

// shard: blockBytes of this rank; gathered: nRanks * blockBytes (block j at j * blockBytes).
ncclResult_t gatherRows(const FusedCall& call, const void* shard, size_t blockBytes, char* gathered,
                        const ConsumeBlock& consume);
// out: blockFloats; produce is called once per rank, this rank's own block last.
ncclResult_t reduceScatterRows(const FusedCall& call, size_t blockFloats, const ProduceBlock& produce, float* out);

// A plain AllGather of bytes on call.comm (the agreement uses it before a stage runs).
ncclResult_t allGatherBytes(const FusedCall& call, const void* mine, void* all, size_t bytes);

}  // namespace baton

// How a fused operation's row blocks move between ranks, one implementation per stage (lesson 11).
//
// The four fused operations are two communication patterns with a GEMM at each chunk of rows:
//   gatherRows:        every rank's block of call.rowsPerRank rows arrives here; consume(j, row0,
//                      nRows, rows) runs once for every chunk of rank j's block as soon as it is here
//                      (AllGather+GEMM, and the backward's AllGather side);
//   reduceScatterRows: produce(j, row0, nRows, partial) computes this rank's fp32 contribution to
//                      those rows of rank j's block; out receives the sum of every rank's
//                      contribution to this rank's block (GEMM+ReduceScatter, and the backward's
//                      ReduceScatter side).
// The stages:
//   naive:      the whole collective, then every GEMM (or every GEMM, then the collective);
//   decomposed: per-peer blocks sent on the channel workers while the calling thread computes, one
//               step of n-1 ahead: at step s rank r sends to r+s and receives from r-s (gather), or
//               sends its partial for r-s and receives r+s's partial for r (reduce-scatter);
//   fused:      through a symmetric window (window_exchange.h) when every rank is on this host:
//               GEMMs read peers' rows in place, or write their partials straight into the owner's
//               window, and a signal per block says it is there;
//   optimized:  on one host the fused stage with each rank visiting its peers in a rotated order;
//               across hosts the decomposed way with blocks cut into chunks (BATON_FUSED_CHUNKS, at
//               least BATON_FUSED_MIN_CHUNK_BYTES each), so a chunk's GEMM hides the next chunk's
//               transfer, and naive where a block is too small for two chunks.
// Ranks of other hosts are reached the decomposed way in the fused stage too: a put-with-signal
// through the proxy is not built.
#pragma once

#include <cstddef>
#include <functional>

#include "fused/fused_call.h"

namespace baton {

// rows points at row row0 of rank's block.
using ConsumeRows = std::function<ncclResult_t(int rank, size_t row0, size_t nRows, const void* rows)>;
// partial points where row row0 of the contribution to rank's block goes.
using ProduceRows = std::function<ncclResult_t(int rank, size_t row0, size_t nRows, float* partial)>;

// shard: this rank's rows (rowBytes each); gathered: room for every rank's block (block j at
// j * rowsPerRank * rowBytes), which holds them all on return if wantGathered (stages that read
// peers in place use it only then).
ncclResult_t gatherRows(const FusedCall& call, const void* shard, size_t rowBytes, char* gathered, bool wantGathered,
                        const ConsumeRows& consume);
// out: rowsPerRank * rowFloats; this rank's own block is produced last.
ncclResult_t reduceScatterRows(const FusedCall& call, size_t rowFloats, const ProduceRows& produce, float* out);

// A plain AllGather of bytes on call.comm (the agreement uses it before a stage runs).
ncclResult_t allGatherBytes(const FusedCall& call, const void* mine, void* all, size_t bytes);

// The rows of chunk c when rows are cut into `chunks` chunks: [chunkRow(c), chunkRow(c + 1)).
inline size_t chunkRow(size_t rows, int chunks, int c) { return rows * (size_t)c / (size_t)chunks; }

}  // namespace baton

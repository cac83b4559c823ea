// What every wire-format collective (include/baton/lowp.h, lesson 15) does before it moves a byte:
// check its own arguments and environment, then agree with its peers on the operation, count,
// datatype, operator, wire format, algorithm and stage in one small all-gather, so a rank that
// differs fails every rank with both sides named instead of hanging or decoding garbage.
#pragma once

#include <cstddef>
#include <cstdint>

#include "block_formats.h"
#include "comm.h"
#include "fused/fused_scratch.h"

namespace baton {

enum class WireOp : int { kAllGather = 1, kAllGatherPacked, kReduceScatter, kAllReduce };
// How the bytes move: AllGather's one all-gather; ReduceScatter's AlltoAll of quantized chunks, or
// a ring that requantizes the partial sums at every hop; AllReduce as the AlltoAll ReduceScatter
// (rsag) or the ring one (ring), then an all-gather of the requantized sums, or one-shot.
enum class WireAlgo : int { kGather = 1, kAlltoAll, kRsAg, kOneShot, kRing };
// naive: quantize, move, decode, one after the other; pipelined: the same per piece, pieces
// overlapped; fused: the codecs inside the point-to-point copy loop (no quantized buffer).
enum class WireStage : int { kNaive = 1, kPipelined = 2, kFused = 3 };

struct WireCall {
  ncclComm* comm = nullptr;
  const char* fn = "";
  WireOp op = WireOp::kAllGather;
  WireFormat wire = WireFormat::kMxfp8;
  WireAlgo algo = WireAlgo::kGather;
  WireStage stage = WireStage::kNaive;
  ncclDataType_t type = ncclFloat;
  bool avg = false;  // ncclAvg: the fp32 sum divided by nRanks before it is rounded or requantized
  size_t count = 0;  // AllGather: sendcount; ReduceScatter: recvcount; AllReduce: count
  int rank = 0, nRanks = 1;
  bool stochastic = false;
  size_t pieceBytes = 0;  // the pipelined stage's piece, in the data's bytes (BATON_LOWP_PIECE)
  uint64_t seed = 0;      // this call's: BATON_LOWP_SEED mixed with the call's number
  FusedScratch* scratch = nullptr;

  // Rounding for the segment this rank quantizes as its `segment`-th (a distinct stream per rank,
  // segment and call, so no two roundings share random numbers).
  WireRounding rounding(int segment) const;
  template <typename T>
  T* buffer(FusedScratch::Slot slot, size_t count) const {
    return static_cast<T*>(scratch->get(slot, count * sizeof(T)));
  }
};

// Validates and agrees; redop is ignored for the AllGathers. On success *call is ready to run.
ncclResult_t beginWireCall(WireCall* call, ncclComm* comm, const char* fn, WireOp op, const void* sendbuff,
                           void* recvbuff, size_t count, ncclDataType_t type, int wire, ncclRedOp_t redop);

const char* wireFormatName(WireFormat f);
const char* wireAlgoName(WireAlgo a);
const char* wireStageName(WireStage s);

// The collectives of the naive stage (src/lowp/wire_naive.cc).
ncclResult_t wireAllGatherNaive(const WireCall& c, const void* sendbuff, void* recvbuff, bool packed);
ncclResult_t wireReduceScatterNaive(const WireCall& c, const void* sendbuff, void* recvbuff);
ncclResult_t wireAllReduceNaive(const WireCall& c, const void* sendbuff, void* recvbuff);

// The ring ReduceScatter (src/lowp/wire_ring.cc): chunk j of this rank's input (`total` elements)
// is the up to `chunk` elements at src + j * stride; acc receives the fp32 sum of chunk `rank` over
// all ranks, each partial sum quantized as it crosses a hop; *bad counts blocks with a NaN or inf.
template <typename T>
ncclResult_t wireRingReduce(const WireCall& c, const T* src, size_t stride, size_t chunk, size_t total, float* acc,
                            uint64_t* bad);

// The pipelined stage (src/lowp/wire_pipelined.cc): elements per piece (pieceBytes of the data,
// rounded down to a multiple of 32 x nRanks, at least that), and the collectives.
size_t wirePieceElems(const WireCall& c);
ncclResult_t wireAllGatherPipelined(const WireCall& c, const void* sendbuff, void* recvbuff);
ncclResult_t wireReducePipelined(const WireCall& c, const void* sendbuff, void* recvbuff, bool requantize);

// The fused stage (src/lowp/wire_fused.cc): elements per FIFO step (one segment each: what fits
// a point-to-point slot, at most a piece, a multiple of 32), and the collectives (AllReduce: rsag).
size_t wireFusedStepElems(const WireCall& c);
ncclResult_t wireAllGatherFused(const WireCall& c, const void* sendbuff, void* recvbuff);
ncclResult_t wireReduceScatterFused(const WireCall& c, const void* sendbuff, void* recvbuff);
ncclResult_t wireAllReduceFused(const WireCall& c, const void* sendbuff, void* recvbuff);

}  // namespace baton

/* baton's collectives with a wire format, a public extra: float, bfloat16 or half data that crosses
 * the wire as block-scaled FP8 or FP4 (NCCL has neither; people pack FP4 into uint8 themselves).
 * Lesson: docs/lessons/15-fewer-bits-on-the-wire.md. The codecs: algorithms/block_formats.h.
 *
 * Wire formats (bits per element on the wire, scales included):
 *   batonWireMxfp8  OCP MX v1.0 MXFP8: 32 e4m3 elements share one power-of-two (e8m0) scale  8.25
 *   batonWireMxfp4  OCP MX v1.0 MXFP4: 32 e2m1 elements share one e8m0 scale                4.25
 *   batonWireNvfp4  NVFP4: 16 e2m1 elements share one e4m3 scale, plus one fp32 scale per
 *                   segment (a rank's block or chunk)                                        4.5
 * Elements round to nearest even (BATON_LOWP_ROUNDING=stochastic: stochastically, with
 * BATON_LOWP_SEED); a block's scale rounds up so no element saturates; a NaN or infinity turns its
 * whole block into NaN (counted in an INFO line). A count need not be a multiple of the block: the
 * last block is partial.
 *
 * Operations (NCCL's arguments, plus the wire format); datatype: ncclFloat, ncclBfloat16, ncclHalf;
 * op: ncclSum or ncclAvg; in place as in NCCL:
 *   batonAllGatherWire       each rank quantizes its sendcount elements once; every rank receives
 *                            every rank's quantized block and decodes it into recvbuff (datatype).
 *   batonAllGatherWirePacked the same, but recvbuff keeps the quantized blocks: nRanks segments of
 *                            batonWireBytes(sendcount, wire) bytes (decode with batonWireDequantize).
 *   batonReduceScatterWire   each rank quantizes each destination's chunk, the chunks are exchanged
 *                            (an AlltoAll), and each rank decodes and sums them in fp32 in rank
 *                            order, rounding once to datatype: every input is quantized once, and
 *                            the result does not depend on which rank computes it.
 *                            BATON_LOWP_ALGO=ring: a ring instead, each partial sum quantized again
 *                            at every hop (nRanks-1 quantizations of growing sums: a larger error).
 *   batonAllReduceWire       BATON_LOWP_ALGO = rsag | ring | oneshot | auto. rsag: the ReduceScatter
 *                            above, its fp32 sums quantized again and all-gathered (two
 *                            quantizations); ring: the same after the ring ReduceScatter;
 *                            oneshot: every rank's whole buffer quantized once and all-gathered,
 *                            each rank summing all of them (one quantization, nRanks x the bytes
 *                            received; auto takes it up to 64 KiB of wire per rank). Every rank's
 *                            result is bit for bit the same.
 * The error each format and operation can make is derived and measured in lesson 15.
 *
 * Stages (BATON_LOWP_STAGE):
 *   naive      quantize into a buffer, move it with an ordinary collective on bytes, decode: three
 *              passes, one after the other.
 *   pipelined  (auto: the default) the naive stage on pieces of BATON_LOWP_PIECE bytes of
 *              data (1 MiB; rounded down to a multiple of 32 x nRanks elements), overlapped: while
 *              one piece crosses the wire this rank quantizes the next and decodes the last. Each
 *              piece is quantized on its own (its chunks, its NVFP4 segment scale), so the result is
 *              the naive stage's on each piece; at most one piece, it is the naive stage's.
 *   fused      the codecs inside the point-to-point copy loop: a sender
 *              quantizes straight into the FIFO slot, a receiver decodes straight out of it into
 *              recvbuff or its fp32 sum; no quantized buffer is written and read again. Each FIFO
 *              step is a segment (what fits one slot, at most a piece): MXFP8 and MXFP4 results are
 *              the naive stage's bit for bit, NVFP4 takes its segment scale per step. The AllGather
 *              sends its block to every peer and quantizes it once per peer beyond the first.
 * One-shot, the ring and the packed AllGather run naive in every stage. Every call first
 * agrees with its peers on the operation, count, datatype, operator, wire format, algorithm,
 * stage, piece and rounding (one small all-gather), and fails on every rank with
 * ncclInvalidUsage naming both sides if they differ.
 * Every call is collective over comm's ranks, returns when this rank's output is complete, and may
 * not be issued inside ncclGroupStart/End; the stream is accepted and ignored (CPU backend). */
#ifndef BATON_LOWP_H
#define BATON_LOWP_H

#include <stddef.h>

#include "nccl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { batonWireMxfp8 = 1, batonWireMxfp4 = 2, batonWireNvfp4 = 3 } batonWireFormat_t;

/* Bytes of one segment of count elements in `wire` (a 16-byte multiple); 0 for an unknown format. */
size_t batonWireBytes(size_t count, batonWireFormat_t wire);
/* The format's name ("mxfp8", ...), or "unknown". */
const char* batonWireName(batonWireFormat_t wire);

/* Local codecs (no communicator): count elements of datatype <-> one segment of batonWireBytes. */
ncclResult_t batonWireQuantize(const void* in, size_t count, ncclDataType_t datatype, batonWireFormat_t wire,
                               void* packed);
ncclResult_t batonWireDequantize(const void* packed, size_t count, batonWireFormat_t wire, void* out,
                                 ncclDataType_t datatype);

ncclResult_t batonAllGatherWire(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                                batonWireFormat_t wire, ncclComm_t comm, cudaStream_t stream);
ncclResult_t batonAllGatherWirePacked(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                                      batonWireFormat_t wire, ncclComm_t comm, cudaStream_t stream);
ncclResult_t batonReduceScatterWire(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                                    batonWireFormat_t wire, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t batonAllReduceWire(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                                batonWireFormat_t wire, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* BATON_LOWP_H */

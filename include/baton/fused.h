/* baton's fused compute-communication operations for tensor parallelism, a public extra (NCCL has
 * no such calls; PyTorch's async TP and Flux provide them). Lesson:
 * docs/lessons/11-async-tensor-parallelism.md.
 *
 * Layouts: every matrix is row-major and dense (a row of an [R x C] matrix is C elements). M is
 * the full row count of the sharded operand and must divide by the rank count; rank r holds rows
 * [r*M/n, (r+1)*M/n) of it. The other dimensions are the same on every rank. Datatypes: ncclFloat,
 * ncclFloat16, ncclBfloat16; products are accumulated in fp32 and every output is rounded once.
 *
 *   AllGather+GEMM     C[M x N]          = allgather_rows(aShard[M/n x K]) * B[K x N]
 *   GEMM+ReduceScatter cShard[M/n x N]   = reduce_scatter_rows(A[M x K] * bShard[K x N])
 *
 * (In Megatron-style sequence parallelism B of AllGather+GEMM is this rank's column shard of a
 * weight and A of GEMM+ReduceScatter this rank's column shard of the activations; baton does not
 * care what they are shards of.) The backward passes are built from the dual operation:
 *
 *   AllGather+GEMM backward:      dAShard = reduce_scatter_rows(dC * Bᵀ)      [M/n x K]
 *                                 dB      = allgather_rows(aShard)ᵀ * dC      [K x N]
 *   GEMM+ReduceScatter backward:  dA      = allgather_rows(dCShard) * bShardᵀ [M x K]
 *                                 dBShard = Aᵀ * allgather_rows(dCShard)      [K x N]
 *
 * Each call is collective over comm's ranks, returns when this rank's outputs are complete (on
 * blocking and non-blocking communicators alike), and may not be issued inside ncclGroupStart/End.
 * Ranks that disagree on M, N, K, the datatype or the stage fail on every rank with a message
 * naming both shapes; a rank whose own arguments are wrong fails with its reason and every other
 * rank fails naming it. The stream is accepted and ignored on the CPU backend.
 *
 * Stages (BATON_FUSED_STAGE = naive | decomposed | fused | optimized | auto):
 *   naive       the collective (ncclAllGather / ncclReduceScatter), then the GEMM;
 *   decomposed  per-peer chunks: the GEMM of the chunk already here runs while the next one moves
 *               on baton's channels (PyTorch async TP's loop);
 *   fused       peers of this host read in place from a symmetric window the communicator keeps
 *               (ncclMemAlloc, NCCL_WIN_COLL_SYMMETRIC), one signal per block (device-API signals);
 *               peers of other hosts as decomposed;
 *   optimized   fused with peers visited in rank-rotated order, blocks to other hosts in chunks
 *               (BATON_FUSED_CHUNKS, BATON_FUSED_MIN_CHUNK_BYTES), naive where a block is too small;
 *   auto        (the default) optimized when every rank is on one host, naive across hosts.
 * A GEMM needs a CBLAS at run time (Debian's libopenblas0-pthread; ncclSystemError when none).
 * baton asks OpenBLAS for one thread (openblas_set_num_threads(1): process-wide, so a program
 * that calls OpenBLAS itself sets its own count again after the first fused call). */
#ifndef BATON_FUSED_H
#define BATON_FUSED_H

#include <stddef.h>

#include "nccl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* aGathered (optional, may be NULL, on each rank as it likes): receives allgather_rows(aShard)
 * [M x K], which the weight gradient of the backward pass needs again. */
ncclResult_t batonAllGatherGemm(const void* aShard, const void* b, void* c, void* aGathered, size_t m, size_t n,
                                size_t k, ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t batonGemmReduceScatter(const void* a, const void* bShard, void* cShard, size_t m, size_t n, size_t k,
                                    ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
/* dAShard or dB may be NULL (that gradient is not computed; every rank must pass NULL alike). */
ncclResult_t batonAllGatherGemmBackward(const void* aShard, const void* b, const void* dC, void* dAShard, void* dB,
                                        size_t m, size_t n, size_t k, ncclDataType_t datatype, ncclComm_t comm,
                                        cudaStream_t stream);
/* dA or dBShard may be NULL (likewise). */
ncclResult_t batonGemmReduceScatterBackward(const void* a, const void* bShard, const void* dCShard, void* dA,
                                            void* dBShard, size_t m, size_t n, size_t k, ncclDataType_t datatype,
                                            ncclComm_t comm, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif

/* baton's Mixture-of-Experts dispatch and combine, a public extra (NCCL has none; DeepEP and
 * pplx-kernels provide them on GPUs). Lesson: docs/lessons/12-moe-all-to-all.md.
 *
 * Experts: numExperts in all, numExperts / nRanks on each rank: expert e lives on rank
 * e / (numExperts / nRanks) as its local expert e % (numExperts / nRanks).
 *
 * Dispatch. Rank r holds numTokens tokens (any number, different per rank) of `hidden` elements,
 * row-major, and for each token topk expert ids (int32, row-major [numTokens x topk]; -1: no
 * expert in that slot; the ids of one token must differ). Each token travels once to every rank
 * hosting one of its experts. On that rank it appears once per local expert it chose, in
 * recvTokens [recvCapacity x hidden]: rows grouped by local expert (local expert 0's rows first),
 * within an expert ordered by source rank, then by token index at the source. recvPerExpert
 * [numExperts / nRanks] receives each local expert's row count, *numRecv their sum. If any rank
 * would receive more than its recvCapacity rows, every rank fails with ncclInvalidUsage naming that
 * rank and both counts before any token moves (*numRecv says how many rows this rank needs). The routing
 * (who sent which row) is kept in *routing, which combine reads and batonMoeRoutingDestroy frees.
 *
 * Combine. expertOut [numRecv x hidden] holds the experts' outputs in dispatch's row order; each
 * row returns to its token's rank, where out [numTokens x hidden] = sum over the token's experts of
 * topkWeights[t][j] * row (topkWeights: float [numTokens x topk]; NULL: every weight 1), summed
 * in fp32 (grouped as the stage says below) and rounded once to the datatype. A token with no expert
 * gets zeros.
 *
 * Backward passes (Comet ships its forward pass only; MoE training needs both):
 *   batonMoeDispatchBackward: gradTokens[t] = the sum, in fp32 rounded once, of the gradients of
 *     token t's rows (gradRecv, in dispatch's row order): a combine with every weight 1.
 *   batonMoeCombineBackward: for out[t] = sum_j w[t][j] * y(t, j), with expertOut the forward's y
 *     rows: gradExpertOut's row of (t, j) = w[t][j] * gradOut[t] (on the expert's rank, dispatch's
 *     row order), and, if gradWeights is not NULL, gradWeights[t][j] = <y(t, j), gradOut[t]> in fp32
 *     (0 for an empty slot), on the token's rank. topkWeights NULL: every weight 1. expertOut is
 *     required wherever the rank holds rows: a weight's gradient is computed where its row is.
 *
 * FP8 dispatch (batonMoeDispatchFp8; DeepEP's FP8 dispatch): as batonMoeDispatch, but each token
 * travels as OCP e4m3 bytes with one float scale per 128 elements, hidden + hidden/32 bytes instead
 * of 2 x hidden (bfloat16). hidden must be a multiple of 128. Each block's scale is
 * s = amax / 448 (1 for an all-zero block) and each element x travels as e4m3(x / s), rounded to
 * nearest even; recvTokens [recvCapacity x hidden] receives the e4m3 bytes and recvScales
 * [recvCapacity x hidden/128] the scales, in dispatch's row order, so element = e4m3 x scale, within
 *   |element - x| <= 2^-4 |x| + 2^-10 s   (half an e4m3 step; tokens must be finite).
 * The routing is that of a `datatype` dispatch: combine and the backward passes take and give
 * `datatype` rows (e.g. bfloat16 combine after an FP8 dispatch, as DeepEP does).
 *
 * Dispatch with the experts' first GEMM (batonMoeDispatchGemm; Comet's overlap, arXiv:2502.19811):
 * as batonMoeDispatch, and then expertOut [recvCapacity x ffn] = each received row times its local
 * expert's weights expertWeights[e] ([hidden x ffn] row-major, the datatype; e = 0 ..
 * numExperts/nRanks - 1), in fp32 and rounded once, in dispatch's row order. In the lowlatency stage
 * each source's rows are multiplied as soon as that source's tokens are in, while later sources'
 * are still being stored; the other stages multiply once the exchange is over. Needs a BLAS
 * (OpenBLAS, loaded at run time as for include/baton/fused.h).
 *
 * Datatypes: ncclFloat, ncclBfloat16. Every call is collective over comm's ranks and returns when
 * this rank's outputs are complete; not inside ncclGroupStart/End. Ranks that disagree on hidden,
 * numExperts, topk, the datatype or the stage fail on every rank with a message naming both.
 *
 * Stages (BATON_MOE_STAGE = naive | alltoallv | normal | lowlatency | auto):
 *   naive      every rank all-gathers every token and its expert ids (ncclAllGather, padded to the
 *              largest token count) and keeps the rows of its experts; combine: each rank sums its
 *              weighted rows for every token of every rank in fp32, a ReduceScatter adds the ranks'
 *              sums;
 *   alltoallv  the counts exchange (one all-gather of every rank's per-peer counts, on which the
 *              host waits), then batonAlltoAllv moves each token once per destination rank (with
 *              its expert ids) and combine moves the rows back the same way;
 *   normal     dispatch as alltoallv; combine reduces on the experts' rank (DeepEP's normal
 *              layout): the token's weights go there first, each rank sums its rows of a token in
 *              fp32, and one fp32 partial per (token, rank) returns to be added at the token's rank;
 *   lowlatency no transport FIFO at all. Tokens (once per rank, with their ids), then combine's
 *              weights and fp32 partials, are written straight into the peers' symmetric
 *              windows, each block announced by one signal that only grows: on one host a store
 *              and a release add, to a rank of another host one put-with-signal per block
 *              through the proxies (include/baton/device.h's batonPutSignal); combines
 *              alternate between two halves of the window, so consecutive calls need no reset;
 *   auto       (the default) lowlatency: the fastest stage at every shape measured, on one host
 *              and across two (docs/perf.md).
 * Every stage gives the same rows in the same order. Combined outputs are the same fp32 sums
 * grouped differently (alltoallv in slot order; the others per rank first), so they agree bit
 * for bit where the sums are exact (e.g. integer-valued data) and otherwise within fp32 rounding. */
#ifndef BATON_MOE_H
#define BATON_MOE_H

#include <stddef.h>
#include <stdint.h>

#include "nccl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct batonMoeRouting* batonMoeRouting_t;

ncclResult_t batonMoeDispatch(const void* tokens, const int32_t* topkIdx, size_t numTokens, size_t hidden,
                              int numExperts, int topk, ncclDataType_t datatype, void* recvTokens, size_t recvCapacity,
                              size_t* recvPerExpert, size_t* numRecv, batonMoeRouting_t* routing, ncclComm_t comm,
                              cudaStream_t stream);

ncclResult_t batonMoeDispatchFp8(const void* tokens, const int32_t* topkIdx, size_t numTokens, size_t hidden,
                                 int numExperts, int topk, ncclDataType_t datatype, void* recvTokens, float* recvScales,
                                 size_t recvCapacity, size_t* recvPerExpert, size_t* numRecv,
                                 batonMoeRouting_t* routing, ncclComm_t comm, cudaStream_t stream);

ncclResult_t batonMoeDispatchGemm(const void* tokens, const int32_t* topkIdx, size_t numTokens, size_t hidden,
                                  int numExperts, int topk, ncclDataType_t datatype, const void* const* expertWeights,
                                  size_t ffn, void* recvTokens, void* expertOut, size_t recvCapacity,
                                  size_t* recvPerExpert, size_t* numRecv, batonMoeRouting_t* routing, ncclComm_t comm,
                                  cudaStream_t stream);

ncclResult_t batonMoeCombine(const void* expertOut, const float* topkWeights, void* out, batonMoeRouting_t routing,
                             ncclComm_t comm, cudaStream_t stream);

ncclResult_t batonMoeDispatchBackward(const void* gradRecv, void* gradTokens, batonMoeRouting_t routing,
                                      ncclComm_t comm, cudaStream_t stream);

ncclResult_t batonMoeCombineBackward(const void* gradOut, const float* topkWeights, const void* expertOut,
                                     void* gradExpertOut, float* gradWeights, batonMoeRouting_t routing,
                                     ncclComm_t comm, cudaStream_t stream);

ncclResult_t batonMoeRoutingDestroy(batonMoeRouting_t routing);

#ifdef __cplusplus
}
#endif

#endif /* BATON_MOE_H */

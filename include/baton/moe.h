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
 * in fp32 in the order j = 0 .. topk-1 and rounded once to the datatype. A token with no expert
 * gets zeros.
 *
 * Backward passes (Comet and DeepEP's normal kernels ship none; MoE training needs both):
 *   batonMoeDispatchBackward: gradTokens[t] = the sum, in fp32 rounded once, of the gradients of
 *     token t's rows (gradRecv, in dispatch's row order): a combine with every weight 1.
 *   batonMoeCombineBackward: for out[t] = sum_j w[t][j] * y(t, j), with expertOut the forward's y
 *     rows: gradExpertOut's row of (t, j) = w[t][j] * gradOut[t] (on the expert's rank, dispatch's
 *     row order), and, if gradWeights is not NULL, gradWeights[t][j] = <y(t, j), gradOut[t]> in fp32
 *     (0 for an empty slot), on the token's rank. topkWeights NULL: every weight 1. expertOut is
 *     required wherever the rank holds rows: a weight's gradient is computed where its row is.
 *
 * Datatypes: ncclFloat, ncclBfloat16. Every call is collective over comm's ranks and returns when
 * this rank's outputs are complete; not inside ncclGroupStart/End. Ranks that disagree on hidden,
 * numExperts, topk, the datatype or the stage fail on every rank with a message naming both.
 *
 * Stages (BATON_MOE_STAGE = naive | alltoallv | auto):
 *   naive      every rank all-gathers every token and its expert ids (ncclAllGather, padded to the
 *              largest token count) and keeps the rows of its experts; combine: each rank sums its
 *              weighted rows for every token of every rank in fp32, a ReduceScatter adds the ranks'
 *              sums;
 *   alltoallv  the counts exchange (one all-gather of every rank's per-peer counts, on which the
 *              host waits), then batonAlltoAllv moves each token once per destination rank (with
 *              its expert ids) and combine moves the rows back the same way;
 *   auto       (the default) alltoallv.
 * Both give the same rows in the same order and the same combined output, bit for bit. */
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

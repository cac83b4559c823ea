/* baton's AlltoAllv, a public extra: NCCL has none (its users post grouped ncclSend/ncclRecv), and
 * MoE dispatch needs one. MPI_Alltoallv's arguments in NCCL's style. Lesson:
 * docs/lessons/12-moe-all-to-all.md.
 *
 * Rank r sends sendcounts[p] elements from sendbuff + sdispls[p] to every rank p (itself included),
 * and receives recvcounts[p] elements from rank p into recvbuff + rdispls[p]. Counts and
 * displacements are in elements of datatype; each array has one entry per rank of comm. Any count
 * may be 0 (its pointer then may be NULL). recvcounts[p] on rank r must equal sendcounts[r] on
 * rank p, as a receive must match its send: the Bruck algorithm announces its sizes and fails
 * naming both counts; the others, like ncclSend/ncclRecv, detect a differing count where a FIFO
 * step's size disagrees and otherwise leave the result undefined. sendbuff == recvbuff is refused.
 *
 * Collective over comm's ranks; may be issued inside ncclGroupStart/End like any collective; the
 * stream is accepted and ignored on the CPU backend. The algorithm is ncclAlltoAll's
 * (BATON_ALLTOALL_ALGO = direct | pairwise | bruck | auto). */
#ifndef BATON_ALLTOALLV_H
#define BATON_ALLTOALLV_H

#include <stddef.h>

#include "nccl.h"

#ifdef __cplusplus
extern "C" {
#endif

ncclResult_t batonAlltoAllv(const void* sendbuff, const size_t sendcounts[], const size_t sdispls[], void* recvbuff,
                            const size_t recvcounts[], const size_t rdispls[], ncclDataType_t datatype, ncclComm_t comm,
                            cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* BATON_ALLTOALLV_H */

/* baton's fault-tolerance extras, a public extra (not part of NCCL's API). NCCL detects nothing
 * and leaves agreeing on who failed to the application; baton's watchdog detects dead, hung and
 * unreachable ranks (BATON_TIMEOUT), revokes the communicator on every survivor and runs an
 * agreement among them, so every survivor can pass the same list to ncclCommShrink.
 * Lesson: docs/lessons/10-fault-tolerance.md. */
#ifndef BATON_MEMBERSHIP_H
#define BATON_MEMBERSHIP_H

#include "nccl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The ranks of `comm` that failed, as every survivor agrees (the same list, ascending, on each).
 * Waits for the agreement (a few BATON_TIMEOUTs at most) and starts one if this rank knows of a
 * failure no agreement covered yet; on a healthy communicator it returns nFailed = 0. Usable on a
 * revoked or failed communicator: that is what it is for.
 * - ranks may be NULL when maxRanks is 0 (a count query); with more failed ranks than maxRanks the
 *   first maxRanks are written, *nFailed is the full count and the result is ncclInvalidArgument.
 * - ncclRemoteError: this rank was itself declared failed by the others (it was silent too long),
 *   or the survivors are not a majority of comm's ranks (half, with rank 0 among them, counts):
 *   after a cut link, only one side may go on. *nFailed and ranks are still filled.
 * - A communicator whose ranks are all threads of one process has no watchdog (they share one
 *   fate): nFailed = 0. With BATON_TIMEOUT=0 there is no watchdog either: ncclInvalidUsage. */
ncclResult_t batonCommGetFailedRanks(ncclComm_t comm, int* ranks, int maxRanks, int* nFailed);

#ifdef __cplusplus
}
#endif

#endif

// All-or-nothing AllReduce (lesson 10, BATON_ATOMIC_COLLECTIVES=1), PCCL's guarantee with NCCL's
// API: every survivor gets the identical result, or every survivor gets ncclRemoteError and its
// receive buffer holds its original input (in place too), so the application can shrink and retry.
//
//   1. back up the input if the operation overwrites it (in place);
//   2. run the AllReduce as usual; it succeeds or fails on this rank;
//   3. vote: every rank proposes "my part failed" (the nack bit) and the ranks it knows dead; the
//      agreement of agreement.h gives every survivor the same decision even if a rank dies while
//      voting (a dead voter is in the decided set);
//   4. commit only if the decision is empty; else restore and fail, on every survivor alike.
//
// A rank whose part succeeded still rolls back when another's failed: its result may be complete,
// but another survivor's may not be, and "identical on all" is the promise. The vote costs one
// or two rounds of small messages on the watchdog mesh per AllReduce.
//
// It needs the vote, so the call must return to the caller between the operation and the vote:
// blocking communicator, outside a group. Ranks that are threads of one process share one fate and
// have no watchdog: there the AllReduce only restores this rank's input when it fails.
#include <cstring>
#include <string>
#include <vector>

#include "comm.h"
#include "comm_error.h"
#include "fault/atomic_allreduce.h"
#include "fault/watchdog.h"
#include "group.h"
#include "misc/debug.h"

namespace baton {

ncclResult_t atomicAllReduce(ncclComm* comm, const Task& t, const std::function<ncclResult_t()>& run) {
  const char* fn = "ncclAllReduce";
  if (inGroup() || !comm->blocking)
    return batonError(ncclInvalidUsage,
                      "%s: with BATON_ATOMIC_COLLECTIVES=1 an AllReduce votes on its outcome before it returns, so it "
                      "needs a blocking communicator and a call outside ncclGroupStart/ncclGroupEnd (comm %p%s)",
                      fn, (void*)comm, inGroup() ? ", inside a group" : ", non-blocking");
  const size_t bytes = t.count * typeSize(t.type);
  const bool inPlace = t.sendbuff == t.recvbuff;
  std::vector<char> backup;
  if (inPlace) backup.assign(static_cast<const char*>(t.sendbuff), static_cast<const char*>(t.sendbuff) + bytes);
  const uint64_t seq = ++comm->atomicSeq;

  // A communicator already in error does not run the operation, but still votes (nack), so the
  // others' vote on this operation ends at once instead of waiting for this rank.
  const bool failedBefore = comm->asyncError.load() != ncclSuccess;
  ncclResult_t res = failedBefore ? (ncclResult_t)comm->asyncError.load() : run();
  const std::string localError = res == ncclSuccess ? "" : failedBefore ? commFirstError(comm) : lastError();

  RankSet decision(comm->nRanks + 1);
  if (res != ncclSuccess) decision.add(comm->nRanks);
  if (comm->watchdog) {
    // A non-empty proposal can only lead to "roll back" (the decision is a union that includes it,
    // or excludes this rank, which is not empty either): vote, so the others' vote ends, and do not
    // wait, since a survivor stuck in an earlier, unvoted operation may never vote on this one.
    const RankSet proposal = decision;
    const uint64_t wait = proposal.empty() ? 4 * comm->watchdog->timeoutNs() + 2000000000ull : 0;
    comm->inflight.fetch_add(1);  // ncclCommAbort from another thread waits for the vote to return
    const ncclResult_t v = comm->watchdog->agree(kAgreeVoteKind + seq, proposal, wait, &decision);
    comm->inflight.fetch_sub(1);
    if (v != ncclSuccess) decision.add(comm->nRanks);  // no decision: this rank cannot claim success
  }
  if (decision.empty()) return ncclSuccess;

  // Roll back: this rank's receive buffer holds its input again.
  if (inPlace) memcpy(t.recvbuff, backup.data(), bytes);
  else memmove(t.recvbuff, t.sendbuff, bytes);
  std::string failed;
  for (int r = 0; r < comm->nRanks; ++r)
    if (decision.has(r)) failed += (failed.empty() ? "" : ",") + std::to_string(r);
  char why[768];
  snprintf(why, sizeof why,
           "%s #%llu (all-or-nothing, BATON_ATOMIC_COLLECTIVES=1) rolled back on every survivor: %s%s; recvbuff "
           "holds this rank's input again%s%s",
           fn, (unsigned long long)seq, failed.empty() ? "" : ("failed ranks " + failed).c_str(),
           decision.has(comm->nRanks) ? (failed.empty() ? "a rank's part failed" : ", a rank's part failed") : "",
           localError.empty() ? "" : "; here: ", localError.c_str());
  commSetError(comm, ncclRemoteError, why);  // the communicator is done on every rank alike
  return batonError(ncclRemoteError, "%s", why);
}

}  // namespace baton

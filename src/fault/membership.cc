// Membership changes with NCCL's API and semantics (lesson 10): ncclCommRevoke stops a
// communicator's work without freeing it, ncclCommShrink makes a communicator of the survivors.
//
// NCCL leaves deciding who failed to the application: every survivor passes the same exclude
// list, and the excluded ranks do not call. Shrink never talks to an excluded rank: the child's
// rank 0 (the lowest surviving parent rank) makes a bootstrap root and sends its id to the other
// survivors over the parent's bootstrap, point to point (no collective over the parent).
// The entry points check their arguments (src/api/fault_api.cc); this is the work (membership.h).
#include "fault/membership.h"

#include <set>
#include <vector>

#include "comm.h"
#include "comm_error.h"
#include "fault/child_comm.h"
#include "fault/watchdog.h"
#include "group.h"
#include "misc/debug.h"

namespace baton {
namespace {

constexpr uint64_t kTagShrink = 5u << 16;  // + 16 bits of the exclude list's hash (connect.cc has 1..4)

}  // namespace

void commRevoke(ncclComm* comm) {
  comm->revoked.store(true);  // first, so work submitted from now on is refused
  commAnnounceFailure(comm);  // ring neighbours still waiting on this rank stop too
  commQuiesce(comm);          // in-flight operations end (with an error) and nothing is left running
}

ncclResult_t commShrink(ncclComm* comm, const std::set<int>& excluded, ncclComm_t* newcomm, const ncclConfig_t* config,
                        int shrinkFlags, const char* fn) {
  ncclConfig_t cfg = comm->config;  // NULL config: inherit the parent's
  if (config) cfg = *config;
  *newcomm = nullptr;
  std::vector<int> survivors;
  int newRank = 0;
  for (int r = 0; r < comm->nRanks; ++r) {
    if (excluded.count(r)) continue;
    if (r == comm->rank) newRank = (int)survivors.size();
    survivors.push_back(r);
  }
  // NCCL_SHRINK_ABORT: stop whatever the parent still runs (an operation stuck on a dead peer)
  // before its bootstrap is used. DEFAULT expects an idle, healthy parent.
  if (shrinkFlags == NCCL_SHRINK_ABORT) commQuiesce(comm);
  // The tag names the exclude list, not a count of attempts: survivors that retried a different
  // number of times (one agreed before a second failure, another after) still meet on the same list.
  uint64_t listHash = 1469598103934665603ull;  // FNV-1a over the sorted list
  for (int r : excluded) listHash = (listHash ^ (uint64_t)r) * 1099511628211ull;
  const uint64_t tag = kTagShrink + (listHash & 0xffff);
  BATON_INFO(kSubInit, "%s: rank %d of %d -> rank %d of %d (%d excluded%s)", fn, comm->rank, comm->nRanks, newRank,
             (int)survivors.size(), (int)excluded.size(),
             shrinkFlags == NCCL_SHRINK_ABORT ? ", parent work aborted" : "");
  auto job = [comm, survivors, newRank, tag, cfg, newcomm, fn]() -> ncclResult_t {
    auto getId = [comm, survivors, newRank, tag](ncclUniqueId* id) {
      return childIdFromRank0(comm, survivors, newRank, tag, id);
    };
    return commInitChild(comm, survivors, (int)survivors.size(), newRank, getId, cfg, fn, newcomm);
  };
  if (inGroup()) {
    groupAddInitJob(comm, job);  // at ncclGroupEnd, with the other ranks' shrinks driven by this thread
    return ncclSuccess;
  }
  return job();
}

ncclResult_t commFailedRanks(ncclComm* comm, int* ranks, int maxRanks, int* nFailed, const char* fn) {
  *nFailed = 0;
  if (!comm->watchdog) {
    if (comm->tun.failTimeoutNs == 0)
      return batonError(ncclInvalidUsage,
                        "%s: failure detection is off (BATON_TIMEOUT=0), so there is nothing to agree on", fn);
    return ncclSuccess;  // every rank is a thread of this process: none can fail alone
  }
  RankSet failed;
  // Rounds end when the last awaited rank answers or is found dead (BATON_TIMEOUT); a few rounds
  // at most when failures keep coming.
  comm->inflight.fetch_add(1);  // ncclCommAbort from another thread waits for this to return
  const ncclResult_t res = comm->watchdog->failedRanks(4 * comm->watchdog->timeoutNs() + 2000000000ull, &failed);
  comm->inflight.fetch_sub(1);
  BATON_CHECK(res);
  int n = 0;
  for (int r = 0; r < comm->nRanks; ++r) {
    if (!failed.has(r)) continue;
    if (n < maxRanks) ranks[n] = r;
    ++n;
  }
  *nFailed = n;
  const int alive = comm->nRanks - n;
  if (failed.has(comm->rank))
    return batonError(ncclRemoteError,
                      "%s: rank %d was declared failed by the other ranks (they did not hear from it "
                      "within BATON_TIMEOUT); it must leave the job",
                      fn, comm->rank);
  if (2 * alive < comm->nRanks || (2 * alive == comm->nRanks && failed.has(0)))
    return batonError(ncclRemoteError,
                      "%s: only %d of %d ranks survive on this side%s: a minority cannot tell dead "
                      "ranks from a cut link, so it must not go on",
                      fn, alive, comm->nRanks, 2 * alive == comm->nRanks ? " (half, without rank 0)" : "");
  if (n > maxRanks)
    return batonError(ncclInvalidArgument, "%s: %d ranks failed but ranks holds only maxRanks = %d", fn, n, maxRanks);
  return ncclSuccess;
}

}  // namespace baton

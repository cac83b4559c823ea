// Membership and failures (lesson 10): ncclCommRevoke, ncclCommShrink, batonCommGetFailedRanks
// (include/baton/membership.h), ncclCommGetUniqueId and ncclCommGrow. Everything is checked here
// before anything changes, so bad input leaves the communicator as it was; the work is
// src/fault/'s (membership.h).
#include <cstring>
#include <set>

#include "api/api.h"
#include "api/argcheck.h"
#include "api/comm_init.h"
#include "baton/membership.h"
#include "comm.h"
#include "fault/membership.h"
#include "misc/debug.h"

using namespace baton;

NCCL_API(ncclResult_t, ncclCommRevoke, ncclComm_t comm, int revokeFlags);
ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  const char* fn = "ncclCommRevoke";
  BATON_CHECK(checkCommParent(comm, fn));
  if (revokeFlags != NCCL_REVOKE_DEFAULT)
    return batonError(ncclInvalidArgument, "%s: revokeFlags %d must be NCCL_REVOKE_DEFAULT (0)", fn, revokeFlags);
  if (comm->revoked.load()) return batonError(ncclInvalidUsage, "%s: comm %p was already revoked", fn, (void*)comm);
  commRevoke(comm);
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommShrink, ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
         ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags);
ncclResult_t pncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
                             ncclConfig_t* config, int shrinkFlags) {
  const char* fn = "ncclCommShrink";
  // Everything is checked before anything changes: bad input leaves the parent as it was.
  BATON_CHECK(checkCommParent(comm, fn));
  if (!newcomm) return batonError(ncclInvalidArgument, "%s: newcomm is NULL", fn);
  if (shrinkFlags != NCCL_SHRINK_DEFAULT && shrinkFlags != NCCL_SHRINK_ABORT)
    return batonError(ncclInvalidArgument,
                      "%s: shrinkFlags %d is neither NCCL_SHRINK_DEFAULT (0) nor NCCL_SHRINK_ABORT (1)", fn,
                      shrinkFlags);
  if (excludeRanksCount < 0 || excludeRanksCount >= comm->nRanks)
    return batonError(ncclInvalidArgument, "%s: excludeRanksCount %d must be in [0, %d) for a communicator of %d ranks",
                      fn, excludeRanksCount, comm->nRanks, comm->nRanks);
  if (excludeRanksCount > 0 && !excludeRanksList)
    return batonError(ncclInvalidArgument, "%s: excludeRanksList is NULL with excludeRanksCount %d", fn,
                      excludeRanksCount);
  std::set<int> excluded;
  for (int i = 0; i < excludeRanksCount; ++i) {
    const int r = excludeRanksList[i];
    if (r < 0 || r >= comm->nRanks)
      return batonError(ncclInvalidArgument, "%s: excludeRanksList[%d] = %d is not a rank of this communicator (0..%d)",
                        fn, i, r, comm->nRanks - 1);
    if (r == comm->rank)
      return batonError(
          ncclInvalidArgument,
          "%s: excludeRanksList[%d] = %d is the calling rank: excluded ranks must not call ncclCommShrink", fn, i, r);
    if (!excluded.insert(r).second)
      return batonError(ncclInvalidArgument, "%s: excludeRanksList[%d] = %d appears twice", fn, i, r);
  }
  return commShrink(comm, excluded, newcomm, config, shrinkFlags, fn);
}

extern "C" __attribute__((visibility("default"))) ncclResult_t batonCommGetFailedRanks(ncclComm_t comm, int* ranks,
                                                                                       int maxRanks, int* nFailed) {
  const char* fn = "batonCommGetFailedRanks";
  BATON_CHECK(checkCommParent(comm, fn));
  if (!nFailed) return batonError(ncclInvalidArgument, "%s: nFailed is NULL", fn);
  if (maxRanks < 0) return batonError(ncclInvalidArgument, "%s: maxRanks %d is negative", fn, maxRanks);
  if (maxRanks > 0 && !ranks)
    return batonError(ncclInvalidArgument, "%s: ranks is NULL with maxRanks %d", fn, maxRanks);
  return commFailedRanks(comm, ranks, maxRanks, nFailed, fn);
}

NCCL_API(ncclResult_t, ncclCommGetUniqueId, ncclComm_t comm, ncclUniqueId* uniqueId);
ncclResult_t pncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId* uniqueId) {
  const char* fn = "ncclCommGetUniqueId";
  BATON_CHECK(checkCommReady(comm, fn));
  if (!uniqueId) return batonError(ncclInvalidArgument, "%s: uniqueId is NULL", fn);
  if (comm->growIdSet)
    return batonError(ncclInvalidUsage,
                      "%s: comm %p already has a grow id that no ncclCommGrow has used yet (one at a time)", fn,
                      (void*)comm);
  return commMakeGrowId(comm, uniqueId);
}

NCCL_API(ncclResult_t, ncclCommGrow, ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank,
         ncclComm_t* newcomm, ncclConfig_t* config);
ncclResult_t pncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank, ncclComm_t* newcomm,
                           ncclConfig_t* config) {
  const char* fn = "ncclCommGrow";
  if (!newcomm) return batonError(ncclInvalidArgument, "%s: newcomm is NULL", fn);
  if (uniqueId && !isGrowId(uniqueId))
    return batonError(ncclInvalidArgument,
                      "%s: uniqueId was not made by ncclCommGetUniqueId (a foreign id, e.g. from ncclGetUniqueId)", fn);
  if (!comm) {  // a new rank
    if (!uniqueId)
      return batonError(ncclInvalidArgument, "%s: a new rank (comm NULL) must pass the id from ncclCommGetUniqueId",
                        fn);
    if (nRanks < 2 || rank < 0 || rank >= nRanks)
      return batonError(ncclInvalidArgument, "%s: a new rank needs 0 <= rank < nRanks; got rank %d, nRanks %d", fn,
                        rank, nRanks);
    const ncclUniqueId id = growIdPlain(*uniqueId);
    return initRank(newcomm, nRanks, &id, rank, config, fn, 0);
  }
  // An existing rank: everything is checked before anything changes.
  BATON_CHECK(checkCommReady(comm, fn));
  if (rank != -1 && rank != comm->rank)
    return batonError(ncclInvalidArgument, "%s: existing ranks keep their numbers: pass rank -1 (or %d), not %d", fn,
                      comm->rank, rank);
  if (nRanks <= comm->nRanks)
    return batonError(ncclInvalidArgument, "%s: nRanks %d must be larger than comm's %d ranks", fn, nRanks,
                      comm->nRanks);
  if (uniqueId && !(comm->growIdSet && memcmp(uniqueId, &comm->growId, sizeof *uniqueId) == 0)) {
    const bool used = comm->growIdUsedSet && memcmp(uniqueId, &comm->growIdUsed, sizeof *uniqueId) == 0;
    return batonError(ncclInvalidArgument, "%s: uniqueId %s", fn,
                      used ? "was already used by an earlier ncclCommGrow: ask ncclCommGetUniqueId for a new one"
                           : "is not the id ncclCommGetUniqueId returned for this communicator");
  }
  return commGrow(comm, nRanks, uniqueId, newcomm, config, fn);
}

// Growing a communicator with NCCL 2.29's API (lesson 10): ncclCommGetUniqueId and ncclCommGrow.
//
// The grown communicator is a new one: existing ranks keep their numbers, new ranks take the
// numbers from the old size up. One existing rank asks its communicator for an id (a fresh
// bootstrap root, marked as a grow id) and gives it to the new processes out of band; the
// existing ranks learn it from that rank with one allgather over the old communicator's bootstrap
// (they pass NULL), the new ranks from the application. Then all of them init the new
// communicator over that id, as ncclCommInitRank would. The old communicator stays usable until the
// application destroys it (NCCL's recipe destroys it right away).
#include <cstring>

#include "api/api.h"
#include "api/argcheck.h"
#include "comm.h"
#include "fault/child_comm.h"
#include "group.h"
#include "misc/debug.h"

using namespace baton;

namespace {

// The last 8 bytes of a grow id; ncclGetUniqueId's ids keep them zero (so ncclCommInitRank
// refuses a grow id, and ncclCommGrow a plain one).
constexpr uint64_t kGrowMarker = 0x776f72676e6f7462ull;  // "btongrow"
constexpr size_t kMarkerAt = sizeof(ncclUniqueId) - sizeof(uint64_t);

bool isGrowId(const ncclUniqueId* id) {
  uint64_t m;
  memcpy(&m, id->internal + kMarkerAt, sizeof m);
  return m == kGrowMarker;
}

ncclUniqueId plainId(const ncclUniqueId& id) {
  ncclUniqueId p = id;
  memset(p.internal + kMarkerAt, 0, sizeof(uint64_t));
  return p;
}

}  // namespace

NCCL_API(ncclResult_t, ncclCommGetUniqueId, ncclComm_t comm, ncclUniqueId* uniqueId);
ncclResult_t pncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId* uniqueId) {
  const char* fn = "ncclCommGetUniqueId";
  BATON_CHECK(checkCommReady(comm, fn));
  if (!uniqueId) return batonError(ncclInvalidArgument, "%s: uniqueId is NULL", fn);
  if (comm->growIdSet)
    return batonError(ncclInvalidUsage,
                      "%s: comm %p already has a grow id that no ncclCommGrow has used yet (one at a time)", fn,
                      (void*)comm);
  BATON_CHECK(bootstrapGetUniqueIdFresh(uniqueId));
  memcpy(uniqueId->internal + kMarkerAt, &kGrowMarker, sizeof kGrowMarker);
  comm->growId = *uniqueId;
  comm->growIdSet = true;
  return ncclSuccess;
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
    const ncclUniqueId id = plainId(*uniqueId);
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
  *newcomm = nullptr;
  ncclConfig_t cfg = comm->config;
  if (config) cfg = *config;
  struct Offer {
    int32_t has, pad;
    ncclUniqueId id;
  };
  Offer mine{uniqueId ? 1 : 0, 0, uniqueId ? *uniqueId : ncclUniqueId{}};
  if (uniqueId) {  // single use, whatever happens next
    comm->growIdSet = false;
    comm->growIdUsed = *uniqueId;
    comm->growIdUsedSet = true;
  }
  auto getId = [comm, mine, fn](ncclUniqueId* id) -> ncclResult_t {
    std::vector<Offer> all(comm->nRanks);
    all[comm->rank] = mine;
    BATON_CHECK(comm->bootstrap->allGather(all.data(), sizeof(Offer)));
    int holder = -1;
    for (int r = 0; r < comm->nRanks; ++r) {
      if (!all[r].has) continue;
      if (holder >= 0)
        return batonError(ncclInvalidUsage,
                          "%s: ranks %d and %d both passed a uniqueId; exactly one existing rank passes it", fn, holder,
                          r);
      holder = r;
    }
    if (holder < 0)
      return batonError(ncclInvalidUsage, "%s: no existing rank passed the uniqueId from ncclCommGetUniqueId", fn);
    *id = plainId(all[holder].id);
    return ncclSuccess;
  };
  std::vector<int> members;
  for (int r = 0; r < comm->nRanks; ++r) members.push_back(r);
  const int myRank = comm->rank;
  auto job = [comm, members, nRanks, myRank, getId, cfg, fn, newcomm]() -> ncclResult_t {
    return commInitChild(comm, members, nRanks, myRank, getId, cfg, fn, newcomm);
  };
  if (inGroup()) {
    groupAddInitJob(comm, job);
    return ncclSuccess;
  }
  return job();
}

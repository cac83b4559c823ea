// Growing a communicator with NCCL 2.29's API (lesson 10): ncclCommGetUniqueId and ncclCommGrow.
//
// The grown communicator is a new one: existing ranks keep their numbers, new ranks take the
// numbers from the old size up. One existing rank asks its communicator for an id (a fresh
// bootstrap root, marked as a grow id) and gives it to the new processes out of band; the
// existing ranks learn it from that rank with one allgather over the old communicator's bootstrap
// (they pass NULL), the new ranks from the application. Then all of them init the new
// communicator over that id, as ncclCommInitRank would. The old communicator stays usable until the
// application destroys it (NCCL's recipe destroys it right away). The entry points check their
// arguments (src/api/fault_api.cc); this is the work, on checked arguments (membership.h).
#include <cstring>

#include "comm.h"
#include "fault/child_comm.h"
#include "fault/membership.h"
#include "group.h"
#include "misc/debug.h"

namespace baton {
namespace {

// The last 8 bytes of a grow id; ncclGetUniqueId's ids keep them zero (so ncclCommInitRank
// refuses a grow id, and ncclCommGrow a plain one).
constexpr uint64_t kGrowMarker = 0x776f72676e6f7462ull;  // "btongrow"
constexpr size_t kMarkerAt = sizeof(ncclUniqueId) - sizeof(uint64_t);

}  // namespace

bool isGrowId(const ncclUniqueId* id) {
  uint64_t m;
  memcpy(&m, id->internal + kMarkerAt, sizeof m);
  return m == kGrowMarker;
}

ncclUniqueId growIdPlain(const ncclUniqueId& id) {
  ncclUniqueId p = id;
  memset(p.internal + kMarkerAt, 0, sizeof(uint64_t));
  return p;
}

ncclResult_t commMakeGrowId(ncclComm* comm, ncclUniqueId* uniqueId) {
  BATON_CHECK(bootstrapGetUniqueIdFresh(uniqueId));
  memcpy(uniqueId->internal + kMarkerAt, &kGrowMarker, sizeof kGrowMarker);
  comm->growId = *uniqueId;
  comm->growIdSet = true;
  return ncclSuccess;
}

ncclResult_t commGrow(ncclComm* comm, int nRanks, const ncclUniqueId* uniqueId, ncclComm_t* newcomm,
                      const ncclConfig_t* config, const char* fn) {
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
    *id = growIdPlain(all[holder].id);
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

}  // namespace baton

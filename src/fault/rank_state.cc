// A rank's RAS state (rank_state.h), filled from the communicator by any thread.
#include "fault/rank_state.h"

#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "comm.h"
#include "misc/debug.h"
#include "misc/param.h"

namespace baton {

void rasHostName(char* out, size_t size) {
  const std::string hostId = envStr("NCCL_HOSTID");
  if (!hostId.empty()) snprintf(out, size, "%s", hostId.c_str());
  else if (gethostname(out, size - 1) != 0) snprintf(out, size, "unknown");
  out[size - 1] = '\0';
}

RasRankState rasStateOf(ncclComm* comm) {
  RasRankState s;
  s.commHash = comm->commHash;
  s.rank = comm->rank, s.nRanks = comm->nRanks;
  s.pid = (int32_t)getpid();
  s.initState = comm->initState.load();
  s.asyncError = comm->asyncError.load();
  if (comm->finalized.load()) s.flags |= kRasFinalized;
  if (flagIsSet(&comm->abortFlag)) s.flags |= kRasAborted;
  if (comm->revoked.load()) s.flags |= kRasRevoked;
  for (int f = 0; f < kFuncCount; ++f) s.collCount[f] = comm->collCounts[f].load(std::memory_order_relaxed);
  rasHostName(s.host, sizeof s.host);
  if (!comm->flight) return s;
  std::vector<FlightRecord> records;
  std::vector<FlightChannelView> channels;
  comm->flight->snapshot(&records, &channels);
  for (auto r = records.rbegin(); r != records.rend(); ++r) {
    if (r->op.kind != kFlightColl) continue;
    s.lastSeq = r->op.seq, s.lastFunc = r->op.func;
    if (r->done) s.flags |= kRasLastDone;
    break;
  }
  const uint64_t now = nowNs();
  for (const FlightChannelView& ch : channels) {
    if (ch.note.state == 0 || ch.note.peer == 0) continue;
    s.flags |= kRasWaiting;
    s.waitPeer = (int32_t)ch.note.peer - 1;
    s.waitMs = ch.note.sinceNs && now > ch.note.sinceNs ? (now - ch.note.sinceNs) / 1000000 : 0;
    break;
  }
  return s;
}

}  // namespace baton

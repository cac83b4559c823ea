// What one rank tells NCCL's RAS service about itself (lesson 14, docs/fault-tolerance.md, "The
// RAS service"): its communicator's status, its collective counts and, from the flight recorder,
// its last operation and the peer it waits for. A fixed block of 64-bit words, so it crosses the
// watchdog's mesh as one frame: the watchdog (watchdog.cc) answers a peer's query with it from its
// own thread, so a query never waits for, or stalls, the rank's collectives; the service that asks
// (src/ras/) sits above.
#pragma once

#include <cstddef>
#include <cstdint>

#include "coll_args.h"

struct ncclComm;

namespace baton {

enum RasFlags : uint32_t { kRasFinalized = 1, kRasAborted = 2, kRasRevoked = 4, kRasWaiting = 8, kRasLastDone = 16 };

struct RasRankState {
  uint64_t commHash = 0;
  int32_t rank = -1, nRanks = 0;
  int32_t pid = 0, initState = 0;       // ncclResult_t: 0 initialised, 7 (ncclInProgress) still initialising
  int32_t asyncError = 0;               // what ncclCommGetAsyncError would return
  uint32_t flags = 0;                   // RasFlags
  uint64_t collCount[kFuncCount] = {};  // collectives planned, by CollFunc
  uint64_t lastSeq = 0;                 // the last collective's number (opCount), when one was recorded
  int32_t lastFunc = -1;                // its CollFunc (-1: none recorded)
  int32_t waitPeer = -1;                // kRasWaiting: the peer a channel's wait is stalled on
  uint64_t waitMs = 0;                  // kRasWaiting: for how long
  char host[64] = {};                   // NCCL_HOSTID where set, else the host name
};
static_assert(sizeof(RasRankState) % 8 == 0, "sent as 64-bit words");
constexpr uint32_t kRasStateWords = sizeof(RasRankState) / 8;

// This rank's state, read from other threads without a lock (atomics and the recorder's snapshot).
RasRankState rasStateOf(ncclComm* comm);
// This host's name as RAS and the dumps give it: NCCL_HOSTID where set (namespaced hosts share a
// host name), else gethostname.
void rasHostName(char* out, size_t size);

}  // namespace baton

// NCCL's RAS status, as text for a person and JSON for a program (lesson 14, docs/fault-tolerance.md,
// "The RAS service"): the job summary, the communicators grouped by shape and state, and the
// errors and warnings (dead and unresponsive ranks, asynchronous errors, ranks that disagree on
// how many collectives they ran, and, baton's addition, the waits that stalled and on whom).
// Pure: it formats what the service gathered (ras_service.cc), so tests can feed it any job.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fault/rank_state.h"

namespace baton {

struct RasRankView {
  enum Kind { kPresent, kUnresponsive, kDead, kLeft, kUnreachable } kind = kUnreachable;
  RasRankState state;  // kPresent: what the rank said
  std::string node;    // its host: the name it gave, or one of its peers' names for the same address
  int pid = 0;
  std::string why;  // kDead: why; kUnreachable: why it could not be asked
};

struct RasCommView {
  uint64_t hash = 0;
  int nRanks = 0;
  std::vector<RasRankView> ranks;  // by rank
};

struct RasJobView {
  std::vector<RasCommView> comms;
  double collectSec = 0;
  int timeouts = 0;       // ranks that did not answer in time
  std::string timestamp;  // "YYYY-MM-DD HH:MM:SS", local time
};

std::string rasStatusText(const RasJobView& job, bool verbose);
std::string rasStatusJson(const RasJobView& job);
const char* rasCollName(int func);  // NCCL's names in RAS counts

}  // namespace baton

// NCCL's RAS client protocol, the server's side (lesson 14, docs/fault-tolerance.md, "The RAS
// service"): a line-oriented text protocol that NCCL 2.28's `ncclras`, baton-ras, or
// `echo status | nc localhost 28028` speak. Lines and answers:
//
//   CLIENT PROTOCOL <n>   -> SERVER PROTOCOL 2
//   TIMEOUT <secs>        -> OK   (how long to wait for other processes' answers; 0: no limit)
//   SET FORMAT text|json  -> OK
//   STATUS                -> the status, then the connection closes
//   VERBOSE STATUS        -> the same, with more detail
//   MONITOR [groups]      -> OK, then one line (or JSON object) per event until the client leaves;
//                            groups: lifecycle (default), trace, all, comma-separated
//   anything else         -> ERROR: ...
//
// Commands are case-insensitive. Pure, so the unit tests run every line through it.
#pragma once

#include <string>

namespace baton {

constexpr int kRasClientProtocol = 2;        // NCCL 2.28's
constexpr double kRasDefaultTimeoutSec = 5;  // NCCL's per-leg timeout
enum RasGroups : unsigned { kRasLifecycle = 1, kRasTrace = 2 };

struct RasSession {
  bool json = false;
  bool verbose = false;
  double timeoutSec = kRasDefaultTimeoutSec;  // 0: wait for every answer
  unsigned monitorGroups = 0;                 // set by MONITOR
};

enum class RasAction { kReply, kStatus, kMonitor };

// One line from a client, without its line end: what to send back (may be empty for kStatus,
// which the caller then gathers and sends), and what follows.
RasAction rasOnLine(RasSession& s, const std::string& line, std::string* reply);

}  // namespace baton

// NCCL's RAS service (lesson 14, docs/fault-tolerance.md, "The RAS service"): one thread per
// process, started with its first communicator, that listens on NCCL_RAS_ADDR (localhost:28028 by
// default; NCCL_RAS_ENABLE=0 turns it off) and answers NCCL's RAS clients (`ncclras`, baton-ras,
// `nc`) with the state of every communicator this process is a rank of, gathered from all their
// ranks.
//
// One process per host listens: the first to bind the address. The others retry once a second,
// so when the listening process dies another takes over. Gathering uses no new connection: the
// ranks of other processes are asked over the watchdog's mesh (src/fault/watchdog.h), whose
// threads answer, so a query never waits for a rank's collectives nor stalls them; a rank the
// watchdog knows dead is reported dead at once, and one that does not answer within the client's
// timeout is reported unresponsive.
#pragma once

#include <string>

namespace baton {

// Starts the service once per process, unless NCCL_RAS_ENABLE=0. Never fails a communicator: a
// service that cannot listen says so (INFO, or WARN for a bad address) and stays off.
void rasServiceStart();

// NCCL_RAS_ADDR's host and port ("host:port", "host", ":port", "[v6]:port"); false: malformed.
bool rasParseAddr(const std::string& spec, std::string* host, std::string* port);

}  // namespace baton

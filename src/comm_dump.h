// Dumps (lesson 14): a communicator's flight recorder, each channel's wait and its first error,
// written as one JSON file per rank that tools/baton-doctor reads. docs/fault-tolerance.md
// describes the file; a dump copies the recorder and writes the file, and never waits for a peer.
#pragma once

#include <string>

#include "nccl.h"

struct ncclComm;

namespace baton {

// Writes comm's dump under `dir` (NULL or "": BATON_DUMP_DIR) as
// <dir>/baton-dump-<comm id>-rank<R>.json (a new dump of the same rank replaces it) and logs one
// INFO line naming it. `reason` says what asked for it ("failure", "abort", "signal", "api").
// ncclInvalidArgument: no folder given or set; ncclSystemError: it cannot be made or written to.
ncclResult_t commDumpState(ncclComm* comm, const char* reason, const char* dir, std::string* path = nullptr);
// A dump when BATON_DUMP_DIR is set, for the failure and abort paths: a problem writing it is a
// WARN, never the caller's error.
void commDumpIfAsked(ncclComm* comm, const char* reason);
// BATON_DUMP_SIGNAL (e.g. SIGUSR1): on that signal every initialised communicator of the process
// dumps, from a thread of its own (the handler only wakes it). Set up once, by the first init.
void dumpSignalSetup();

}  // namespace baton

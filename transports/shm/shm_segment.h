// POSIX shared-memory segments for the shm transport, and the sweep that removes leaked ones.
#pragma once

#include <cstddef>

#include "nccl.h"

namespace baton {

constexpr const char* kShmPrefix = "baton-";  // /dev/shm/baton-<creator pid>-...

ncclResult_t shmCreate(const char* name, size_t bytes, void** base);
ncclResult_t shmOpen(const char* name, size_t bytes, void** base);
// Removes /dev/shm/baton-<pid>-* segments whose creating process no longer exists: a process
// killed between creating a connection's segment and its peer opening it leaves the name behind.
// Runs when a segment is created, at most every 100 ms (so the survivors of a failure, making
// their shrunk communicator, remove what the dead rank left); returns how many it removed.
int sweepStaleShmSegments();

}  // namespace baton

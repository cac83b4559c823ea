// POSIX shared-memory segments for the shm transport, and the sweep that removes leaked ones.
#pragma once

#include <cstddef>

#include "nccl.h"

namespace baton {

constexpr const char* kShmPrefix = "baton-";  // /dev/shm/baton-<creator pid>-...

ncclResult_t shmCreate(const char* name, size_t bytes, void** base);
ncclResult_t shmOpen(const char* name, size_t bytes, void** base);
// Removes /dev/shm/baton-<pid>-* segments whose creating process no longer exists. Runs once per
// process (the first time a segment is created); returns how many it removed.
int sweepStaleShmSegments();

}  // namespace baton

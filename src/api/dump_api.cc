// batonCommDumpState (include/baton/dump.h, lesson 14): a communicator's flight recorder on demand.
// The dump itself is the core's (src/comm_dump.cc), shared with the failure, abort and signal paths.
#include <cstring>
#include <string>

#include "baton/dump.h"
#include "comm.h"
#include "comm_dump.h"
#include "comm_registry.h"
#include "misc/debug.h"

using namespace baton;

extern "C" __attribute__((visibility("default"))) ncclResult_t batonCommDumpState(ncclComm_t comm, const char* dir,
                                                                                  char* path, size_t pathSize) {
  const char* fn = "batonCommDumpState";
  // A failed or revoked communicator is what one dumps: only a dead pointer or an unfinished init is refused.
  BATON_CHECK(checkCommLive(comm, fn));
  if (comm->initState.load() != ncclSuccess)
    return batonError(ncclInvalidUsage, "%s: comm %p has not finished its initialisation", fn, (void*)comm);
  if (path && pathSize == 0) return batonError(ncclInvalidArgument, "%s: path is given but pathSize is 0", fn);
  std::string written;
  BATON_CHECK(commDumpState(comm, "api", dir, &written));
  if (path) {
    if (written.size() + 1 > pathSize)
      return batonError(ncclInvalidArgument, "%s: pathSize %zu is too small for '%s' (%zu bytes); the dump was written",
                        fn, pathSize, written.c_str(), written.size() + 1);
    memcpy(path, written.c_str(), written.size() + 1);
  }
  return ncclSuccess;
}

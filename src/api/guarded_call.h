// The frame of a public operation that communicates from inside one call (the fused operations of
// lesson 11, the MoE operations of lesson 12): the communicator checked before anything reads it;
// the call counted in comm->inflight, so ncclCommAbort from another thread waits for it (it uses
// the communicator's scratch); no exception (out of memory) crosses the C API.
#pragma once

#include <new>

#include "api/argcheck.h"
#include "comm.h"
#include "misc/debug.h"

namespace baton {

template <typename Body>
ncclResult_t guardedCall(ncclComm* comm, const char* fn, Body body) {
  BATON_CHECK(checkCommReady(comm, fn));
  comm->inflight.fetch_add(1);
  ncclResult_t res;
  try {
    res = body();
  } catch (const std::bad_alloc&) {
    res = batonError(ncclSystemError, "%s: out of memory for the operation's working buffers", fn);
  } catch (...) {
    res = batonError(ncclInternalError, "%s: unexpected exception", fn);
  }
  comm->inflight.fetch_sub(1);
  return res;
}

}  // namespace baton

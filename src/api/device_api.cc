// The device-side API's host calls (include/baton/device.h, lesson 11): batonDevCommCreate,
// batonDevCommDestroy, batonDevWindowGet, batonDevPutSignalHost. Arguments are checked here; the
// work is src/device_api/'s (dev_comm.h).
#include "api/argcheck.h"
#include "baton/device.h"
#include "comm.h"
#include "device_api/dev_comm.h"
#include "group.h"
#include "misc/debug.h"

using namespace baton;

extern "C" __attribute__((visibility("default"))) ncclResult_t batonDevCommCreate(ncclComm_t comm,
                                                                                  const batonDevCommRequirements* reqs,
                                                                                  batonDevComm* devComm) {
  const char* fn = "batonDevCommCreate";
  BATON_CHECK(checkCommReady(comm, fn));
  if (!devComm) return batonError(ncclInvalidArgument, "%s: devComm is NULL", fn);
  if (inGroup())
    return batonError(ncclInvalidUsage, "%s: cannot be issued inside ncclGroupStart/End (it returns the pointers)", fn);
  const batonDevCommRequirements def = {1, 1, 0};
  const batonDevCommRequirements r = reqs ? *reqs : def;
  if (r.signalCount < 0 || r.signalCount > kDevMaxSignals || r.barrierCount < 0 || r.barrierCount > kDevMaxBarriers)
    return batonError(ncclInvalidArgument,
                      "%s: reqs->signalCount %d or reqs->barrierCount %d out of range (0..%d and 0..%d)", fn,
                      r.signalCount, r.barrierCount, kDevMaxSignals, kDevMaxBarriers);
  return devCommCreate(comm, r, devComm);
}

extern "C" __attribute__((visibility("default"))) ncclResult_t batonDevCommDestroy(ncclComm_t comm,
                                                                                   batonDevComm* devComm) {
  const char* fn = "batonDevCommDestroy";
  BATON_CHECK(checkCommLive(comm, fn));
  if (!devComm || !devComm->internal)
    return batonError(ncclInvalidArgument, "%s: devComm is NULL or not created (or destroyed already)", fn);
  return devCommDestroy(comm, devComm);
}

extern "C" __attribute__((visibility("default"))) ncclResult_t batonDevWindowGet(const batonDevComm* devComm,
                                                                                 ncclWindow_t win,
                                                                                 batonDevWindow* out) {
  const char* fn = "batonDevWindowGet";
  if (!devComm || !devComm->internal) return batonError(ncclInvalidArgument, "%s: devComm is NULL or not created", fn);
  if (!win || !out) return batonError(ncclInvalidArgument, "%s: %s is NULL", fn, win ? "out" : "win");
  return devWindowGet(devComm, win, out);
}

extern "C" __attribute__((visibility("default"))) ncclResult_t batonDevPutSignalHost(const batonDevComm* devComm,
                                                                                     const batonDevWindow* win,
                                                                                     int peer, size_t offset,
                                                                                     const void* src, size_t bytes,
                                                                                     int signal) {
  const char* fn = "batonPutSignal";
  if (!devComm || !devComm->internal) return batonError(ncclInvalidArgument, "%s: devComm is NULL or not created", fn);
  if (!win) return batonError(ncclInvalidArgument, "%s: window is NULL", fn);
  if (peer < 0 || peer >= devComm->nRanks)
    return batonError(ncclInvalidArgument, "%s: peer %d is not a rank (0..%d)", fn, peer, devComm->nRanks - 1);
  if (signal < 0 || signal >= devComm->signalCount)
    return batonError(ncclInvalidArgument, "%s: signal %d out of range (the device communicator has %d)", fn, signal,
                      devComm->signalCount);
  if (offset > win->size || bytes > win->size - offset)
    return batonError(ncclInvalidArgument, "%s: [offset %zu, +%zu bytes) is outside the %zu-byte window", fn, offset,
                      bytes, win->size);
  if (!src && bytes) return batonError(ncclInvalidArgument, "%s: src is NULL but bytes is %zu", fn, bytes);
  return devPutSignalHost(devComm, win, peer, offset, src, bytes, signal);
}

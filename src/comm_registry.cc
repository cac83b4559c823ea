// The live-communicator registry and the checks every API function makes on its communicator
// argument (comm_registry.h): a destroyed or foreign pointer is an error with a message, not a crash.
#include "comm_registry.h"

#include <atomic>
#include <mutex>

#include "comm.h"
#include "comm_error.h"
#include "misc/debug.h"

namespace baton {
namespace {

// Live communicators: every API call checks its comm here, from every rank's thread, so lookups
// read a slot array without a lock (slots change only at init and destroy, under gCommsMu).
constexpr int kMaxLiveComms = 1 << 14;
std::mutex gCommsMu;
std::atomic<ncclComm*> gLive[kMaxLiveComms];
std::atomic<int> gLiveHigh{0};  // slots at or above this have never been used

}  // namespace

void forEachReadyComm(const std::function<void(ncclComm*)>& fn) {
  std::lock_guard<std::mutex> lk(gCommsMu);  // commFree unregisters first: it waits for us
  const int high = gLiveHigh.load(std::memory_order_relaxed);
  for (int i = 0; i < high; ++i)
    if (ncclComm* c = gLive[i].load(std::memory_order_acquire); c && c->initState.load() == ncclSuccess) fn(c);
}

bool registerComm(ncclComm* comm) {
  std::lock_guard<std::mutex> lk(gCommsMu);
  for (int i = 0; i < kMaxLiveComms; ++i) {
    if (gLive[i].load(std::memory_order_relaxed)) continue;
    gLive[i].store(comm, std::memory_order_release);
    if (i >= gLiveHigh.load(std::memory_order_relaxed)) gLiveHigh.store(i + 1, std::memory_order_release);
    return true;
  }
  return false;
}
void unregisterComm(ncclComm* comm) {
  std::lock_guard<std::mutex> lk(gCommsMu);
  const int high = gLiveHigh.load(std::memory_order_relaxed);
  for (int i = 0; i < high; ++i)
    if (gLive[i].load(std::memory_order_relaxed) == comm) gLive[i].store(nullptr, std::memory_order_release);
}

namespace {
bool isLive(const ncclComm* comm) {
  const int high = gLiveHigh.load(std::memory_order_acquire);
  for (int i = 0; i < high; ++i)
    if (gLive[i].load(std::memory_order_acquire) == comm) return true;
  return false;
}
}  // namespace

ncclResult_t checkCommLive(ncclComm* comm, const char* fn) {
  if (!comm) return batonError(ncclInvalidArgument, "%s: comm is NULL", fn);
  if (!isLive(comm))
    return batonError(ncclInvalidArgument,
                      "%s: comm %p is not a live communicator (destroyed, aborted, or never initialized)", fn,
                      (void*)comm);
  if (comm->magic != kCommMagic) return batonError(ncclInvalidArgument, "%s: comm %p is corrupted", fn, (void*)comm);
  return ncclSuccess;
}

ncclResult_t checkCommReady(ncclComm* comm, const char* fn) {
  BATON_CHECK(checkCommLive(comm, fn));
  const int st = comm->initState.load();
  if (st == ncclInProgress)
    return batonError(ncclInvalidUsage,
                      "%s: comm %p is still initializing; poll ncclCommGetAsyncError until it returns ncclSuccess", fn,
                      (void*)comm);
  if (st != ncclSuccess)
    return batonError((ncclResult_t)st, "%s: comm %p failed to initialize (%s)", fn, (void*)comm,
                      ncclGetErrorString((ncclResult_t)st));
  if (comm->revoked.load())
    return batonError(ncclInvalidUsage,
                      "%s: comm %p was revoked (ncclCommRevoke); only ncclCommShrink, ncclCommSplit, ncclCommAbort and "
                      "ncclCommDestroy may use it",
                      fn, (void*)comm);
  // A failure raises the abort flag too: report the failure (it names the cause), not the flag.
  const int err = comm->asyncError.load();
  if (err != ncclSuccess)
    return batonError((ncclResult_t)err, "%s: comm %p is in an error state (%s: %s); abort it", fn, (void*)comm,
                      ncclGetErrorString((ncclResult_t)err), commFirstError(comm).c_str());
  if (flagIsSet(&comm->abortFlag)) return batonError(ncclInvalidUsage, "%s: comm %p has been aborted", fn, (void*)comm);
  if (comm->finalized.load())
    return batonError(ncclInvalidUsage, "%s: comm %p has been finalized; only ncclCommDestroy is allowed", fn,
                      (void*)comm);
  return ncclSuccess;
}

ncclResult_t checkCommParent(ncclComm* comm, const char* fn) {
  BATON_CHECK(checkCommLive(comm, fn));
  const int st = comm->initState.load();
  if (st != ncclSuccess)
    return batonError(ncclInvalidUsage, "%s: comm %p is not initialized (%s)", fn, (void*)comm,
                      ncclGetErrorString((ncclResult_t)st));
  if (comm->finalized.load())
    return batonError(ncclInvalidUsage, "%s: comm %p has been finalized; only ncclCommDestroy is allowed", fn,
                      (void*)comm);
  return ncclSuccess;
}

}  // namespace baton

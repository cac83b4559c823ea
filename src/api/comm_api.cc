// Communicator lifecycle and queries: GetVersion, GetUniqueId, CommInit*, CommSplit, Finalize,
// Destroy, Abort, Count, UserRank, CuDevice, GetAsyncError, GetErrorString, GetLastError.
#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "api/api.h"
#include "api/argcheck.h"
#include "api/comm_init.h"
#include "comm.h"
#include "comm_dump.h"
#include "comm_error.h"
#include "cuda_backend.h"
#include "fault/child_comm.h"
#include "fault/watchdog.h"
#include "gpu/gpu_comm.h"
#include "group.h"
#include "misc/debug.h"
#include "misc/param.h"
#include "ras/ras_service.h"
#include "register/registration.h"

using namespace baton;

namespace baton {
void resetLogConfig();

// The device of ncclCommInitRank: the one current on the calling thread (-1 asks initRank to look).
namespace {
int defaultDevice() { return -1; }
}  // namespace

// Init a communicator: now, on a thread (non-blocking), or at ncclGroupEnd (inside a group).
ncclResult_t initRank(ncclComm_t* out, int nranks, const ncclUniqueId* commId, int rank, const ncclConfig_t* config,
                      const char* fn, int cudaDev) {
  if (!out) return batonError(ncclInvalidArgument, "%s: comm (the output pointer) is NULL", fn);
  if (!commId) return batonError(ncclInvalidArgument, "%s: commId is NULL", fn);
  BootstrapHandle id;
  BATON_CHECK(bootstrapParseId(commId, &id));
  ncclComm* comm = nullptr;
  BATON_CHECK(commAlloc(&comm, nranks, rank, config, fn));
  attachRegistration(comm);
  rasServiceStart();  // once per process: NCCL's RAS clients can ask about its communicators
  // The CUDA backend (src/cuda/): a device current now (InitAll: its devlist's) makes a GPU rank.
  char desc[256];
  if (const int current = currentCudaDevice(desc, sizeof desc); current >= 0) {
    int count = 1;
    if (cudaBackend()->deviceCount(&count) != 0 || count < 1) count = 1;
    if (cudaDev < 0) cudaDev = current;
    // Several ranks per device are allowed (NCCL refuses them; a learner with one GPU needs them).
    comm->gpuDev = cudaDev = cudaDev % count;
  }
  comm->cudaDev = cudaDev < 0 ? 0 : cudaDev;
  *out = comm;
  auto job = [comm, id] { return commInitJob(comm, id); };
  if (inGroup()) {
    groupAddInitJob(comm, job);
    return comm->blocking ? ncclSuccess : ncclInProgress;
  }
  ncclResult_t res = runInitJob(comm, job);
  if (res != ncclSuccess && res != ncclInProgress) {
    // A failed blocking init leaves nothing behind: the caller gets the error, not a half comm.
    commFree(comm);
    *out = nullptr;
  }
  return res;
}

// Wait until every submitted part has finished (a comm in error drains: its waits see the abort
// flag), backing off like any other wait.
namespace {
void drainInflight(ncclComm* comm) {
  uint32_t it = 0;
  while (comm->inflight.load() > 0) waitBackoff(it);
}

// Destroy and Abort end the same way once Abort has raised the flag.
ncclResult_t releaseComm(ncclComm* comm) {
  if (comm->initThread.joinable()) comm->initThread.join();
  drainInflight(comm);
  commFree(comm);
  return ncclSuccess;
}
}  // namespace

}  // namespace baton

NCCL_API(ncclResult_t, ncclGetVersion, int* version);
ncclResult_t pncclGetVersion(int* version) {
  if (!version) return batonError(ncclInvalidArgument, "ncclGetVersion: version is NULL");
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclGetUniqueId, ncclUniqueId* uniqueId);
ncclResult_t pncclGetUniqueId(ncclUniqueId* uniqueId) {
  showVersion(backendsInUse);
  if (!uniqueId) return batonError(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
  return bootstrapGetUniqueId(uniqueId);
}

NCCL_API(ncclResult_t, ncclCommInitRank, ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return initRank(comm, nranks, &commId, rank, nullptr, "ncclCommInitRank", defaultDevice());
}

NCCL_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
         ncclConfig_t* config);
ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                     ncclConfig_t* config) {
  return initRank(comm, nranks, &commId, rank, config, "ncclCommInitRankConfig", defaultDevice());
}

NCCL_API(ncclResult_t, ncclCommInitAll, ncclComm_t* comms, int ndev, const int* devlist);
ncclResult_t pncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  const char* fn = "ncclCommInitAll";
  if (!comms) return batonError(ncclInvalidArgument, "%s: comms is NULL", fn);
  if (ndev < 1) return batonError(ncclInvalidArgument, "%s: ndev %d must be at least 1", fn, ndev);
  // Every rank is a thread of this process: the root listens on loopback (unless NCCL_COMM_ID or
  // NCCL_SOCKET_IFNAME say otherwise), so InitAll never opens a port on a network interface.
  ncclUniqueId id;
  BATON_CHECK(envSet("NCCL_COMM_ID") ? pncclGetUniqueId(&id) : bootstrapGetUniqueIdFresh(&id, /*loopback=*/true));
  std::fill(comms, comms + ndev, nullptr);
  pncclGroupStart();
  ncclResult_t res = ncclSuccess;
  for (int i = 0; i < ndev && res == ncclSuccess; ++i)
    res = initRank(&comms[i], ndev, &id, i, nullptr, fn, devlist ? devlist[i] : i);
  ncclResult_t end = pncclGroupEnd();
  if (res == ncclSuccess) res = end;
  if (res != ncclSuccess) {
    for (int i = 0; i < ndev; ++i)
      if (comms[i]) commFree(comms[i]), comms[i] = nullptr;
  }
  return res;
}

NCCL_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm);
ncclResult_t pncclCommFinalize(ncclComm_t comm) {
  BATON_CHECK(checkCommLive(comm, "ncclCommFinalize"));
  if (comm->revoked.load())
    return batonError(ncclInvalidUsage, "ncclCommFinalize: comm %p was revoked; ncclCommDestroy or ncclCommAbort it",
                      (void*)comm);
  if (comm->initThread.joinable() && comm->initState.load() != ncclInProgress) comm->initThread.join();
  if (!comm->blocking && comm->inflight.load() > 0) {
    comm->finalized.store(true);
    return ncclInProgress;
  }
  drainInflight(comm);
  comm->finalized.store(true);
  return (ncclResult_t)comm->asyncError.load();
}

NCCL_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm);
ncclResult_t pncclCommDestroy(ncclComm_t comm) {
  if (!comm) return ncclSuccess;  // NCCL accepts NULL here
  BATON_CHECK(checkCommLive(comm, "ncclCommDestroy"));
  return releaseComm(comm);
}

NCCL_API(ncclResult_t, ncclCommAbort, ncclComm_t comm);
ncclResult_t pncclCommAbort(ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  BATON_CHECK(checkCommLive(comm, "ncclCommAbort"));
  commDumpIfAsked(comm, "abort");  // before the flag: what each channel waited for when the user gave up
  storeFlag(&comm->abortFlag, 1);
  if (comm->initState.load() == ncclSuccess) commAnnounceFailure(comm);  // neighbours waiting on us stop
  if (comm->watchdog) comm->watchdog->close();  // and a vote or agreement another thread waits in
  return releaseComm(comm);
}

NCCL_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config);
ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  const char* fn = "ncclCommSplit";
  BATON_CHECK(checkCommParent(comm, fn));
  if (!newcomm) return batonError(ncclInvalidArgument, "%s: newcomm is NULL", fn);
  if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
    return batonError(ncclInvalidArgument, "%s: color %d must be >= 0 or NCCL_SPLIT_NOCOLOR", fn, color);
  *newcomm = nullptr;
  ncclConfig_t cfg = comm->config;  // NULL config: inherit the parent's
  if (config) cfg = *config;
  // Everything is collective over the parent, so the whole split runs as one init job.
  struct SplitInfo {
    int32_t color, key, rank;
  };
  auto* result = new ncclComm*(nullptr);
  auto job = [comm, color, key, cfg, newcomm, result]() -> ncclResult_t {
    std::unique_ptr<ncclComm*> own(result);
    std::vector<SplitInfo> all(comm->nRanks);
    all[comm->rank] = {color, key, comm->rank};
    BATON_CHECK(comm->bootstrap->allGather(all.data(), sizeof(SplitInfo)));
    // Every rank takes the child's tag, a NOCOLOR rank too: bootstrap collectives are matched by
    // a per-rank sequence number, and a rank that skipped one would wait on the wrong tag in the
    // parent's next (a window registration on it hung for BATON_BOOTSTRAP_TIMEOUT).
    const uint64_t tag = comm->bootstrap->nextCollTag();
    if (color == NCCL_SPLIT_NOCOLOR) return ncclSuccess;
    std::vector<SplitInfo> mine;
    for (auto& s : all)
      if (s.color == color) mine.push_back(s);
    std::stable_sort(mine.begin(), mine.end(), [](const SplitInfo& a, const SplitInfo& b) {
      return a.key != b.key ? a.key < b.key : a.rank < b.rank;
    });
    int newRank = 0;
    for (size_t i = 0; i < mine.size(); ++i)
      if (mine[i].rank == comm->rank) newRank = (int)i;
    // The new rank 0 creates a root and sends the id to the others over the parent's bootstrap.
    std::vector<int> parentRanks;
    for (const SplitInfo& m : mine) parentRanks.push_back(m.rank);
    auto getId = [comm, parentRanks, newRank, tag](ncclUniqueId* id) {
      return childIdFromRank0(comm, parentRanks, newRank, tag, id);
    };
    return commInitChild(comm, parentRanks, (int)parentRanks.size(), newRank, getId, cfg, "ncclCommSplit", newcomm);
  };
  if (inGroup()) {
    // Runs at ncclGroupEnd, concurrently with the other ranks' splits driven by this thread.
    groupAddInitJob(comm, job);
    return ncclSuccess;
  }
  return job();
}

NCCL_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int* count);
ncclResult_t pncclCommCount(const ncclComm_t comm, int* count) {
  BATON_CHECK(checkCommLive(comm, "ncclCommCount"));
  if (!count) return batonError(ncclInvalidArgument, "ncclCommCount: count is NULL");
  *count = comm->nRanks;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int* rank);
ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank) {
  BATON_CHECK(checkCommLive(comm, "ncclCommUserRank"));
  if (!rank) return batonError(ncclInvalidArgument, "ncclCommUserRank: rank is NULL");
  *rank = comm->rank;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int* device);
ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* device) {
  BATON_CHECK(checkCommLive(comm, "ncclCommCuDevice"));
  if (!device) return batonError(ncclInvalidArgument, "ncclCommCuDevice: device is NULL");
  *device = comm->cudaDev;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t* asyncError);
ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  BATON_CHECK(checkCommLive(comm, "ncclCommGetAsyncError"));
  if (!asyncError) return batonError(ncclInvalidArgument, "ncclCommGetAsyncError: asyncError is NULL");
  const int init = comm->initState.load();
  if (init != ncclSuccess) {
    *asyncError = (ncclResult_t)init;
    return ncclSuccess;
  }
  if (comm->gpu)  // a kernel that gave up (timeout, abort) tells once
    if (const ncclResult_t k = comm->gpu->takeFailure(comm); k != ncclSuccess) commSetError(comm, k, lastError());
  // In-flight count first: a part that fails sets the error before it leaves, so once the count
  // reads 0 the error is there to see. (Read the other way round, a part failing in between made a
  // failed operation look finished and fine.)
  const int pending = comm->inflight.load();
  const int err = comm->asyncError.load();
  if (err != ncclSuccess) *asyncError = (ncclResult_t)err;
  else *asyncError = pending > 0 ? ncclInProgress : ncclSuccess;
  return ncclSuccess;
}

NCCL_API(const char*, ncclGetErrorString, ncclResult_t result);
const char* pncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

NCCL_API(const char*, ncclGetLastError, ncclComm_t comm);
const char* pncclGetLastError(ncclComm_t) { return lastError(); }

NCCL_API(void, ncclResetDebugInit);
void pncclResetDebugInit() { resetLogConfig(); }

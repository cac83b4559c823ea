// Communicator init and teardown: bootstrap, peer exchange, rings, connections, workers, live registry.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <unordered_set>

#include "comm.h"
#include "misc/debug.h"
#include "misc/param.h"
#include "topo/discover.h"
#include "misc/trace.h"

namespace baton {
namespace {

// The pid namespace's inode (low 32 bits): pids of two processes mean the same only within one.
uint32_t pidNamespace() {
  struct stat st;
  return stat("/proc/self/ns/pid", &st) == 0 ? (uint32_t)st.st_ino : 0;
}


// Live communicators: every API call checks its comm here, from every rank's thread, so lookups
// read a slot array without a lock (slots change only at init and destroy, under gCommsMu).
constexpr int kMaxLiveComms = 1 << 14;
std::mutex gCommsMu;
std::atomic<ncclComm*> gLive[kMaxLiveComms];
std::atomic<int> gLiveHigh{0};  // slots at or above this have never been used

uint64_t fnv1a(const void* data, size_t n, uint64_t h = 1469598103934665603ull) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}


uint64_t pidHash(uint64_t host) {
  char ns[64] = "";
  ssize_t n = readlink("/proc/self/ns/pid", ns, sizeof ns - 1);
  int pid = getpid();
  uint64_t h = fnv1a(&pid, sizeof pid, host);
  return n > 0 ? fnv1a(ns, n, h) : h;
}

// Values every rank must agree on; rank 0's win.
struct SharedParams {
  int32_t nChannels;
  int32_t fifoDepth;
  int32_t chunkSteps;
  int32_t allreduceAlgo;
  uint64_t stepBytes;
  uint64_t llStepBytes;
  uint64_t ll128StepBytes;
  uint64_t p2pStepBytes;
  uint64_t minChannelBytes;
  int32_t direct;
  int32_t oversubscribed;
  int32_t ranksPerNode;
  int32_t atomicCollectives;  // every rank must vote, or none
  uint64_t failTimeoutNs;     // every rank must join the watchdog mesh, or none
  TuningModel model;  // rank 0's model and masks: every rank must pick the same protocol
  AlgoProtoMask mask;
};

}  // namespace

uint64_t hostHash() {
  std::string id = envStr("NCCL_HOSTID");
  if (id.empty()) {
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    std::ifstream boot("/proc/sys/kernel/random/boot_id");
    std::string bootId;
    std::getline(boot, bootId);
    id.assign(host);
    id.append(bootId);
  }
  return fnv1a(id.data(), id.size());
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

static bool isLive(const ncclComm* comm) {
  const int high = gLiveHigh.load(std::memory_order_acquire);
  for (int i = 0; i < high; ++i)
    if (gLive[i].load(std::memory_order_acquire) == comm) return true;
  return false;
}

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
  if (__atomic_load_n(&comm->abortFlag, __ATOMIC_ACQUIRE))
    return batonError(ncclInvalidUsage, "%s: comm %p has been aborted", fn, (void*)comm);
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
    return batonError(ncclInvalidUsage, "%s: comm %p has been finalized; only ncclCommDestroy is allowed", fn, (void*)comm);
  return ncclSuccess;
}

ncclResult_t childIdFromRank0(ncclComm* parent, const std::vector<int>& parentRanks, int newRank, uint64_t tag,
                              ncclUniqueId* id) {
  if (newRank != 0) return parent->bootstrap->recv(parentRanks[0], tag, id, sizeof *id);
  BATON_CHECK(bootstrapGetUniqueIdFresh(id));
  for (size_t i = 1; i < parentRanks.size(); ++i) BATON_CHECK(parent->bootstrap->send(parentRanks[i], tag, id, sizeof *id));
  return ncclSuccess;
}

ncclResult_t commInitChild(ncclComm* parent, const std::vector<int>& parentRanks, int nRanks, int newRank,
                           std::function<ncclResult_t(ncclUniqueId*)> getId, const ncclConfig_t& cfg, const char* fn,
                           ncclComm_t* newcomm) {
  ncclComm* child = nullptr;
  BATON_CHECK(commAlloc(&child, nRanks, newRank, &cfg, fn));
  child->cudaDev = parent->cudaDev;
  auto job = [parent, parentRanks, child, getId, fn]() -> ncclResult_t {
    ncclUniqueId id;
    BATON_CHECK(getId(&id));
    BootstrapHandle h;
    BATON_CHECK(bootstrapParseId(&id, &h));
    {
      std::lock_guard<std::mutex> lock(parent->childMu);
      parent->childAbortFlag = &child->abortFlag;
      parent->childMembers = parentRanks;
    }
    // A member that died before the flag was registered is not reported again: look now.
    if (parent->watchdog && parent->watchdog->anyDead(parentRanks)) __atomic_store_n(&child->abortFlag, 1, __ATOMIC_RELEASE);
    ncclResult_t res = commInitJob(child, h);
    {
      std::lock_guard<std::mutex> lock(parent->childMu);
      parent->childAbortFlag = nullptr;
    }
    if (res != ncclSuccess && __atomic_load_n(&child->abortFlag, __ATOMIC_ACQUIRE))
      res = batonError(ncclRemoteError, "%s: a member failed while the new communicator was being made (%s); agree on "
                       "the failed ranks again and retry", fn, std::string(lastError()).c_str());
    return res;
  };
  if (!child->blocking) {
    // Non-blocking (NCCL's semantics): the caller gets the communicator now and polls
    // ncclCommGetAsyncError(newcomm) until it leaves ncclInProgress. The parent must outlive it.
    *newcomm = child;
    child->initThread = std::thread([child, job] { child->initState.store(job()); });
    return ncclInProgress;
  }
  const ncclResult_t res = job();
  child->initState.store(res);
  if (res != ncclSuccess) {
    commFree(child);
    return res;
  }
  *newcomm = child;
  return ncclSuccess;
}

void commQuiesce(ncclComm* comm) {
  __atomic_store_n(&comm->abortFlag, 1, __ATOMIC_RELEASE);
  uint32_t it = 0;
  while (comm->inflight.load() > 0) waitBackoff(it);
  __atomic_store_n(&comm->abortFlag, 0, __ATOMIC_RELEASE);
}

void commAnnounceFailure(ncclComm* comm) {
  // Ring connections only: they exist from init on (tree and p2p ones appear while other threads
  // run), and every collective uses one; their neighbours pass it on when they fail in turn.
  for (auto& ch : comm->channels)
    for (Connection* c : {ch->sendConn.get(), ch->recvConn.get()})
      if (c && c->fifo && !loadAcquire(&c->fifo->abortedBy)) storeRelease(&c->fifo->abortedBy, (uint64_t)comm->rank + 1);
}

void commSetError(ncclComm* comm, ncclResult_t err, const char* message) {
  {
    // Under the lock, so a reader that sees asyncError set and then asks commFirstError (which
    // takes the lock) gets the message, not the empty string.
    std::lock_guard<std::mutex> lock(comm->firstErrorMu);
    int expected = ncclSuccess;
    if (comm->asyncError.compare_exchange_strong(expected, err)) comm->firstError = message ? message : "";
  }
  // Let this rank's other channels drain instead of waiting for a peer that will not come, and
  // tell the ring neighbours, whose waits would otherwise last until BATON_WAIT_TIMEOUT.
  __atomic_store_n(&comm->abortFlag, 1, __ATOMIC_RELEASE);
  commAnnounceFailure(comm);
  comm->proxy->kick();  // a sleeping proxy wakes and ends the NET connections
}

void commAbortChildInit(ncclComm* comm, int failed) {
  std::lock_guard<std::mutex> lock(comm->childMu);
  if (!comm->childAbortFlag) return;
  for (int r : comm->childMembers)
    if (r == failed) __atomic_store_n(comm->childAbortFlag, 1, __ATOMIC_RELEASE);
}

std::string commFirstError(ncclComm* comm) {
  std::lock_guard<std::mutex> lock(comm->firstErrorMu);
  return comm->firstError;
}

ncclResult_t commInitJob(ncclComm* comm, const BootstrapHandle& id) {
  comm->id = id;
  comm->commHash = fnv1a(&id, sizeof id);
  BATON_CHECK(Bootstrap::create(id, comm->rank, comm->nRanks, &comm->abortFlag, &comm->bootstrap));

  // Who is where: same pid hash -> p2p, same host hash -> shm.
  comm->peers.resize(comm->nRanks);
  PeerInfo& me = comm->peers[comm->rank];
  me.rank = comm->rank;
  me.cudaDev = comm->cudaDev;
  me.pid = getpid();
  me.version = NCCL_VERSION_CODE;
  me.hostHash = hostHash();
  me.pidHash = pidHash(me.hostHash);
  me.numaNode = topoLocalNumaOfThisThread();
  me.pidNs = pidNamespace();
  BATON_CHECK(comm->bootstrap->allGather(comm->peers.data(), sizeof(PeerInfo)));
  for (const PeerInfo& p : comm->peers)
    if (p.version != NCCL_VERSION_CODE)
      return batonError(ncclInvalidUsage, "Mismatched NCCL version detected: rank %d has %d, rank %d has %d", comm->rank,
                        NCCL_VERSION_CODE, p.rank, p.version);

  // Peers that are other processes of this host, in our pid namespace: a wait on one of them also
  // checks that it still exists (lesson 10), so a crash is an error in milliseconds, not a timeout.
  comm->livenessPids.assign(comm->nRanks, 0);
  for (const PeerInfo& p : comm->peers)
    if (p.hostHash == me.hostHash && p.pidHash != me.pidHash && p.pidNs == me.pidNs && p.pidNs != 0)
      comm->livenessPids[p.rank] = p.pid;

  // Channels are worker threads: each one only adds bandwidth if it gets a core of its own, so by
  // default a rank takes the cores of this host divided among the ranks on it (at least one).
  comm->allInProcess = !comm->tun.p2pDisable;  // NCCL_P2P_DISABLE also turns direct paths off
  for (const PeerInfo& p : comm->peers) comm->allInProcess &= p.pidHash == me.pidHash;
  int localRanks = 0;
  for (const PeerInfo& p : comm->peers) localRanks += p.hostHash == me.hostHash;
  const int cores = std::max<long>(1, sysconf(_SC_NPROCESSORS_ONLN));
  // A rank that reaches a peer over the network also runs a proxy thread (lesson 08), which needs
  // a core's share as well: over veth on 2 cores, 1 channel + proxy moves 64 MiB in 39 ms, 2 in 49.
  bool net = comm->nRanks > 1 && comm->tun.p2pDisable && comm->tun.shmDisable;
  for (const PeerInfo& p : comm->peers) net |= p.hostHash != me.hostHash;
  const int perRank = std::max(cores / std::max(localRanks, 1) - (net ? 1 : 0), 1);
  comm->nChannels = std::clamp(std::min(perRank, 16), comm->tun.minChannels, comm->tun.maxChannels);
  comm->nChannels = std::max(comm->nChannels, 1);
  // More ranks than cores: a waiting rank's peer is probably not running, so yield almost at once
  // (spinning would only burn the time slice the peer needs).
  comm->oversubscribed = localRanks > cores;
  if (localRanks > cores) setWaitSpin((uint32_t)envInt("BATON_WAIT_SPIN", 8));
  else if (getenv("BATON_WAIT_SPIN")) setWaitSpin((uint32_t)envInt("BATON_WAIT_SPIN", 256));

  std::vector<SharedParams> params(comm->nRanks);
  const Tunables& t = comm->tun;
  params[comm->rank] = {comm->nChannels, t.fifoDepth, t.chunkSteps, t.allreduceAlgo, t.stepBytes, t.llStepBytes,
                        t.ll128StepBytes, t.p2pStepBytes,
                        t.minChannelBytes, t.direct, comm->oversubscribed, t.ranksPerNode, t.atomicCollectives,
                        t.failTimeoutNs, t.model, t.mask};
  BATON_CHECK(comm->bootstrap->allGather(params.data(), sizeof(SharedParams)));
  const SharedParams& p0 = params[0];
  comm->nChannels = p0.nChannels;
  comm->tun.fifoDepth = p0.fifoDepth;
  comm->tun.chunkSteps = p0.chunkSteps;
  comm->tun.allreduceAlgo = p0.allreduceAlgo;
  comm->tun.stepBytes = p0.stepBytes;
  comm->tun.llStepBytes = p0.llStepBytes;
  comm->tun.ll128StepBytes = p0.ll128StepBytes;
  comm->tun.p2pStepBytes = p0.p2pStepBytes;
  comm->tun.minChannelBytes = p0.minChannelBytes;
  comm->tun.direct = p0.direct;
  comm->oversubscribed = p0.oversubscribed;
  comm->tun.ranksPerNode = p0.ranksPerNode;
  comm->tun.atomicCollectives = p0.atomicCollectives != 0;
  comm->tun.failTimeoutNs = p0.failTimeoutNs;
  comm->tun.model = p0.model;
  comm->tun.mask = p0.mask;

  for (int c = 0; c < comm->nChannels; ++c) {
    auto ch = std::make_unique<Channel>();
    ch->id = c;
    comm->channels.push_back(std::move(ch));
  }
  BATON_CHECK(commBuildGraph(comm));  // each channel's ring order and tree (lessons 06, 07)
  if (comm->nRanks > 1)
    for (auto& ch : comm->channels) BATON_CHECK(connectRing(comm, *ch));
  if (comm->rank == 0 && logEnabled(kLogInfo, kSubInit)) {
    for (auto& ch : comm->channels) {
      std::string order;
      for (int r : ch->ringUserRanks) order += " " + std::to_string(r);
      BATON_INFO(kSubInit, "Channel %02d/%02d :%s", ch->id, comm->nChannels, order.c_str());
    }
  }
  comm->p2pSendConn.resize(comm->nRanks);
  comm->p2pRecvConn.resize(comm->nRanks);
  comm->p2pSend.resize(comm->nRanks);
  comm->p2pRecv.resize(comm->nRanks);
  for (auto& ch : comm->channels) {
    char name[16];
    snprintf(name, sizeof name, "baton r%d c%d", comm->rank, ch->id);
    ch->worker.start(name);
  }
  // Ranks in other processes can fail on their own: watch them (lesson 10). Threads of one
  // process share its fate, so a communicator of threads only needs no watchdog.
  bool multiProcess = false;
  for (const PeerInfo& p : comm->peers) multiProcess |= p.pidHash != me.pidHash;
  if (multiProcess && comm->tun.failTimeoutNs > 0) BATON_CHECK(Watchdog::start(comm, comm->tun.failTimeoutNs, &comm->watchdog));
  BATON_CHECK(comm->bootstrap->barrier());
  BATON_INFO(kSubInit, "comm %p rank %d nRanks %d nChannels %d stepBytes %zu - Init COMPLETE", (void*)comm, comm->rank,
             comm->nRanks, comm->nChannels, comm->tun.stepBytes);
  return ncclSuccess;
}

void commFree(ncclComm* comm) {
  unregisterComm(comm);
  if (comm->initThread.joinable()) comm->initThread.join();
  comm->watchdog.reset();  // says goodbye: the peers do not take this rank's leaving for a failure
  for (auto& ch : comm->channels) ch->worker.stop();
  if (comm->proxy) {
    // Sends complete when their data is staged: let the proxy put it on the wire first (not
    // after an abort or a failure, when nobody waits for it).
    if (!__atomic_load_n(&comm->abortFlag, __ATOMIC_ACQUIRE) && !comm->revoked.load() &&
        !comm->proxy->drain(10ull * 1000000000))
      BATON_WARN("rank %d: the proxy did not finish sending within 10 s of ncclCommDestroy", comm->rank);
    comm->proxy->stop();  // before the connections whose FIFOs it drives go away
  }
  if (traceEnabled()) traceFlush(comm->commHash);  // ranks of one job share the id's hash: one timeline
  comm->channels.clear();
  comm->p2pSendConn.clear();
  comm->p2pRecvConn.clear();
  comm->bootstrap.reset();
  comm->magic = 0;
  delete comm;
}

}  // namespace baton

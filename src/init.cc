// Communicator init and teardown: bootstrap, peer exchange, shared knobs, graph, connections,
// workers and watchdog (commInitJob, one named step each), and commFree.
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "bootstrap/host_identity.h"
#include "comm.h"
#include "comm_dump.h"
#include "comm_error.h"
#include "comm_registry.h"
#include "cuda_backend.h"
#include "fault/watchdog.h"
#include "gpu/gpu_comm.h"
#include "misc/cross_memory.h"
#include "misc/debug.h"
#include "misc/param.h"
#include "misc/trace.h"
#include "proxy.h"
#include "topo/cache_distance.h"
#include "topo/discover.h"

namespace baton {

namespace {

// Every rank learns who and where the others are: same process hash -> p2p, same host -> shm.
ncclResult_t exchangePeerInfo(ncclComm* comm) {
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
  me.crossMemoryProbe = crossMemoryProbeAddress();
  me.gpu = comm->gpuDev >= 0;
  me.yamaScope1 = yamaPtraceScope() == "1";
  BATON_CHECK(comm->bootstrap->allGather(comm->peers.data(), sizeof(PeerInfo)));
  for (const PeerInfo& p : comm->peers)
    if (p.version != NCCL_VERSION_CODE)
      return batonError(ncclInvalidUsage, "Mismatched NCCL version detected: rank %d has %d, rank %d has %d",
                        comm->rank, NCCL_VERSION_CODE, p.rank, p.version);
  // Peers that are other processes of this host, in our pid namespace: a wait on one of them also
  // checks that it still exists (lesson 10), so a crash is an error in milliseconds, not a timeout.
  comm->livenessPids.assign(comm->nRanks, 0);
  for (const PeerInfo& p : comm->peers)
    if (p.hostHash == me.hostHash && p.pidHash != me.pidHash && p.pidNs == me.pidNs && p.pidNs != 0)
      comm->livenessPids[p.rank] = p.pid;
  comm->allInProcess = !comm->tun.p2pDisable;  // NCCL_P2P_DISABLE also turns direct paths off
  for (const PeerInfo& p : comm->peers) comm->allInProcess &= p.pidHash == me.pidHash;
  return ncclSuccess;
}

// This rank's proposal for the channel count and how it waits, from the ranks that share its host.
void sizeForThisHost(ncclComm* comm) {
  const PeerInfo& me = comm->peers[comm->rank];
  int localRanks = 0;
  for (const PeerInfo& p : comm->peers) localRanks += p.hostHash == me.hostHash;
  const int cores = std::max<long>(1, sysconf(_SC_NPROCESSORS_ONLN));
  // Channels are worker threads: each one only adds bandwidth if it gets a core of its own, so by
  // default a rank takes the cores of this host divided among the ranks on it (at least one).
  // A rank that reaches a peer over the network also runs a proxy thread (lesson 08), which needs
  // a core's share as well: over veth on 2 cores, 1 channel + proxy moves 64 MiB in 39 ms, 2 in 49.
  bool net = comm->nRanks > 1 && comm->tun.p2pDisable && comm->tun.shmDisable;
  for (const PeerInfo& p : comm->peers) net |= p.hostHash != me.hostHash;
  const int perRank = std::max(cores / std::max(localRanks, 1) - (net ? 1 : 0), 1);
  comm->nChannels = std::max(std::clamp(std::min(perRank, 16), comm->tun.minChannels, comm->tun.maxChannels), 1);
  // More ranks than cores: a waiting rank's peer is probably not running, so yield almost at once
  // (spinning would only burn the time slice the peer needs).
  comm->oversubscribed = localRanks > cores;
  constexpr int kOversubscribedWaitSpin = 8;
  if (comm->tun.waitSpin >= 0) setWaitSpin((uint32_t)comm->tun.waitSpin);
  else if (comm->oversubscribed) setWaitSpin(kOversubscribedWaitSpin);
}

// Values every rank must agree on: rank 0's win.
struct SharedInit {
  SharedTunables tun;
  int32_t nChannels;
  int32_t oversubscribed;  // rank 0's view picks the tuner's table
};

ncclResult_t agreeOnKnobs(ncclComm* comm) {
  std::vector<SharedInit> all(comm->nRanks);
  all[comm->rank] = {comm->tun, comm->nChannels, comm->oversubscribed};
  BATON_CHECK(comm->bootstrap->allGather(all.data(), sizeof(SharedInit)));
  static_cast<SharedTunables&>(comm->tun) = all[0].tun;
  comm->nChannels = all[0].nChannels;
  comm->oversubscribed = all[0].oversubscribed != 0;
  return ncclSuccess;
}

// Which processes of this host this rank may reach with single copies, in both directions
// (lesson 09). Every rank probes its local peers and learns every other rank's answers, so the two
// ends of an edge agree. Skipped by every rank alike when no two ranks are processes of one host.
ncclResult_t agreeOnSingleCopy(ncclComm* comm) {
  const int n = comm->nRanks;
  comm->peerCopy = crossMemoryPeerCopy(comm->livenessPids.data());
  bool localProcesses = false;
  for (const PeerInfo& a : comm->peers)
    for (const PeerInfo& b : comm->peers)
      localProcesses |= a.hostHash == b.hostHash && a.pidHash != b.pidHash && a.pidNs == b.pidNs && a.pidNs != 0;
  if (!localProcesses || comm->tun.singleCopy == 0) return ncclSuccess;
  // Under Yama's ptrace_scope 1 every rank lets its peers attach before any of them probes
  // (cross_memory.h): a barrier orders every rank's prctl before every probe, taken by every rank
  // alike only where some rank's kernel is at scope 1, so other machines' inits pay nothing.
  std::string attachNote;
  if (!allowPeerAttach(yamaPtraceScope(), &attachNote))
    BATON_INFO(kSubInit, "no single copies from other processes to this one: %s; AllReduces use the FIFO",
               attachNote.c_str());
  else if (!attachNote.empty()) BATON_INFO(kSubInit, "%s", attachNote.c_str());
  bool anyScope1 = false;
  for (const PeerInfo& p : comm->peers) anyScope1 |= p.yamaScope1 != 0;
  if (anyScope1) BATON_CHECK(comm->bootstrap->barrier());
  std::vector<uint8_t> allowed((size_t)n * n, 0);  // [a * n + b]: a may read and write b's memory
  uint8_t* mine = &allowed[(size_t)comm->rank * n];
  for (int r = 0; r < n; ++r) {
    // NCCL_P2P_DISABLE: no direct path between local ranks, this one included.
    if (!comm->livenessPids[r] || comm->tun.p2pDisable) continue;
    std::string why;
    mine[r] = crossMemoryProbe(comm->livenessPids[r], comm->peers[r].crossMemoryProbe, &why);
    if (!mine[r])
      BATON_INFO(kSubInit, "no single copy to rank %d (pid %d): %s; AllReduces with it use the FIFO", r,
                 comm->livenessPids[r], why.c_str());
  }
  BATON_CHECK(comm->bootstrap->allGather(allowed.data(), n));
  int reached = 0;
  for (int r = 0; r < n; ++r) reached += mine[r] && allowed[(size_t)r * n + comm->rank];
  comm->singleCopyAll = reached == n - 1;
  // Whether the FIFO beats single copies for AllReduce here depends on how near the processes'
  // caches are (cache_distance.h); measured only where the default would use single copies: every
  // pair allowed both ways (which every rank reads alike from the gathered matrix).
  bool allPairs = true;
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) allPairs &= a == b || allowed[(size_t)a * n + b];
  const bool measure = comm->tun.singleCopy < 0 && !comm->oversubscribed && allPairs;
  if (measure)
    BATON_CHECK(
        measureCacheDistance(comm->rank, comm->peers, *comm->bootstrap, &comm->cacheRoundTripNs, &comm->cachesFar));
  const bool unused = comm->tun.singleCopy < 0 && comm->oversubscribed;
  char distance[160] = "";
  if (measure && comm->cacheRoundTripNs > 0)
    snprintf(distance, sizeof distance, " (caches %s: a cache line's round trip between processes took %.0f ns)",
             comm->cachesFar ? "far apart" : "near", comm->cacheRoundTripNs);
  BATON_INFO(kSubInit, "single copy (cross-memory attach) with %d of %d peer ranks%s%s", reached, n - 1,
             !comm->singleCopyAll ? "; not all, so AllReduces use the FIFO"
             : unused
                 ? "; not used: more local ranks than cores, where it measured slower (BATON_SINGLE_COPY=1 forces it)"
             : !comm->cachesFar
                 ? ": AllGathers and Broadcasts use it; AllReduces the FIFO, which measured faster between near caches "
                   "(BATON_SINGLE_COPY=1 forces it)"
                 : ": AllReduces between processes from BATON_SINGLE_COPY_BYTES use it",
             distance);
  return ncclSuccess;
}

// Channels, their rings and trees (lessons 06, 07), ring connections, and the workers.
ncclResult_t buildChannels(ncclComm* comm) {
  for (int c = 0; c < comm->nChannels; ++c) {
    auto ch = std::make_unique<Channel>();
    ch->id = c;
    comm->channels.push_back(std::move(ch));
  }
  BATON_CHECK(commBuildGraph(comm));
  if (comm->nRanks > 1)
    for (auto& ch : comm->channels) BATON_CHECK(connectRing(comm, *ch));
  if (comm->rank == 0 && logEnabled(kLogInfo, kSubInit)) {
    for (auto& ch : comm->channels) {
      std::string order;
      for (int r : ch->ringUserRanks) order += " " + std::to_string(r);
      BATON_INFO(kSubInit, "Channel %02d/%02d :%s", ch->id, comm->nChannels, order.c_str());
    }
  }
  comm->peerSendConn.resize(comm->nRanks);
  comm->peerRecvConn.resize(comm->nRanks);
  comm->peerSend.resize(comm->nRanks);
  comm->peerRecv.resize(comm->nRanks);
  for (auto& ch : comm->channels) {
    char name[16];
    snprintf(name, sizeof name, "baton r%d c%d", comm->rank, ch->id);
    ch->worker.start(name);
  }
  return ncclSuccess;
}

// The CUDA backend (src/gpu/gpu_comm.h): device rings when every rank drives a device on this host.
ncclResult_t initGpu(ncclComm* comm) {
  BATON_CHECK(GpuComm::create(comm, &comm->gpu, &comm->gpuWhy));
  if (comm->gpu) {
    std::lock_guard<std::mutex> lock(comm->firstErrorMu);
    comm->gpuAbortFlag = comm->gpu->abortFlag();
    if (comm->asyncError.load() != ncclSuccess) comm->gpu->abort();  // failed before we were listening
    return ncclSuccess;
  }
  if (comm->gpuDev < 0) comm->gpuWhy = cudaBackendStatus();  // this rank's own reason says more
  BATON_INFO(kSubInit, "rank %d: not a GPU communicator (collectives on host buffers only): %s", comm->rank,
             comm->gpuWhy.c_str());
  return ncclSuccess;
}

// Ranks in other processes can fail on their own: watch them (lesson 10). Threads of one process
// share its fate, so a communicator of threads only needs no watchdog.
ncclResult_t startWatchdog(ncclComm* comm) {
  bool multiProcess = false;
  for (const PeerInfo& p : comm->peers) multiProcess |= p.pidHash != comm->peers[comm->rank].pidHash;
  if (!multiProcess || comm->tun.failTimeoutNs == 0) return ncclSuccess;
  BATON_CHECK(Watchdog::start(comm, comm->tun.failTimeoutNs, &comm->watchdog));
  // A bootstrap message (a shrink's id, a registration's handles) that finds its peer gone is news
  // for the failure detector: the survivors' next agreement must count that rank, even if its
  // watchdog connection has not been seen closing yet.
  comm->bootstrap->onPeerGone([comm](int peer, const std::string& why) {
    if (comm->watchdog) comm->watchdog->reportDead(peer, why);
  });
  return ncclSuccess;
}

}  // namespace

ncclResult_t commInitJob(ncclComm* comm, const BootstrapHandle& id) {
  comm->id = id;
  comm->commHash = fnv1a(&id, sizeof id);
  BATON_CHECK(Bootstrap::create(id, comm->rank, comm->nRanks, &comm->abortFlag, &comm->bootstrap));
  BATON_CHECK(exchangePeerInfo(comm));
  sizeForThisHost(comm);
  BATON_CHECK(agreeOnKnobs(comm));
  BATON_CHECK(agreeOnSingleCopy(comm));
  BATON_CHECK(buildChannels(comm));
  // After the channels: the plugin's init is told the node count, and the table it may rewrite is
  // this communicator's (the path alike on every rank: rank 0's view of oversubscription).
  comm->tunerPlugin =
      TunerPlugin::start(comm->commHash, comm->nRanks, comm->nNodes, tuningPathOf(comm), &comm->tun.model);
  comm->profiler = ProfilerPlugin::start(comm->commHash, comm->config.commName, comm->nNodes, comm->nRanks, comm->rank);
  if (comm->proxy && comm->profiler) comm->proxy->setProfiler(comm->profiler.get());
  if (const size_t n = flightRecorderEntries()) comm->flight = std::make_unique<FlightRecorder>(n, comm->nChannels);
  dumpSignalSetup();
  BATON_CHECK(initGpu(comm));
  BATON_CHECK(startWatchdog(comm));
  BATON_CHECK(comm->bootstrap->barrier());
  BATON_INFO(kSubInit, "comm %p rank %d nRanks %d nChannels %d stepBytes %zu - Init COMPLETE", (void*)comm, comm->rank,
             comm->nRanks, comm->nChannels, comm->tun.stepBytes);
  return ncclSuccess;
}

ncclResult_t runInitJob(ncclComm* comm, std::function<ncclResult_t()> job) {
  if (comm->blocking) {
    const ncclResult_t res = job();
    comm->initState.store(res);
    return res;
  }
  comm->initThread = std::thread([comm, job] { comm->initState.store(job()); });
  return ncclInProgress;
}

}  // namespace baton

ncclComm::~ncclComm() = default;

namespace baton {

void commFree(ncclComm* comm) {
  unregisterComm(comm);
  if (comm->initThread.joinable()) comm->initThread.join();
  if (comm->gpu) {  // kernels first: they use the rings' device FIFOs
    if (flagIsSet(&comm->abortFlag)) comm->gpu->abort();
    if (comm->gpu->drain() != ncclSuccess) BATON_WARN("%s", lastError());
    {
      std::lock_guard<std::mutex> lock(comm->firstErrorMu);
      comm->gpuAbortFlag = nullptr;  // a failure from now on finds no GpuComm to stop
    }
    comm->gpu.reset();
  }
  comm->tunerPlugin.reset();  // its finalize; the library closes with the process's last communicator
  comm->watchdog.reset();     // says goodbye: the peers do not take this rank's leaving for a failure
  for (auto& ch : comm->channels) ch->worker.stop();
  if (comm->proxy) {
    // Sends complete when their data is staged: let the proxy put it on the wire first (not
    // after an abort or a failure, when nobody waits for it).
    if (!flagIsSet(&comm->abortFlag) && !comm->revoked.load() && !comm->proxy->drain(10ull * 1000000000))
      BATON_WARN("rank %d: the proxy did not finish sending within 10 s of ncclCommDestroy", comm->rank);
    comm->proxy->stop();  // before the connections whose FIFOs it drives go away
  }
  comm->profiler.reset();                          // its finalize, once no part and no proxy step can record an event
  if (traceEnabled()) traceFlush(comm->commHash);  // ranks of one job share the id's hash: one timeline
  comm->channels.clear();
  comm->peerSendConn.clear();
  comm->peerRecvConn.clear();
  comm->windows.reset();  // workers are stopped: nothing reads peers' memory any more
  comm->reg.reset();
  comm->peerMaps.reset();
  comm->bootstrap.reset();
  comm->magic = 0;
  delete comm;
}

}  // namespace baton

// The communicator: what one rank owns (bootstrap, peers, channels and their connections, workers)
// and the knobs it was created with. `struct ncclComm` is the object behind ncclComm_t.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "channel_worker.h"
#include "coll_args.h"
#include "nccl.h"
#include "proxy.h"
#include "transport.h"
#include "tuner/tuner.h"
#include "fault/watchdog.h"

namespace baton {

constexpr uint64_t kCommMagic = 0x6261746f6e636f6dull;  // "batoncom"
constexpr int kMaxChannels = 64;                         // MAXCHANNELS
constexpr int kMaxRedOps = 64;                           // PreMulSum slots per communicator

// One channel's tree connections (lesson 07): one connector per direction of each tree edge, made
// on the channel's first tree operation.
struct TreeConns {
  int up = -1;                          // parent (user rank), -1 at the root
  int down[kTreeMaxArity] = {-1, -1, -1};
  int nDown = 0;
  bool connected = false;
  std::unique_ptr<Connection> upSendConn, downRecvConn, upRecvConn[kTreeMaxArity], downSendConn[kTreeMaxArity];
  alignas(128) ConnDev upSend;
  alignas(128) ConnDev downRecv;
  alignas(128) ConnDev upRecv[kTreeMaxArity];
  alignas(128) ConnDev downSend[kTreeMaxArity];
};

// One channel: a ring (position, order, connectors to next and from previous), a tree, and its worker.
// Cache-line aligned: the step counters in ringSend/ringRecv change every FIFO step, and another
// rank's channel (a thread of this process) may sit next to this one in memory.
struct alignas(128) Channel {
  int id = 0;
  std::vector<int> ringUserRanks;  // position -> user rank
  int ringIndex = 0;
  std::unique_ptr<Connection> sendConn, recvConn;
  alignas(128) ConnDev ringSend;
  alignas(128) ConnDev ringRecv;
  TreeConns tree;
  int treeIndex = 0;  // which tree of the double binary tree (0 or 1)
  ChannelWorker worker;
};

// A PreMulSum operator created by ncclRedOpCreatePreMulSum.
struct RedOpSlot {
  bool used = false;
  ncclDataType_t type = ncclFloat;
  ncclScalarResidence_t residence = ncclScalarHostImmediate;
  unsigned char value[8] = {};  // the scalar, copied at creation (host-immediate)
  const void* ptr = nullptr;    // the scalar's address, read when the operation runs (device residence)
};

// Knobs read once at init (docs/env.md).
struct Tunables {
  size_t stepBytes = 512 << 10;     // NCCL_BUFFSIZE / NCCL_STEPS (Simple)
  size_t llStepBytes = 64 << 10;    // NCCL_LL_BUFFSIZE / NCCL_STEPS
  size_t ll128StepBytes = 614400;   // NCCL_LL128_BUFFSIZE / NCCL_STEPS
  size_t p2pStepBytes = 128 << 10;  // NCCL_P2P_NET_CHUNKSIZE-like: p2p FIFO step
  int fifoDepth = kSteps;           // BATON_FIFO_DEPTH: slots a sender may fill ahead (lesson 03)
  int chunkSteps = 4;               // FIFO steps per ring chunk (NCCL's CHUNKSTEPS)
  int allreduceAlgo = kAlgoRing;    // BATON_ALLREDUCE_ALGO=naive|ring (lesson 01's stage 0)
  size_t minChannelBytes = 64 << 10;  // BATON_MIN_CHANNEL_BYTES: below this per channel, use fewer
  uint64_t waitTimeoutNs = 0;       // BATON_WAIT_TIMEOUT seconds (0: no timeout)
  uint64_t failTimeoutNs = 5000000000ull;  // BATON_TIMEOUT seconds: a silent peer is dead (0: no watchdog)
  bool atomicCollectives = false;   // BATON_ATOMIC_COLLECTIVES: all-or-nothing AllReduce (lesson 10)
  int jitter = 0;                   // BATON_JITTER
  bool p2pDisable = false;          // NCCL_P2P_DISABLE
  bool shmDisable = false;          // NCCL_SHM_DISABLE
  bool streamStores = true;         // BATON_STREAM_STORES: direct paths write large outputs with streaming stores
  bool direct = true;               // BATON_DIRECT: direct paths between ranks of one process (lesson 05)
  int ranksPerNode = 0;             // BATON_RANKS_PER_NODE: k consecutive ranks form one node of the graph (0: real hosts)
  int minChannels = 1, maxChannels = 64;  // NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS (or config CTAs)
  TuningModel model;                // tuning file or built-in (tuner.h)
  AlgoProtoMask mask;               // NCCL_ALGO / NCCL_PROTO
};

}  // namespace baton

struct ncclComm {
  uint64_t magic = baton::kCommMagic;
  int rank = 0;
  int nRanks = 0;
  int cudaDev = 0;
  bool blocking = true;
  ncclConfig_t config{};
  uint64_t commHash = 0;
  baton::BootstrapHandle id{};
  baton::Tunables tun;

  std::unique_ptr<baton::Bootstrap> bootstrap;
  std::vector<baton::PeerInfo> peers;
  std::vector<int32_t> livenessPids;  // per rank: pid of a process on this host we can watch, else 0
  int nChannels = 1;
  int nNodes = 1;               // hosts of the graph (BATON_RANKS_PER_NODE groups, else real hosts)
  bool allInProcess = false;    // every rank is a thread of this process (direct paths possible)
  bool oversubscribed = false;  // more ranks on this host than cores (rank 0's view, shared)
  std::vector<std::unique_ptr<baton::Channel>> channels;

  // Direct peer-to-peer connectors (ncclSend/ncclRecv, the naive allreduce), made on first use.
  std::vector<std::unique_ptr<baton::Connection>> p2pSendConn, p2pRecvConn;
  // Drives NET connections (lesson 08); its thread starts with the first one.
  std::unique_ptr<baton::Proxy> proxy = std::make_unique<baton::Proxy>(this);
  std::vector<baton::ConnDev> p2pSend, p2pRecv;

  int abortFlag = 0;                            // read by every wait (exec_model.h)
  std::atomic<int> initState{ncclInProgress};   // ncclSuccess once usable, or the init error
  std::atomic<int> asyncError{ncclSuccess};     // first failure of an operation
  std::mutex firstErrorMu;
  std::string firstError;                       // its message
  std::atomic<int> inflight{0};                 // submitted parts not finished yet
  std::thread initThread;                       // non-blocking init
  std::atomic<bool> finalized{false};
  std::atomic<bool> revoked{false};             // ncclCommRevoke: no new work; parent of shrink/split only
  // Failure detector and agreement (lesson 10): only when ranks are in more than one process.
  std::unique_ptr<baton::Watchdog> watchdog;
  uint64_t atomicSeq = 0;                       // all-or-nothing AllReduces run (their vote keys)
  // A child (split, shrink, grow) being initialised from this communicator: its abort flag and its
  // members (ranks of this one), so a member dying mid-shrink ends the child's init (NCCL's
  // childAbortFlag) instead of leaving the others in its rendezvous until BATON_BOOTSTRAP_TIMEOUT.
  std::mutex childMu;
  int* childAbortFlag = nullptr;
  std::vector<int> childMembers;
  ncclUniqueId growId{};                        // ncclCommGetUniqueId's id, until a grow uses it
  bool growIdSet = false;
  ncclUniqueId growIdUsed{};                    // the last one a grow used (a second use is an error)
  bool growIdUsedSet = false;
  uint64_t opCount = 0;

  std::mutex redOpMu;
  baton::RedOpSlot redOps[baton::kMaxRedOps];
};

namespace baton {

// Which of the tuner's tables applies to this communicator (tuner.h).
inline int tuningPathOf(const ncclComm* comm) {
  if (comm->allInProcess && comm->tun.direct) return kPathDirect;
  return comm->oversubscribed ? kPathOversub : kPathShm;
}

// Live communicators, so a destroyed or foreign pointer is an error instead of a crash.
bool registerComm(ncclComm* comm);  // false: the registry is full
void unregisterComm(ncclComm* comm);
// Validates `comm` for API function `fn`: NULL, not live, aborted, still initialising, failed.
ncclResult_t checkCommReady(ncclComm* comm, const char* fn);
ncclResult_t checkCommLive(ncclComm* comm, const char* fn);
// A communicator that may be the parent of a split or shrink: live, initialised, not finalized;
// revoked or failed is fine (that is what shrink is for).
ncclResult_t checkCommParent(ncclComm* comm, const char* fn);
// Stops this rank's in-flight work on comm (raise the abort flag, wait for it to drain), then
// lowers the flag again so the bootstrap can be used: revoke and NCCL_SHRINK_ABORT.
void commQuiesce(ncclComm* comm);
// A child communicator of `parent` (split, shrink, grow): this rank is newRank of nRanks, and
// parentRanks are the parent's members in it (a member found dead aborts the child's init).
// getId fetches the child's unique id (childIdFromRank0 for split and shrink). Blocking: returns
// when the child is made; non-blocking: *newcomm at once, ncclInProgress, the init on a thread.
ncclResult_t commInitChild(ncclComm* parent, const std::vector<int>& parentRanks, int nRanks, int newRank,
                           std::function<ncclResult_t(ncclUniqueId*)> getId, const ncclConfig_t& cfg, const char* fn,
                           ncclComm_t* newcomm);
// The child's rank 0 makes a bootstrap root and sends its id to the other members over the
// parent's bootstrap (`tag`), point to point: no collective over the parent.
ncclResult_t childIdFromRank0(ncclComm* parent, const std::vector<int>& parentRanks, int newRank, uint64_t tag,
                              ncclUniqueId* id);

// ncclCommInitRank's body (comm_api.cc): now, on a thread (non-blocking), or at ncclGroupEnd.
ncclResult_t initRank(ncclComm_t* out, int nranks, const ncclUniqueId* commId, int rank, const ncclConfig_t* config,
                      const char* fn, int cudaDev);
// Init steps (init.cc), shared by CommInitRank, CommInitAll and CommSplit.
ncclResult_t commAlloc(ncclComm** out, int nranks, int rank, const ncclConfig_t* config, const char* fn);
ncclResult_t commInitJob(ncclComm* comm, const BootstrapHandle& id);  // the collective part
// Connections (connect.cc). Channel `ch`'s ring, both directions (init).
ncclResult_t connectRing(ncclComm* comm, Channel& ch);
// Makes sure direct connectors exist towards these peers (both sides call it with mirrored lists).
ncclResult_t connectPeers(ncclComm* comm, const std::vector<int>& sendPeers, const std::vector<int>& recvPeers);
// Connects channel `ch`'s tree edges; every rank calls it on its first tree operation.
ncclResult_t connectTree(ncclComm* comm, Channel& ch);
// The topology, rings and trees of a communicator (comm_topo.cc): fills every channel's ring order and tree.
ncclResult_t commBuildGraph(ncclComm* comm);
// A FIFO layout with the buffers of every protocol, as the communicator's knobs size them.
FifoLayout collFifoLayout(const ncclComm* comm);
void commFree(ncclComm* comm);  // stops workers, releases connections and segments
// Records the communicator's first failure (code and message) and raises its abort flag so this
// rank's other channels drain instead of waiting for a peer that will not come.
void commSetError(ncclComm* comm, ncclResult_t err, const char* message);
// Marks this rank's ring FIFOs with abortedBy = rank + 1 (failure, revoke, abort): neighbours stop.
void commAnnounceFailure(ncclComm* comm);
// The watchdog found rank `failed` of comm dead: a child being made with it as a member stops.
void commAbortChildInit(ncclComm* comm, int failed);
// The first failure's message ("" if none).
std::string commFirstError(ncclComm* comm);

}  // namespace baton

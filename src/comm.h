// The communicator: what one rank owns (bootstrap, peers, channels and their connections, workers)
// and the knobs it was created with. `struct ncclComm` is the object behind ncclComm_t.
//
// The core's header: it includes only the layers below the core (tests/lint/check_layers.py). What
// the subsystems above keep in a communicator (the failure detector, registration and windows, the
// GPU communicator, the fused operations' memory) it holds by pointers to types declared here and
// defined in their own headers; a .cc that uses one includes that subsystem's header itself.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "channel_worker.h"
#include "coll_args.h"
#include "misc/flight_recorder.h"
#include "nccl.h"
#include "profiler/profiler_plugin.h"
#include "transport.h"
#include "tuner/tuner.h"
#include "tuner/tuner_plugin.h"

namespace baton {
class Proxy;         // proxy.h
class Watchdog;      // fault/watchdog.h
class PeerMappings;  // register/peer_mappings.h
class WindowTable;   // register/window.h
class GpuComm;       // gpu/gpu_comm.h
class FusedScratch;  // fused/fused_scratch.h
class FusedWindow;   // fused/fused_window.h

// State of a subsystem above the core that a communicator owns: the subsystem makes it together
// with a deleter that knows its type (makeSubsystem), so the core releases it (commFree) without
// including the subsystem's header.
template <typename T>
struct SubsystemDeleter {
  void (*release)(T*) = nullptr;
  void operator()(T* p) const { release(p); }
};
template <typename T>
using SubsystemPtr = std::unique_ptr<T, SubsystemDeleter<T>>;
// For the subsystem's own .cc, where T is complete.
template <typename T, typename... Args>
SubsystemPtr<T> makeSubsystem(Args&&... args) {
  return SubsystemPtr<T>(new T(std::forward<Args>(args)...), SubsystemDeleter<T>{[](T* p) { delete p; }});
}

// What the core's planner and executors ask of the memory a user registered (lesson 09): whether an
// operation's buffer lies inside a registration (ncclCommRegister, or a window), and which
// ncclMemAlloc allocation holds it (peers of this host map those). The registration subsystem
// answers (register/registration.h's RegCache implements this); the core holds it by this
// interface, so it includes nothing of register/. The lookups cost one virtual call, made only
// when something is registered.
class RegisteredMemory {
 public:
  virtual ~RegisteredMemory() = default;
  bool empty() const { return count_.load(std::memory_order_relaxed) == 0; }  // no lock: the planner's fast path
  // [p, p + bytes) lies inside one registration.
  virtual bool covers(const void* p, size_t bytes) const = 0;
  // The id of the ncclMemAlloc allocation that holds all of [p, p + bytes), 0 if none does.
  virtual uint64_t allocationOf(const void* p, size_t bytes) const = 0;

 protected:
  std::atomic<size_t> count_{0};  // registrations, kept by the implementation
};

constexpr uint64_t kCommMagic = 0x6261746f6e636f6dull;  // "batoncom"
constexpr int kMaxChannels = 64;                        // MAXCHANNELS
constexpr int kMaxRedOps = 64;                          // PreMulSum slots per communicator

// One channel's tree connections (lesson 07): one connector per direction of each tree edge, made
// on the channel's first tree operation.
struct TreeConns {
  int up = -1;  // parent (user rank), -1 at the root
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

// Knobs every rank must agree on: rank 0's values win at init, where they are exchanged as one
// struct (commAgreeOnKnobs). Which environment variable sets each one, and its default, is written
// once, in readTunables (comm_config.cc); docs/env.md lists them for users.
struct SharedTunables {
  size_t stepBytes;           // NCCL_BUFFSIZE / NCCL_STEPS (Simple)
  size_t llStepBytes;         // NCCL_LL_BUFFSIZE / NCCL_STEPS
  size_t ll128StepBytes;      // NCCL_LL128_BUFFSIZE / NCCL_STEPS
  size_t sendrecvStepBytes;   // NCCL_P2P_CHUNKSIZE: the send/recv FIFO step
  int fifoDepth;              // BATON_FIFO_DEPTH: slots a sender may fill ahead (lesson 03)
  int chunkSteps;             // BATON_CHUNK_STEPS: FIFO steps per ring chunk (NCCL's CHUNKSTEPS)
  CollAlgo allreduceAlgo;     // BATON_ALLREDUCE_ALGO: naive (lesson 01's stage 0), ring, oneshot; auto = kAlgoUndef
  size_t oneShotStepBytes;    // BATON_ONESHOT_STEP: LL step of the direct connectors (one-shot's largest message x 2)
  size_t oneShotBytes;        // BATON_ONESHOT_BYTES: auto picks the one-shot AllReduce up to this size
  size_t proxyAssistBytes;    // BATON_PROXY_ASSIST: ranks of operations up to this size run the proxy's pass (proxy.h)
  size_t oneShotNetBytes;     // BATON_ONESHOT_NET_BYTES: with a peer over NET, the Simple one-shot up to this
                              // (kOneShotNetUnset: 2 ranks up to kOneShotNetPairBytes, more ranks not)
  size_t oneShotSimpleBytes;  // BATON_ONESHOT_SIMPLE_BYTES: ... and its Simple protocol above that, up to this
  size_t minChannelBytes;     // BATON_MIN_CHANNEL_BYTES: below this per channel, use fewer
  bool direct;                // BATON_DIRECT: direct paths between ranks of one process (lesson 05)
  int ranksPerNode;           // BATON_RANKS_PER_NODE: k consecutive ranks form one node of the graph (0: real hosts)
  bool atomicCollectives;  // BATON_ATOMIC_COLLECTIVES: all-or-nothing AllReduce (lesson 10); every rank votes or none
  uint64_t failTimeoutNs;  // BATON_TIMEOUT: a silent peer is dead (0: no watchdog); every rank joins the mesh or none
  TuningModel model;       // rank 0's tuning file or the built-in model (tuner.h): every rank picks alike
  AlgoProtoMask mask;      // NCCL_ALGO / NCCL_PROTO
  bool symmetric;          // BATON_SYMMETRIC: symmetric kernels on symmetric windows (off when NCCL_ALGO is set)
  size_t symOneShotBytes;  // BATON_SYM_ONESHOT_BYTES: symmetric AllReduce up to this size is one-shot
  int symTwoShot;          // BATON_SYM_TWOSHOT: above it, two-shot (1), not (0), -1: on a GPU only (symmetric_plan.h)
  int singleCopy;          // BATON_SINGLE_COPY: 0 off, 1 on where permitted, -1 auto (on unless oversubscribed)
  size_t singleCopyBytes;  // BATON_SINGLE_COPY_BYTES: AllReduces from this size take it
  int alltoallAlgo;        // BATON_ALLTOALL_ALGO: an AlltoAllAlgo (algorithms/alltoall.h); auto = the tuner's
  size_t alltoallBruckBytes;  // BATON_ALLTOALL_BRUCK_BYTES: auto takes Bruck across hosts up to this buffer size
                              // (kAlltoAllBruckUnset: the tuning file's or the built-in, alltoall_choice.h)
  bool checkArgs;             // BATON_CHECK_MODE=debug: every collective's arguments exchanged first (lesson 14)
};
constexpr size_t kAlltoAllBruckUnset = ~size_t(0);
// BATON_ONESHOT_NET_BYTES unset: 2 ranks over NET take the one-shot up to kOneShotNetPairBytes
// (docs/perf.md), more ranks do not.
constexpr size_t kOneShotNetUnset = ~size_t(0);
constexpr size_t kOneShotNetPairBytes = 32 << 10;

// Every knob of a communicator: the shared ones and those each rank keeps for itself.
struct Tunables : SharedTunables {
  uint64_t waitTimeoutNs;        // BATON_WAIT_TIMEOUT: a wait without progress fails (0: never)
  int waitSpin;                  // BATON_WAIT_SPIN: pauses before a wait yields (-1: by oversubscription)
  int jitter;                    // BATON_JITTER
  bool p2pDisable;               // NCCL_P2P_DISABLE
  bool shmDisable;               // NCCL_SHM_DISABLE
  bool netZeroCopy;              // BATON_NET_ZERO_COPY: registered send/recv buffers skip NET's staging FIFOs
  bool streamStores;             // BATON_STREAM_STORES: large outputs (direct paths, MoE rows) take streaming stores
  int minChannels, maxChannels;  // NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS (or config CTAs)
};

// Reads every knob from the environment and `cfg` (comm_config.cc). Rank 0 also reads the tuning
// file (the others take its model at init). ncclInvalidArgument: NCCL_ALGO / NCCL_PROTO malformed.
ncclResult_t readTunables(const ncclConfig_t& cfg, int rank, Tunables* t);

}  // namespace baton

struct ncclComm {
  ~ncclComm();  // init.cc: one place that destroys the members (proxy.h's Proxy is complete there)

  uint64_t magic = baton::kCommMagic;
  int rank = 0;
  int nRanks = 0;
  int cudaDev = 0;
  int gpuDev = -1;  // the CUDA device current at init (InitAll: its devlist's), -1 without one
  bool blocking = true;
  ncclConfig_t config{};
  uint64_t commHash = 0;
  baton::BootstrapHandle id{};
  baton::Tunables tun{};

  std::unique_ptr<baton::Bootstrap> bootstrap;
  std::vector<baton::PeerInfo> peers;
  std::vector<int32_t> livenessPids;  // per rank: pid of a process on this host we can watch, else 0
  int nChannels = 1;
  int nNodes = 1;  // hosts of the graph (BATON_RANKS_PER_NODE groups, else real hosts)
  // Processes of one host (lesson 09): single copies (cross-memory attach) allowed both ways with
  // every other rank (then large AllReduces may take the direct ring).
  bool singleCopyAll = false;
  // How far apart this host's processes' caches are (src/topo/cache_distance.h): a cache line's round
  // trip measured at init (0: not measured), and whether that is far enough for single copies to
  // beat the FIFO for AllReduce (alike on every rank of a host).
  double cacheRoundTripNs = 0;
  bool cachesFar = true;  // not measured: single copies, as before the measurement
  baton::PeerCopy peerCopy{};
  bool allInProcess = false;    // every rank is a thread of this process (direct paths possible)
  bool oversubscribed = false;  // more ranks on this host than cores (rank 0's view, shared)
  std::vector<std::unique_ptr<baton::Channel>> channels;

  // A connector to and from each peer (ncclSend/ncclRecv, the naive allreduce), made on first use.
  std::vector<std::unique_ptr<baton::Connection>> peerSendConn, peerRecvConn;
  std::vector<baton::ConnDev> peerSend, peerRecv;
  bool allPeersConnected = false;  // both ways to every peer (the one-shot's first call made them)
  baton::CollArgs oneShotArgs;     // the 8-byte path's arguments, built once (enqueue.cc)
  // Drives NET connections (lesson 08); its thread starts with the first one. Made by commAlloc.
  std::unique_ptr<baton::Proxy> proxy;

  int abortFlag = 0;                           // read by every wait (exec_model.h)
  std::atomic<int> initState{ncclInProgress};  // ncclSuccess once usable, or the init error
  std::atomic<int> asyncError{ncclSuccess};    // first failure of an operation
  // rank + 1 of the peer whose failure stopped this communicator (0: none known); sent to the ring
  // neighbours with the announcement, so a rank that hears of a failure second hand names its cause.
  std::atomic<int> failureCause{0};
  std::mutex firstErrorMu;
  std::string firstError;        // its message
  std::atomic<int> inflight{0};  // submitted parts not finished yet
  std::thread initThread;        // non-blocking init
  std::atomic<bool> finalized{false};
  std::atomic<bool> revoked{false};  // ncclCommRevoke: no new work; parent of shrink/split only
  // Failure detector and agreement (lesson 10): only when ranks are in more than one process.
  baton::SubsystemPtr<baton::Watchdog> watchdog;
  uint64_t atomicSeq = 0;  // all-or-nothing AllReduces run (their vote keys)
  // A child (split, shrink, grow) being initialised from this communicator: its abort flag and its
  // members (ranks of this one), so a member dying mid-shrink ends the child's init (NCCL's
  // childAbortFlag) instead of leaving the others in its rendezvous until BATON_BOOTSTRAP_TIMEOUT.
  std::mutex childMu;
  int* childAbortFlag = nullptr;
  std::vector<int> childMembers;
  ncclUniqueId growId{};  // ncclCommGetUniqueId's id, until a grow uses it
  bool growIdSet = false;
  ncclUniqueId growIdUsed{};  // the last one a grow used (a second use is an error)
  bool growIdUsedSet = false;
  uint64_t opCount = 0;
  uint64_t p2pCount = 0;  // sends, receives and AlltoAlls recorded (the flight recorder numbers them)
  // Collectives launched, per CollFunc, host and device buffers alike (NCCL's RAS reports them per
  // collective). Written by the launching thread alone, read by the RAS service's threads.
  std::atomic<uint64_t> collCounts[baton::kFuncCount] = {};
  // The tuner's last choice per collective (planColl): a job repeats its sizes, and the model and
  // the NCCL_ALGO / NCCL_PROTO mask are fixed after init, so the same size is not costed again.
  struct TunedChoice {
    int path = -1;
    size_t bytes = 0;
    baton::AlgoProtoChoice choice{};
  } lastTuned[baton::kFuncCount];
  // The last operations and each channel's wait (lesson 14; null with BATON_FLIGHT_RECORDER=0).
  std::unique_ptr<baton::FlightRecorder> flight;
  // NCCL_TUNER_PLUGIN's say in each collective's algorithm, protocol and channels (lesson 16); null: none.
  std::unique_ptr<baton::TunerPlugin> tunerPlugin;
  std::unique_ptr<baton::ProfilerPlugin> profiler;  // NCCL_PROFILER_PLUGIN (profiler/profiler_events.h)

  std::mutex redOpMu;
  baton::RedOpSlot redOps[baton::kMaxRedOps];

  // Buffer registration and windows (lesson 09): src/register/'s state, made by its
  // attachRegistration (register/registration.h), which every maker of a communicator calls right
  // after commAlloc (initRank, commInitChild), and released by commFree. The core asks `reg` through
  // the interface above and only releases the others.
  std::unique_ptr<baton::RegisteredMemory> reg;  // a RegCache
  baton::SubsystemPtr<baton::PeerMappings> peerMaps;
  baton::SubsystemPtr<baton::WindowTable> windows;
  const baton::PeerAddressMap* peerAddressMap = nullptr;  // peerMaps' map for device code (CollArgs::peerMap)

  // The fused operations' working memory (src/fused/fused_scratch.h), made by the first fused call.
  std::shared_ptr<baton::FusedScratch> fusedScratch;
  uint64_t wireCalls = 0;  // include/baton/lowp.h's calls made: numbers stochastic rounding's streams
  std::shared_ptr<baton::FusedWindow> fusedWindow;  // the fused stages' symmetric window, made on first use
  // MoE's low-latency stage across hosts: a window whose device communicator puts to other hosts.
  std::shared_ptr<baton::FusedWindow> moeNetWindow;

  // The CUDA backend (src/gpu/gpu_comm.h): set when every rank drives a device; else why not.
  std::shared_ptr<baton::GpuComm> gpu;
  std::string gpuWhy;
  // `gpu`'s kernels' abort flag (pinned host memory, GpuComm::abortFlag) while they may run, for
  // commSetError (guarded by firstErrorMu): a failure the watchdog or a NET proxy sees stops them at
  // once, not at BATON_WAIT_TIMEOUT. A plain word, so the core raises it without the GPU's header.
  int* gpuAbortFlag = nullptr;
};

namespace baton {

// Which of the tuner's tables applies to this communicator (tuner.h).
// `zeroCopy`: this operation's buffers are registered and every peer is a process of this host
// (lesson 09), so the direct paths apply as between threads.
inline int tuningPathOf(const ncclComm* comm, bool zeroCopy = false) {
  if ((comm->allInProcess || zeroCopy) && comm->tun.direct) return kPathDirect;
  return comm->oversubscribed ? kPathOversub : kPathShm;
}

// Init steps, shared by CommInitRank, CommInitAll, CommSplit, CommShrink and CommGrow. First the
// communicator object (comm_config.cc): config and knobs checked, registered as live. It has no
// registration state yet (the core does not know those types): the caller attaches it next
// (register/registration.h's attachRegistration).
ncclResult_t commAlloc(ncclComm** out, int nranks, int rank, const ncclConfig_t* config, const char* fn);
ncclResult_t commInitJob(ncclComm* comm, const BootstrapHandle& id);  // the collective part (init.cc)
// Runs `job` as `comm`'s initialisation: blocking comms inline, non-blocking ones on a thread
// (ncclCommGetAsyncError reports ncclInProgress until it is done).
ncclResult_t runInitJob(ncclComm* comm, std::function<ncclResult_t()> job);
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
// What a transport is told about a connection of this rank to `peer` on `channel` (its proxy,
// abort flag, the peer's rank); the GPU communicator's NET FIFOs use it too (src/gpu/gpu_fifo.cc).
ConnSetup connSetupFor(ncclComm* comm, int peer, int channel);
void commFree(ncclComm* comm);  // stops workers, releases connections and segments

}  // namespace baton

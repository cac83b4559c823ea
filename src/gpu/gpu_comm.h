// A GPU communicator: the part of a communicator that drives a CUDA device (README's CUDA backend).
//
// When every rank had a CUDA device current at init, each channel's ring gets a FIFO, and so does
// every pair of ranks for send/recv, where its sender can store (gpu_fifo.cc): in device memory,
// reached by pointer from a peer thread of this process (peer access between devices) or through
// a CUDA IPC handle from a peer process; in host memory between devices that cannot reach each
// other; at both ends of a NET connection for a peer on another host. Collectives and sends/receives on device buffers
// then run as kernels on the caller's stream (gpu_launch.cc, gpu_sendrecv.cc), in the order the communicator's calls
// were made; host buffers keep the CPU backend.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cuda/plugin_table.h"
#include "nccl.h"
#include "transport.h"

struct ncclComm;

namespace baton {

struct Task;

class GpuComm {
 public:
  ~GpuComm();
  // The collective part of init (every rank calls it after its rings exist); *out stays null when
  // the communicator is not a GPU one, and `why` says why.
  static ncclResult_t create(ncclComm* comm, std::shared_ptr<GpuComm>* out, std::string* why);

  // Enqueues `t` (a collective on device buffers) on its stream and returns.
  ncclResult_t launch(ncclComm* comm, const Task& t);
  // Enqueues a group's sends and receives on device buffers as one kernel (so pairs that wait for
  // each other progress together) on the first task's stream; the other tasks' streams join it.
  ncclResult_t launchSendRecv(ncclComm* comm, const std::vector<Task>& tasks);
  // ncclAlltoAll between device buffers whose output lies in a window of device memory: whether it
  // can take the store kernel (every device reaches every other, one host, BATON_ALLTOALL_ALGO
  // auto or window). launchAlltoAll runs a Task::kAlltoAll: by stores into the windows, or as the
  // copies and send/recv kernels of alltoall_steps.h (pairwise, Bruck, in place; gpu_alltoall.cc).
  bool alltoallByWindow(ncclComm* comm, const void* recvbuff, size_t bytes);
  ncclResult_t launchAlltoAll(ncclComm* comm, const Task& t);
  // Raises the kernels' abort flag (ncclCommAbort): their waits give up.
  void abort();
  // That flag (pinned host memory; nullptr if it could not be made), which commSetError raises
  // itself (ncclComm::gpuAbortFlag) with the same release store as abort().
  int* abortFlag() const { return abort_; }
  // Waits for every kernel launched so far (ncclCommDestroy, ncclCommAbort).
  ncclResult_t drain();
  // A kernel's failure, once (ncclCommGetAsyncError): ncclSuccess while none failed.
  ncclResult_t takeFailure(ncclComm* comm);

  int device() const { return dev_; }
  int channels() const { return nChannels_; }

 private:
  // A FIFO this rank made, or a peer's it mapped: where it lies (gpu_fifo.cc).
  enum FifoWhere : int32_t { kFifoDevice = 0, kFifoPinned = 1, kFifoShared = 2, kFifoNet = 3 };
  struct FifoMem {
    void* view = nullptr;  // the address kernels use
    void* base = nullptr;  // what to free or unmap (kFifoNet: to unregister; the connection frees it)
    size_t bytes = 0;
    int32_t where = kFifoDevice;
    std::string shmName;              // kFifoShared that we created: unlinked at free (the sender may never have)
    std::shared_ptr<Connection> net;  // kFifoNet: this end of a NET connection (its proxy task holds it too)
  };
  // What a receiver tells the rank that sends to it about the FIFO it made.
  struct FifoInfo {
    uint64_t pidHash;
    uint64_t ptr;  // the FIFO in the owner's address space (threads of one process use it as is)
    uint64_t bytes;
    int32_t dev;
    int32_t where;  // FifoWhere
    int32_t hasHandle;
    unsigned char handle[kIpcHandleBytes];  // device memory of another process: its allocation's CUDA IPC handle
    uint64_t ipcOffset;                     // and where the FIFO lies in that allocation
    char shmName[64];                       // kFifoShared: the segment to map
    ConnectInfo net;                        // kFifoNet: what the sender's NET transport connects to
  };
  // Which ranks' devices can store into which ranks' device memory (all-gathered at init;
  // NCCL_P2P_DISABLE: none but their own), so each FIFO goes where its sender can write it, and
  // whether some ring then runs through host memory (gpu_fifo.cc).
  ncclResult_t findReach(ncclComm* comm, bool* ringsInHost);
  // create's steps (gpu_comm.cc).
  ncclResult_t agreeOnChannels(ncclComm* comm, bool ringsInHost);
  ncclResult_t connectRings(ncclComm* comm, const FifoLayout& layout, std::vector<GpuChannelDev>* chans, bool* ipc);
  ncclResult_t makeStatusAndEvents(ncclComm* comm);
  // A FIFO laid out as `layout` that `sender` will write: in our device memory if its device
  // reaches ours, else in pinned host memory (shared memory for another process), as NCCL's SHM
  // transport, else (another host, NCCL_SHM_DISABLE) the receiving end of a NET connection on
  // `channel`'s NIC.
  ncclResult_t makeFifo(ncclComm* comm, int sender, const FifoLayout& layout, int channel, FifoMem* out,
                        FifoInfo* info);
  // The sender's view of `peer`'s FIFO: its pointer, a CUDA IPC mapping, a shared-memory mapping or
  // our end of a NET connection to it. `layout` is this rank's for it: a peer that laid it out
  // otherwise is refused.
  ncclResult_t openFifo(ncclComm* comm, const FifoInfo& theirs, int peer, const FifoLayout& layout, int channel,
                        void** fifo, bool* ipc);
  // One end of a NET connection, its host FIFO pinned and mapped for our device.
  ncclResult_t pinNetFifo(ncclComm* comm, std::unique_ptr<Connection> conn, FifoMem* out);
  void freeFifo(const FifoMem& f);
  // The two halves of one connection at init. The receiver makes the FIFO `sender` will write,
  // keeps it in `keep` and sends its description on `tag`; the sender takes it on `tag` and opens
  // it. *conn is that side's connector (both with the communicator's FIFO depth).
  ncclResult_t offerFifo(ncclComm* comm, int sender, uint64_t tag, const FifoLayout& layout, int channel,
                         std::vector<FifoMem>* keep, ConnDev* conn);
  ncclResult_t takeFifo(ncclComm* comm, int receiver, uint64_t tag, const FifoLayout& layout, int channel,
                        ConnDev* conn, bool* ipc);
  // Tree AllReduce's FIFOs on the first treeChannels_ channels, their connectors aimed at
  // channelsDev_ (allocated, filled from `chans` afterwards), gpu_tree.cc.
  ncclResult_t connectTrees(ncclComm* comm, std::vector<GpuChannelDev>& chans, const FifoLayout& layout);
  // A FIFO from and to every other rank for send/recv (at init: a group driven by one thread could
  // not connect on first use, since a send's connection waits for its receiver's), gpu_sendrecv.cc.
  ncclResult_t connectPeers(ncclComm* comm);
  // Around every launch: orders `stream` after the communicator's previous kernel, then records
  // this one, also when the stream is being captured into a CUDA graph (gpu_graph.cc).
  struct LaunchOrder {
    bool captured = false;
    unsigned long long id = 0;  // the capture's
  };
  ncclResult_t beforeLaunch(ncclComm* comm, cudaStream_t stream, LaunchOrder* o);
  // What every collective launch of this communicator shares: channels, device, abort flag, status.
  void fillLaunch(const ncclComm* comm, GpuCollLaunch* l) const;
  // Turns `l` into the symmetric kernel's launch when `t` can take it (gpu_launch.cc).
  bool planSymmetric(ncclComm* comm, const Task& t, GpuCollLaunch* l);
  ncclResult_t launchAlltoAllSteps(ncclComm* comm, const Task& t);
  ncclResult_t afterLaunch(ncclComm* comm, cudaStream_t stream, const LaunchOrder& o);
  // A group's streams must all be outside any capture or all in the same one (as NCCL requires).
  ncclResult_t sameCapture(ncclComm* comm, cudaStream_t first, const std::vector<cudaStream_t>& others);

  const CudaBackend* b_ = nullptr;
  int dev_ = 0;
  int nChannels_ = 0;
  int rank_ = 0;
  std::vector<FifoMem> fifos_;      // ours: one receive FIFO per channel
  std::vector<void*> opened_;       // peers' allocations opened through CUDA IPC (their FIFOs lie inside)
  std::vector<FifoMem> mapped_;     // peers' FIFOs in shared memory that we mapped
  std::vector<FifoMem> peerFifos_;  // ours: one send/recv FIFO from each peer
  std::vector<FifoMem> treeFifos_;  // ours: the trees' receive FIFOs
  int treeChannels_ = 0;            // channels with a tree (0: AllReduce takes the ring)
  std::vector<uint8_t> reach_;      // [r * n + q]: rank r's device can store into rank q's
  bool allReach_ = false;           // every entry of reach_ (the symmetric kernel's condition)
  int hostFifos_ = 0;               // of ours, how many are in host memory (INFO)
  int ipcInside_ = 0;               // of ours exported through CUDA IPC, how many lie inside a larger allocation (INFO)
  Proxy* proxy_ = nullptr;          // the communicator's, held awake while we have NET FIFOs
  int netFifos_ = 0;                // ours and our ends of peers': how many are NET connections (INFO)
  void* peerConnsDev_ = nullptr;    // ConnDev[2 * nRanks]: the send to rank p at p, the receive from p at nRanks + p
  std::vector<std::string> peerWhy_;  // per connector as peerConnsDev_: why it has no FIFO (empty: it has one)
  void* channelsDev_ = nullptr;       // GpuChannelDev[nChannels_]
  void* userRanksDev_ = nullptr;      // int[nChannels_][nRanks]
  GpuStatus* status_ = nullptr;       // pinned; statusDev_ is the device's view of it
  GpuStatus* statusDev_ = nullptr;
  int* abort_ = nullptr;  // pinned; abortDev_ is the device's view of it
  int* abortDev_ = nullptr;
  void* lastWork_ = nullptr;  // event after the last launch: the next one waits for it
  void* join_ = nullptr;      // orders a send/recv kernel's stream after its group's other streams
  // Per capture in progress (the most recently used few): an event recorded after its last
  // launch, inside the capture, so the next launch of the same capture follows it.
  struct CaptureTail {
    unsigned long long id = 0;
    void* event = nullptr;
    unsigned long long used = 0;
  };
  static constexpr int kCaptureTails = 4;
  CaptureTail captures_[kCaptureTails];
  unsigned long long capturedLaunches_ = 0;
  bool launched_ = false;
  bool failureTaken_ = false;
};

// Channels that get a tree when NCCL_ALGO leaves AllReduce to Tree (each edge's FIFOs take about
// 9 MB a direction on top of the ring's).
constexpr int kGpuTreeChannels = 8;
// Whether NCCL_ALGO leaves AllReduce to Tree (it allows Tree and not Ring): the GPU has no tuner
// weighing them yet, so the ring runs unless asked not to.
bool gpuTreeWanted(const ncclComm* comm);

// A plugin call that failed, as ncclUnhandledCudaError naming the rank, the call and CUDA's error.
ncclResult_t gpuCallFailed(const CudaBackend* b, const char* what, int rank);
#define GPU_CALL(call, what) \
  if ((call) != 0) return gpuCallFailed(b, what, comm->rank)

// A call on host buffers runs on the CPU when it is made, so a graph could not repeat it: with
// `stream` being captured into a CUDA graph it is ncclInvalidUsage, on any communicator
// (gpu_graph.cc).
ncclResult_t refuseHostCapture(ncclComm* comm, cudaStream_t stream, const char* fn);

// Whether the collective `t` on `comm` runs on the device, or why it cannot: ncclSuccess and
// *onDevice = false for host buffers; ncclInvalidUsage / ncclInvalidArgument naming the argument
// for device buffers the communicator cannot serve.
ncclResult_t gpuClassify(ncclComm* comm, const Task& t, const char* fn, bool* onDevice);
// The same for point-to-point tasks (one call's sends and receives: ncclSend, ncclRecv, ncclGather,
// ncclScatter, a direct AlltoAll): all their buffers device memory or all host memory; on device
// each task gets onDevice and `stream`.
ncclResult_t gpuClassifyP2p(ncclComm* comm, std::vector<Task>& tasks, cudaStream_t stream, const char* fn);

}  // namespace baton

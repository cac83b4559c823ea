// A GPU communicator's init and teardown: ring FIFOs and their exchange (where they lie:
// gpu_fifo.cc), the channels' device structs, the pinned abort flag and failure record. (The
// send/recv FIFOs: gpu_sendrecv.cc.)
#include "gpu/gpu_comm.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "comm.h"
#include "cuda_backend.h"
#include "misc/debug.h"
#include "misc/param.h"
#include "proxy.h"

namespace baton {
namespace {

constexpr uint64_t kTagGpuRing = 5u << 16;  // + channel (connect.cc's tags end at 4 << 16)

}  // namespace

ncclResult_t gpuCallFailed(const CudaBackend* b, const char* what, int rank) {
  return batonError(ncclUnhandledCudaError, "rank %d: %s: %s", rank, what, b->lastError());
}

// Channels: BATON_GPU_CHANNELS, default 64 (MAXCHANNELS); channel c follows ring c % nChannels.
// A ring's blocks wait for each other, so every block of the ranks this process drives on one
// device must be resident at once: at most one block per SM (512 threads, up to 128 registers
// each) shared among them. Processes take turns on a device and need no such bound. Rings through
// host memory (SHM or NET) cross PCIe, which two channels fill (NCCL's searches give PCIe rings
// about as few; a NET ring is bound by its NIC), and each channel's FIFO (about 9 MB) would
// otherwise be pinned 64 times over, in /dev/shm between processes. Every rank takes the smallest
// count any rank can afford.
ncclResult_t GpuComm::agreeOnChannels(ncclComm* comm, bool ringsInHost) {
  const CudaBackend* b = b_;
  const PeerInfo& me = comm->peers[comm->rank];
  int sms = 0;
  GPU_CALL(b->multiProcessors(dev_, &sms), "the device's multiprocessor count");
  int sharing = 0;
  for (const PeerInfo& p : comm->peers) sharing += p.pidHash == me.pidHash && p.cudaDev == comm->cudaDev;
  const int64_t asked = envInt("BATON_GPU_CHANNELS", ringsInHost ? 2 : kMaxChannels);
  const int fit = std::max(1, sms / std::max(sharing, 1));
  int32_t want = (int32_t)std::clamp<int64_t>(std::min<int64_t>(asked, fit), 1, kMaxChannels);
  if (asked > fit)
    BATON_INFO(kSubInit, "rank %d: %lld GPU channels asked, %d fit (%d SMs shared by %d ranks of this process)",
               comm->rank, (long long)asked, fit, sms, sharing);
  std::vector<int32_t> all(comm->nRanks);
  all[comm->rank] = want;
  BATON_CHECK(comm->bootstrap->allGather(all.data(), sizeof(int32_t)));
  nChannels_ = *std::min_element(all.begin(), all.end());
  return ncclSuccess;
}

// Each channel's ring: its FIFO offered to the previous rank and the next rank's taken (where they
// lie: gpu_fifo.cc), and every channel's ring order in device memory. *ipc: a FIFO was reached
// through a CUDA IPC handle.
ncclResult_t GpuComm::connectRings(ncclComm* comm, const FifoLayout& layout, std::vector<GpuChannelDev>* chans,
                                   bool* ipc) {
  const CudaBackend* b = b_;
  const int n = comm->nRanks, nch = nChannels_;
  std::vector<int> userRanks((size_t)nch * n);
  for (int c = 0; c < nch; ++c) {
    const Channel& ring = *comm->channels[c % comm->nChannels];
    const int prev = ring.ringUserRanks[(ring.ringIndex + n - 1) % n];
    const int next = ring.ringUserRanks[(ring.ringIndex + 1) % n];
    std::copy(ring.ringUserRanks.begin(), ring.ringUserRanks.end(), userRanks.begin() + (size_t)c * n);
    (*chans)[c].ringIndex = ring.ringIndex;
    // One rank's FIFO is its own (nothing to send or take).
    BATON_CHECK(offerFifo(comm, prev, kTagGpuRing + c, layout, c, &fifos_, &(*chans)[c].recv));
    if (n > 1) BATON_CHECK(takeFifo(comm, next, kTagGpuRing + c, layout, c, &(*chans)[c].send, ipc));
  }
  GPU_CALL(b->deviceAlloc(dev_, &userRanksDev_, userRanks.size() * sizeof(int)), "ring orders");
  GPU_CALL(b->copyToDevice(dev_, userRanksDev_, userRanks.data(), userRanks.size() * sizeof(int)), "ring orders");
  for (int c = 0; c < nch; ++c) (*chans)[c].userRanks = static_cast<const int*>(userRanksDev_) + (size_t)c * n;
  return ncclSuccess;
}

// The pinned failure record and abort flag the kernels write and read, and the events that order
// the communicator's launches.
ncclResult_t GpuComm::makeStatusAndEvents(ncclComm* comm) {
  const CudaBackend* b = b_;
  void* host = nullptr;
  void* view = nullptr;
  GPU_CALL(b->hostAlloc(&host, &view, sizeof(GpuStatus)), "failure record");
  status_ = static_cast<GpuStatus*>(host), statusDev_ = static_cast<GpuStatus*>(view);
  GPU_CALL(b->hostAlloc(&host, &view, sizeof(int)), "abort flag");
  abort_ = static_cast<int*>(host), abortDev_ = static_cast<int*>(view);
  GPU_CALL(b->eventCreate(dev_, &lastWork_), "event");
  GPU_CALL(b->eventCreate(dev_, &join_), "event");
  for (CaptureTail& c : captures_) GPU_CALL(b->eventCreate(dev_, &c.event), "event");
  // Recorded once, so a first launch inside a CUDA graph waits for a recorded event.
  GPU_CALL(b->eventRecord(dev_, lastWork_, nullptr, 0), "event");
  return ncclSuccess;
}

// A GPU communicator in named steps: every rank has a device; where peers' FIFOs can lie; how
// many channels; the rings' FIFOs; the channels' device structs (with trees when wanted); the
// failure record, abort flag and events; the send/recv connectors.
ncclResult_t GpuComm::create(ncclComm* comm, std::shared_ptr<GpuComm>* out, std::string* why) {
  out->reset();
  for (const PeerInfo& p : comm->peers) {
    if (!p.gpu) {
      *why = "rank " + std::to_string(p.rank) + " has no CUDA device";
      return ncclSuccess;
    }
  }
  const CudaBackend* b = cudaBackend();
  if (!b)
    return batonError(ncclInternalError, "rank %d: every rank has a CUDA device but the backend is gone", comm->rank);
  auto g = std::make_shared<GpuComm>();
  g->b_ = b;
  g->dev_ = comm->gpuDev;
  g->rank_ = comm->rank;
  bool ringsInHost = false;
  if (comm->nRanks > 1) BATON_CHECK(g->findReach(comm, &ringsInHost));
  BATON_CHECK(g->agreeOnChannels(comm, ringsInHost));
  const int n = comm->nRanks, nch = g->nChannels_;
  const FifoLayout layout = collFifoLayout(comm);
  const size_t fifoBytes = sizeof(ConnFifo) + layout.totalSlotBytes();
  std::vector<GpuChannelDev> chans(nch);
  bool ipc = false;
  BATON_CHECK(g->connectRings(comm, layout, &chans, &ipc));
  const bool ringsNet = g->netFifos_ > 0;
  GPU_CALL(b->deviceAlloc(g->dev_, &g->channelsDev_, nch * sizeof(GpuChannelDev)), "channels");
  if (gpuTreeWanted(comm)) BATON_CHECK(g->connectTrees(comm, chans, layout));
  GPU_CALL(b->copyToDevice(g->dev_, g->channelsDev_, chans.data(), nch * sizeof(GpuChannelDev)), "channels");
  BATON_CHECK(g->makeStatusAndEvents(comm));
  BATON_CHECK(g->connectPeers(comm));
  if (g->netFifos_) (g->proxy_ = comm->proxy.get())->holdAwake(1);  // see Proxy::holdAwake
  if (g->ipcInside_)  // their handles open at the allocation's start in the peer: the offset goes along
    BATON_INFO(kSubInit, "rank %d: %d FIFOs exported through CUDA IPC lie inside a larger allocation", comm->rank,
               g->ipcInside_);
  BATON_INFO(kSubInit, "GPU communicator: rank %d on CUDA device %d, %d channels, ring FIFOs of %zu bytes %s",
             comm->rank, g->dev_, nch, fifoBytes,
             n == 1        ? "in device memory (one rank)"
             : ringsNet    ? "in pinned host memory at both ends of NET connections (another host, or "
                             "NCCL_SHM_DISABLE where P2P does not reach), else as the devices reach each other"
             : ringsInHost ? "in pinned or shared host memory where the sending device cannot store into the "
                             "receiving one's (or NCCL_P2P_DISABLE), else in device memory"
             : ipc         ? "in device memory, reached through CUDA IPC handles"
                           : "in device memory, reached by pointer (threads of one process)");
  *out = std::move(g);
  return ncclSuccess;
}

void GpuComm::abort() {
  if (abort_) storeFlag(abort_, 1);
}

ncclResult_t GpuComm::drain() {
  if (!launched_) return ncclSuccess;
  if (b_->eventSynchronize(lastWork_) != 0)
    return batonError(ncclUnhandledCudaError, "rank %d: waiting for the communicator's kernels: %s", rank_,
                      b_->lastError());
  return ncclSuccess;
}

ncclResult_t GpuComm::takeFailure(ncclComm* comm) {
  if (!status_ || failureTaken_ || !flagIsSet(&status_->failed)) return ncclSuccess;
  failureTaken_ = true;
  const WaitFailure& f = status_->failure;
  if (f.result == kWaitBadStep)  // f.what is a device address here: not read
    return batonError(ncclInternalError,
                      "rank %d: a kernel on CUDA device %d channel %d found the connector with peer %d holding %llu "
                      "payload bytes per step, less than one element (%llu bytes), and stopped rather than loop: its "
                      "FIFO table was not filled (a bug in baton)",
                      comm->rank, dev_, f.channel, f.peer, (unsigned long long)f.observed,
                      (unsigned long long)f.expected);
  // kWaitAborted without the abort flag: the kernel stopped itself on a step whose size was not
  // the one it expected (the device cannot pass its description string up).
  if (f.result == kWaitAborted && !flagIsSet(abort_))
    return batonError(ncclInvalidUsage,
                      "rank %d: a kernel on CUDA device %d channel %d got a step of %llu bytes from peer %d where it "
                      "expected %llu (do the send and receive counts, or the ranks' arguments, differ?)",
                      comm->rank, dev_, f.channel, (unsigned long long)f.observed, f.peer,
                      (unsigned long long)f.expected);
  const bool aborted = f.result == kWaitAborted;
  return batonError(aborted ? ncclInvalidUsage : ncclSystemError,
                    "rank %d: a kernel on CUDA device %d channel %d %s waiting for peer %d: expected %llu, observed "
                    "%llu",
                    comm->rank, dev_, f.channel,
                    aborted ? "stopped (communicator aborted)" : "timed out (BATON_WAIT_TIMEOUT)", f.peer,
                    (unsigned long long)f.expected, (unsigned long long)f.observed);
}

GpuComm::~GpuComm() {
  if (!b_) return;
  if (launched_) b_->eventSynchronize(lastWork_);
  if (proxy_) proxy_->holdAwake(-1);
  for (void* p : opened_) b_->ipcClose(dev_, p);
  for (const FifoMem& f : mapped_) freeFifo(f);
  for (const FifoMem& f : fifos_) freeFifo(f);
  for (const FifoMem& f : peerFifos_) freeFifo(f);
  for (const FifoMem& f : treeFifos_) freeFifo(f);
  if (peerConnsDev_) b_->deviceFree(dev_, peerConnsDev_);
  if (channelsDev_) b_->deviceFree(dev_, channelsDev_);
  if (userRanksDev_) b_->deviceFree(dev_, userRanksDev_);
  b_->releaseGraphMemory();
  if (status_) b_->hostFree(status_);
  if (abort_) b_->hostFree(abort_);
  if (lastWork_) b_->eventDestroy(lastWork_);
  if (join_) b_->eventDestroy(join_);
  for (CaptureTail& c : captures_)
    if (c.event) b_->eventDestroy(c.event);
}

}  // namespace baton

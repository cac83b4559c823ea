// Sends and receives on device buffers: the GPU communicator's FIFO to and from every peer, which
// calls go to the device, and a group's transfers launched as one kernel (sendrecv_kernel.cu).
//
// As on the CPU, one group's sends and receives progress together (round-robin), so pairs that
// wait for each other cannot deadlock, and a connector's transfers keep their order. The kernel
// runs after the communicator's collectives of the same group (every rank orders them the same
// way) and, like every kernel of the communicator, after its previous one.
#include <algorithm>
#include <cstring>

#include "comm.h"
#include "cuda_backend.h"
#include "gpu/gpu_comm.h"
#include "gpu/gpu_p2p_table.h"
#include "misc/debug.h"
#include "sendrecv_executor.h"
#include "task.h"

namespace baton {
namespace {

constexpr uint64_t kTagGpuPeer = 7u << 16;  // gpu_comm.cc's ring FIFOs use 5 << 16 (+ channel)

const void* taskBuffer(const Task& t) { return t.kind == Task::kSend ? t.sendbuff : t.recvbuff; }

}  // namespace

ncclResult_t GpuComm::connectPeers(ncclComm* comm) {
  const CudaBackend* b = b_;
  const int n = comm->nRanks, me = comm->rank;
  peerWhy_.assign(2 * (size_t)n, std::string());
  if (n == 1) return ncclSuccess;
  FifoLayout layout;
  layout.stepBytes[kProtoSimple] = comm->tun.sendrecvStepBytes;  // NCCL_P2P_CHUNKSIZE
  const size_t fifoBytes = sizeof(ConnFifo) + layout.totalSlotBytes();
  std::vector<ConnDev> conns(2 * (size_t)n);
  peerFifos_.assign(n, FifoMem{});
  const int hostBefore = hostFifos_, netBefore = netFifos_;
  // Receivers first: a bootstrap send does not wait for its receiver, so every rank can describe
  // all of its FIFOs before it collects its peers'. Each lies where its sender's device can store
  // (gpu_fifo.cc: host memory between devices without peer access). A FIFO that still cannot be
  // made or reached costs only the device send/recv between that pair,
  // which then fails with the reason; the communicator's collectives do not need it. A FIFO
  // described with ptr 0 tells the sender there is none.
  // A NET FIFO's NIC is chosen by the sender's rank (the "channel" both ends pass), so a rank's
  // connections spread over the NICs.
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    FifoInfo info{};
    if (makeFifo(comm, p, layout, p, &peerFifos_[p], &info) != ncclSuccess) {
      freeFifo(peerFifos_[p]);
      peerFifos_[p] = FifoMem{}, info = FifoInfo{}, peerWhy_[n + p] = std::string("its FIFO: ") + lastError();
    } else {
      conns[n + p] = makeConnDev(static_cast<ConnFifo*>(peerFifos_[p].view), layout, p, kSteps);
    }
    BATON_CHECK(comm->bootstrap->send(p, kTagGpuPeer, &info, sizeof info));
  }
  bool ipc = false;
  int reached = 0;
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    FifoInfo theirs{};
    BATON_CHECK(comm->bootstrap->recv(p, kTagGpuPeer, &theirs, sizeof theirs));
    void* fifo = nullptr;
    if (!theirs.ptr) {
      peerWhy_[p] = "rank " + std::to_string(p) + " could not make or share its FIFO";
    } else if (openFifo(comm, theirs, p, layout, me, &fifo, &ipc) != ncclSuccess) {
      peerWhy_[p] = lastError();
    } else {
      conns[p] = makeConnDev(static_cast<ConnFifo*>(fifo), layout, p, comm->tun.fifoDepth);
      ++reached;
    }
    if (!peerWhy_[p].empty())
      BATON_INFO(kSubInit, "GPU communicator: rank %d: no device send/recv to rank %d: %s", me, p, peerWhy_[p].c_str());
  }
  // Then every sender tells its receiver whether it reached the FIFO, so a pair that cannot talk
  // is refused on both sides (a receiver alone would launch a kernel that waits for nothing).
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    const int32_t ok = peerWhy_[p].empty();
    BATON_CHECK(comm->bootstrap->send(p, kTagGpuPeer + 1, &ok, sizeof ok));
  }
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    int32_t ok = 0;
    BATON_CHECK(comm->bootstrap->recv(p, kTagGpuPeer + 1, &ok, sizeof ok));
    if (!ok && peerWhy_[n + p].empty())
      peerWhy_[n + p] = "rank " + std::to_string(p) + " could not reach this rank's FIFO (its INFO log says why)";
  }
  GPU_CALL(b->deviceAlloc(dev_, &peerConnsDev_, conns.size() * sizeof(ConnDev)), "send/recv connectors");
  GPU_CALL(b->copyToDevice(dev_, peerConnsDev_, conns.data(), conns.size() * sizeof(ConnDev)), "send/recv connectors");
  BATON_INFO(kSubInit,
             "GPU communicator: rank %d: send/recv FIFOs of %zu bytes from each of %d peers (%d of them in host "
             "memory, %d NET connection ends); sends reach %d of them %s",
             me, fifoBytes, n - 1, hostFifos_ - hostBefore, netFifos_ - netBefore, reached,
             ipc ? "(some through CUDA IPC handles)" : "by pointer or through host memory");
  return ncclSuccess;
}

ncclResult_t GpuComm::launchSendRecv(ncclComm* comm, const std::vector<Task>& tasks) {
  const CudaBackend* b = b_;
  const int n = comm->nRanks, me = comm->rank;
  // Everything that can refuse the group is checked before anything is enqueued.
  std::vector<SelfCopy> self;
  BATON_CHECK(pairSelfCopies(me, tasks, &self));
  for (const SelfCopy& c : self) {
    const char* src = static_cast<const char*>(c.src);
    const char* dst = static_cast<const char*>(c.dst);
    if (c.bytes && src != dst && src < dst + c.bytes && dst < src + c.bytes)  // a device copy may not overlap
      return batonError(ncclInvalidArgument, "rank %d: send to self from %p and receive into %p overlap (%zu bytes)",
                        me, c.src, c.dst, c.bytes);
  }
  // Every connector's transfers go to one block, in issue order, over at most as many blocks as
  // the communicator has channels (they fit on the device together): gpu_p2p_table.h.
  std::vector<P2pPending> pending;
  auto* conns = static_cast<ConnDev*>(peerConnsDev_);
  for (const Task& t : tasks) {
    const size_t bytes = t.count * typeSize(t.type);
    if (t.peer == me || bytes == 0) continue;
    const bool send = t.kind == Task::kSend;
    const int conn = send ? t.peer : n + t.peer;  // as peerConnsDev_
    if (!peerWhy_[conn].empty())
      return batonError(ncclInvalidUsage, "rank %d: no device %s rank %d: %s", me, send ? "send to" : "receive from",
                        t.peer, peerWhy_[conn].c_str());
    SendRecvTransfer x;
    x.buf = static_cast<char*>(const_cast<void*>(taskBuffer(t)));
    x.bytes = bytes;
    x.conn = conns + conn;
    x.peer = t.peer;
    x.isSend = send;
    pending.push_back({x, conn});
  }

  cudaStream_t stream = tasks.front().stream;
  // Work the caller queued on the group's other streams comes first, as NCCL orders a group's streams.
  std::vector<cudaStream_t> others;
  for (const Task& t : tasks)
    if (t.stream != stream && std::find(others.begin(), others.end(), t.stream) == others.end())
      others.push_back(t.stream);
  BATON_CHECK(sameCapture(comm, stream, others));
  LaunchOrder order;
  BATON_CHECK(beforeLaunch(comm, stream, &order));
  for (cudaStream_t s : others) {
    GPU_CALL(b->eventRecord(dev_, join_, s, 0), "joining the group's streams");
    GPU_CALL(b->streamWaitEvent(dev_, stream, join_, 0), "joining the group's streams");
  }
  for (const SelfCopy& c : self)
    if (c.bytes && c.src != c.dst)
      GPU_CALL(b->copyAsync(dev_, c.dst, c.src, c.bytes, stream), "send to self (cudaMemcpyAsync)");
  GpuP2pLaunch l;
  std::vector<char> table;
  if (!pending.empty()) {
    buildP2pTable(pending, nChannels_, &table, &l);
    l.device = dev_;
    l.threads = kGpuMaxThreads;
    l.ctx.rank = me;
    l.ctx.abortFlag = abortDev_;
    l.ctx.timeoutNs = comm->tun.waitTimeoutNs;
    l.status = statusDev_;
    l.captured = order.captured;
  }
  size_t total = 0;
  for (const P2pPending& p : pending) total += p.x.bytes;
  BATON_INFO(kSubP2p,
             "Send/Recv: rank %d, %zu transfers (%zu bytes) to and from peers, %zu to itself, %d blocks, stream %p "
             "(CUDA device %d)",
             me, pending.size(), total, self.size(), l.nBlocks, (void*)stream, dev_);
  if (!pending.empty() && b->launchP2p(&l, stream) != 0)
    return batonError(ncclUnhandledCudaError, "rank %d: send/recv launch: %s", me, b->lastError());
  BATON_CHECK(afterLaunch(comm, stream, order));
  // The group's other streams complete with this kernel (an edge inside a capture too).
  if (!others.empty()) GPU_CALL(b->eventRecord(dev_, join_, stream, 0), "joining the group's streams");
  for (cudaStream_t s : others) GPU_CALL(b->streamWaitEvent(dev_, s, join_, 0), "joining the group's streams");
  return ncclSuccess;
}

ncclResult_t gpuClassifyP2p(ncclComm* comm, std::vector<Task>& tasks, cudaStream_t stream, const char* fn) {
  if (!cudaBackend()) return ncclSuccess;
  const Task* dev = nullptr;
  const Task* host = nullptr;
  for (const Task& t : tasks) {
    const void* p = taskBuffer(t);
    if (!p || t.count == 0) continue;
    (isDeviceMemory(p) ? dev : host) = &t;
  }
  if (!dev) return host ? refuseHostCapture(comm, stream, fn) : ncclSuccess;
  auto name = [](const Task& t) { return t.kind == Task::kSend ? "sendbuff" : "recvbuff"; };
  if (host)
    return batonError(ncclInvalidArgument,
                      "%s: %s %p is host memory but %s %p is device memory; both must be one or the other", fn,
                      name(*host), taskBuffer(*host), name(*dev), taskBuffer(*dev));
  if (!comm->gpu)
    return batonError(ncclInvalidUsage,
                      "%s: %s %p is device memory, but comm %p (rank %d) is not a GPU communicator: %s", fn, name(*dev),
                      taskBuffer(*dev), (void*)comm, comm->rank, comm->gpuWhy.c_str());
  for (Task& t : tasks) t.onDevice = true, t.stream = stream;
  return ncclSuccess;
}

}  // namespace baton

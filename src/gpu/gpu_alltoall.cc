// ncclAlltoAll on device buffers into a window of device memory: each rank stores its block for
// peer p straight into p's window (the store kernel, coll_launch.cu), between the symmetric
// kernels' arrive and depart barriers, instead of sending it through the send/recv FIFOs, as the
// CPU's window algorithm does (algorithms/alltoall_window.h) and NCCL's copy-engine AlltoAll on
// symmetric windows does (2.28, NCCL's src/ce_coll.cc).
//
// Only ncclAlltoAll (every block the same size, so every rank knows where its block lands in every
// peer's output: NCCL_WIN_COLL_SYMMETRIC puts every rank's recvbuff at the same offset of its
// window, which, unlike the CPU's window algorithm, the kernel takes on trust). Inside a CUDA graph
// capture too: the kernel counts its barriers' epochs in device memory (src/cuda/block.cuh).
//
// Every other AlltoAll(v) on device buffers (direct, pairwise and Bruck: BATON_ALLTOALL_ALGO; in
// place too) runs as the steps of alltoall_steps.h on the caller's stream: copies as
// cudaMemcpyAsync, each exchange as one launch of the send/recv kernel (gpu_sendrecv.cc), which
// keeps a connector's messages in order, so Bruck's slots travel one after another without being
// copied into a packed buffer. Every rank launches a group's AlltoAlls before its sends and
// receives (enqueue.cc), whatever the algorithm, so a connector carries them in the same order at
// both ends. Scratch (Bruck's slots in transit, an in-place call's input) comes from a
// stream-ordered pool and goes back behind the last step. The communicator's kernels run in call
// order, so the steps of one call never interleave with another's.
#include <algorithm>

#include "alltoall.h"
#include "alltoall/alltoall_executor.h"
#include "alltoall/alltoall_steps.h"
#include "comm.h"
#include "comm_error.h"
#include "cuda_backend.h"
#include "gpu/gpu_comm.h"
#include "misc/debug.h"
#include "register/symmetric_plan.h"
#include "register/window.h"
#include "symmetric.h"
#include "task.h"
#include "tuner/tuner.h"

namespace baton {

bool GpuComm::alltoallByWindow(ncclComm* comm, const void* recvbuff, size_t bytes) {
  const int forced = comm->tun.alltoallAlgo;
  return symmetricEligible(comm) && allReach_ && (forced == kAlltoAllAuto || forced == kAlltoAllWindow) &&
         comm->windows->findSymmetricDevice(recvbuff, bytes);
}

ncclResult_t GpuComm::launchAlltoAllSteps(ncclComm* comm, const Task& t) {
  const CudaBackend* b = b_;
  const int n = comm->nRanks, me = comm->rank;
  AlltoAllStepsIn in;
  in.algo = t.alltoallAlgo, in.rank = me, in.nRanks = n, in.layout = t.layout->data(), in.uniform = t.uniform;
  in.sendbuff = static_cast<const char*>(t.sendbuff), in.recvbuff = static_cast<char*>(t.recvbuff);
  const size_t scratchBytes = alltoallStepsScratch(in);
  void* scratch = nullptr;
  if (scratchBytes) GPU_CALL(b->allocAsync(dev_, &scratch, scratchBytes, t.stream), "AlltoAll scratch");
  std::vector<AlltoAllStep> steps;
  ncclResult_t res = alltoallSteps(in, static_cast<char*>(scratch), &steps);
  // Every peer reached before anything is enqueued (a rank alone would wait for nothing).
  int copies = 0, exchanges = 0;
  for (const AlltoAllStep& s : steps) {
    (s.kind == AlltoAllStep::kCopy ? copies : exchanges) += 1;
    for (const AlltoAllStep::Transfer& x : s.xfers) {
      const std::string& why = peerWhy_[x.isSend ? x.peer : n + x.peer];
      if (res == ncclSuccess && !why.empty())
        res = batonError(ncclInvalidUsage, "rank %d: AlltoAll (%s): no device %s rank %d: %s", me,
                         alltoallAlgoName(t.alltoallAlgo), x.isSend ? "send to" : "receive from", x.peer, why.c_str());
    }
  }
  if (res != ncclSuccess) {
    if (scratch) b->freeAsync(dev_, scratch, t.stream);
    return res;
  }
  const uint64_t opCount = comm->opCount++;  // counted whether or not INFO is on
  BATON_INFO(kSubColl,
             "AlltoAll: opCount %llx sendbuff %p recvbuff %p comm %p [nranks=%d] stream %p algorithm %s%s (device "
             "buffers: %d copies, %d send/recv kernels, %zu bytes of scratch; CUDA device %d)",
             (unsigned long long)opCount, t.sendbuff, t.recvbuff, (void*)comm, n, t.stream,
             alltoallAlgoName(t.alltoallAlgo), t.sendbuff == t.recvbuff ? " in place" : "", copies, exchanges,
             scratchBytes, dev_);
  // Once a step is enqueued, a failure leaves this rank's earlier kernels and its peers' waiting
  // for the rest: the communicator fails (its kernels' waits give up, ncclCommGetAsyncError says
  // why), and the scratch still goes back behind what was enqueued.
  auto failMidway = [&](ncclResult_t r, const char* what, const std::string& detail) {
    if (scratch) b->freeAsync(dev_, scratch, t.stream);
    const ncclResult_t err = batonError(r, "rank %d: AlltoAll (%s) stopped after some steps were enqueued: %s: %s", me,
                                        alltoallAlgoName(t.alltoallAlgo), what, detail.c_str());
    commSetError(comm, err, lastError());
    return err;
  };
  LaunchOrder order;
  if ((res = beforeLaunch(comm, t.stream, &order)) != ncclSuccess) {
    if (scratch) b->freeAsync(dev_, scratch, t.stream);
    return res;
  }
  for (const AlltoAllStep& s : steps) {
    if (s.kind == AlltoAllStep::kCopy) {
      if (b->copyAsync(dev_, s.dst, s.src, s.bytes, t.stream) != 0)
        return failMidway(ncclUnhandledCudaError, "a step's cudaMemcpyAsync", b->lastError());
      continue;
    }
    std::vector<Task> round;
    for (const AlltoAllStep::Transfer& x : s.xfers) {
      round.push_back(x.isSend ? sendRecvTask(Task::kSend, x.buf, nullptr, x.bytes, ncclInt8, x.peer)
                               : sendRecvTask(Task::kRecv, nullptr, x.buf, x.bytes, ncclInt8, x.peer));
      round.back().onDevice = true, round.back().stream = t.stream;
    }
    if ((res = launchSendRecv(comm, round)) != ncclSuccess)
      return failMidway(res, "a round's send/recv kernel", lastError());
  }
  void* used = scratch;
  scratch = nullptr;  // freed here, or never
  if (used && b->freeAsync(dev_, used, t.stream) != 0)
    return failMidway(ncclUnhandledCudaError, "freeing the scratch (cudaFreeAsync)", b->lastError());
  return afterLaunch(comm, t.stream, order);
}

ncclResult_t GpuComm::launchAlltoAll(ncclComm* comm, const Task& t) {
  if (t.alltoallAlgo != kAlltoAllWindow) return launchAlltoAllSteps(comm, t);
  const int n = comm->nRanks;
  const size_t block = (*t.layout)[0];  // ncclAlltoAll: every block alike
  const ncclWindow_vidmem* wr = comm->windows->findSymmetricDevice(t.recvbuff, block * n);
  if (!wr) {
    // The window went away before the group ended: the direct algorithm's steps.
    BATON_INFO(kSubColl,
               "ncclAlltoAll: recvbuff %p comm %p: algorithm direct (device buffers): recvbuff is no "
               "longer in a window",
               t.recvbuff, (void*)comm);
    Task direct = t;
    direct.alltoallAlgo = kAlltoAllDirect;
    return launchAlltoAllSteps(comm, direct);
  }
  // Bytes, like AllGather's: count is one block.
  const CollOp op{kFuncAllGather, t.sendbuff, t.recvbuff, block, 1, 0};
  const int nch = std::min(channelsForBytes(nChannels_, comm->tun.minChannelBytes, block * n), kSymMaxChannels);
  GpuCollLaunch l;
  l.base = collArgsFor(op, kAlgoSymAlltoAll, kProtoSimple, comm->rank, n, nch, comm->tun.chunkSteps);
  fillLaunch(comm, &l);
  l.symRecvBases = static_cast<char* const*>(wr->peerBaseDev);
  l.symRecvOffset = static_cast<const char*>(t.recvbuff) - wr->base;
  l.symPads = static_cast<SymPad* const*>(comm->windows->devPadsDev);
  const uint64_t opCount = comm->opCount++;  // counted whether or not INFO is on
  BATON_INFO(kSubColl,
             "ncclAlltoAll: opCount %llx sendbuff %p recvbuff %p block %zu bytes comm %p [nranks=%d] stream %p "
             "algorithm SymAlltoAll (stores into the peers' windows) channels %d (CUDA device %d)",
             (unsigned long long)opCount, t.sendbuff, t.recvbuff, block, (void*)comm, n, t.stream, nch, dev_);
  LaunchOrder order;
  BATON_CHECK(beforeLaunch(comm, t.stream, &order));
  if (b_->launchColl(&l, t.stream) != 0)
    return batonError(ncclUnhandledCudaError, "rank %d: ncclAlltoAll launch: %s", comm->rank, b_->lastError());
  return afterLaunch(comm, t.stream, order);
}

}  // namespace baton

// ncclAlltoAll on device buffers into a window of device memory: each rank stores its block for
// peer p straight into p's window (the store kernel, kernel_launch.cu), between the symmetric
// kernels' arrive and depart barriers, instead of sending it through the send/recv FIFOs, as the
// CPU's window algorithm does (algorithms/alltoall_window.h) and NCCL's copy-engine AlltoAll on
// symmetric windows does (2.28, NCCL's src/ce_coll.cc).
//
// Only ncclAlltoAll (every block the same size, so every rank knows where its block lands in every
// peer's output: NCCL_WIN_COLL_SYMMETRIC puts every rank's recvbuff at the same offset of its
// window, which, unlike the CPU's window algorithm, the kernel takes on trust); batonAlltoAllv on
// device buffers keeps the direct algorithm. Inside a CUDA graph capture too: the kernel counts
// its barriers' epochs in device memory (gpu_sym_kernels.cuh).
#include <algorithm>

#include "alltoall.h"
#include "alltoall_executor.h"
#include "comm.h"
#include "cuda/gpu_backend.h"
#include "cuda/gpu_comm.h"
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
         comm->windows.findSymmetricDevice(recvbuff, bytes);
}

ncclResult_t GpuComm::launchAlltoAll(ncclComm* comm, const Task& t) {
  const int n = comm->nRanks;
  const size_t block = (*t.layout)[0];  // ncclAlltoAll: every block alike
  const ncclWindow_vidmem* wr = comm->windows.findSymmetricDevice(t.recvbuff, block * n);
  if (!wr) {
    // The window went away before the group ended: the direct algorithm's sends and receives, as
    // their own kernel.
    BATON_INFO(kSubColl,
               "ncclAlltoAll: recvbuff %p comm %p: algorithm direct (device buffers): recvbuff is no "
               "longer in a window",
               t.recvbuff, (void*)comm);
    std::vector<Task> direct = alltoallTasks(comm, kAlltoAllDirect, t.sendbuff, t.recvbuff, t.layout, true);
    for (Task& d : direct) d.onDevice = true, d.stream = t.stream;
    return launchSendRecv(comm, direct);
  }
  // Bytes, like AllGather's: count is one block.
  const CollOp op{kFuncAllGather, t.sendbuff, t.recvbuff, block, 1, 0};
  const int nch = std::min(channelsForBytes(nChannels_, comm->tun.minChannelBytes, block * n), kSymMaxChannels);
  GpuCollLaunch l;
  l.base = collArgsFor(op, kAlgoSymAlltoAll, kProtoSimple, comm->rank, n, nch, comm->tun.chunkSteps);
  fillLaunch(comm, &l);
  l.symRecvBases = static_cast<char* const*>(wr->peerBaseDev);
  l.symRecvOffset = static_cast<const char*>(t.recvbuff) - wr->base;
  l.symPads = static_cast<SymPad* const*>(comm->windows.devPadsDev);
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

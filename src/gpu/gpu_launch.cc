// Collectives on device buffers: which calls go to the GPU, the protocol and channels they take,
// and their launch on the caller's stream behind the communicator's previous kernel.
//
// Stream semantics are NCCL's: the call enqueues and returns; the stream says when it is done. A
// communicator's kernels run in the order of its calls, whichever streams they were given (each
// launch waits for an event recorded after the previous one), because they share the rings'
// step counters; captured into a CUDA graph too (gpu_graph.cc). The algorithm is the ring (its
// three protocols), or for AllReduce the tree when NCCL_ALGO excludes the ring (gpu_tree.cc), or
// between windows of device memory NCCL's symmetric kernels (symmetric_plan.h). Ring or tree,
// and the protocol, are the tuner's choice per size from its 'gpu' table (tuner.h), among what
// NCCL_ALGO / NCCL_PROTO leave and the communicator connected (trees only when forced,
// gpu_tree.cc): built in, that table is an H200's, where Simple was as fast as LL at 8 B and
// faster from 2 KiB up (docs/cuda-backend.md), so Simple wins everywhere until
// `gpu_collectives calibrate` measures another machine.
#include <algorithm>
#include <cstring>

#include "comm.h"
#include "cuda_backend.h"
#include "gpu/gpu_comm.h"
#include "misc/debug.h"
#include "register/symmetric_plan.h"
#include "register/window.h"
#include "symmetric.h"
#include "task.h"
#include "tuner/tuner.h"

namespace baton {
ncclResult_t gpuClassify(ncclComm* comm, const Task& t, const char* fn, bool* onDevice) {
  *onDevice = false;
  if (!cudaBackend()) return ncclSuccess;
  const bool rootOnlyRecv = t.func == kFuncReduce && comm->rank != t.root;
  const bool rootOnlySend = t.func == kFuncBroadcast && comm->rank != t.root;
  const void* bufs[2] = {rootOnlySend ? nullptr : t.sendbuff, rootOnlyRecv ? nullptr : t.recvbuff};
  const char* names[2] = {"sendbuff", "recvbuff"};
  bool dev[2] = {false, false};
  for (int i = 0; i < 2; ++i) dev[i] = bufs[i] && isDeviceMemory(bufs[i]);
  if (!dev[0] && !dev[1]) return t.count && (bufs[0] || bufs[1]) ? refuseHostCapture(comm, t.stream, fn) : ncclSuccess;
  for (int i = 0; i < 2; ++i)
    if (bufs[i] && !dev[i])
      return batonError(ncclInvalidArgument,
                        "%s: %s %p is host memory but %s %p is device memory; both must be one "
                        "or the other",
                        fn, names[i], bufs[i], names[1 - i], bufs[1 - i]);
  if (!comm->gpu)
    return batonError(ncclInvalidUsage,
                      "%s: %s %p is device memory, but comm %p (rank %d) is not a GPU communicator: "
                      "%s",
                      fn, dev[0] ? names[0] : names[1], dev[0] ? bufs[0] : bufs[1], (void*)comm, comm->rank,
                      comm->gpuWhy.c_str());
  *onDevice = true;
  return ncclSuccess;
}

// NCCL's symmetric kernels (symmetric_plan.h says which): both buffers in windows of device memory
// that every rank's device reaches. Inside a CUDA graph capture too: the kernels count their
// barriers' epochs in device memory, so each replay takes the next.
bool GpuComm::planSymmetric(ncclComm* comm, const Task& t, GpuCollLaunch* l) {
  SymmetricPlan sp;
  // allReach_: the whole table, which every rank holds alike.
  if (!allReach_ || !planSymmetricWindows(comm, t, collShapeOf(t, comm->nRanks), true, &sp)) return false;
  const int nch = std::min(l->base.nChannels, kSymMaxChannels);
  const CollOp op{t.func, t.sendbuff, t.recvbuff, t.count, typeSize(t.type), t.root};
  l->base = collArgsFor(op, sp.algo, kProtoSimple, comm->rank, comm->nRanks, nch, comm->tun.chunkSteps);
  l->symSendBases = static_cast<char* const*>(sp.send->peerBaseDev);
  l->symRecvBases = static_cast<char* const*>(sp.recv->peerBaseDev);
  l->symSendOffset = sp.sendOffset;
  l->symRecvOffset = sp.recvOffset;
  l->symPads = static_cast<SymPad* const*>(comm->windows->devPadsDev);
  return true;
}

void GpuComm::fillLaunch(const ncclComm* comm, GpuCollLaunch* l) const {
  l->channels = static_cast<GpuChannelDev*>(channelsDev_);
  l->device = dev_;
  l->threads = kGpuMaxThreads;
  l->ctx.rank = comm->rank;
  l->ctx.abortFlag = abortDev_;
  l->ctx.timeoutNs = comm->tun.waitTimeoutNs;
  l->status = statusDev_;
}

ncclResult_t GpuComm::launch(ncclComm* comm, const Task& t) {
  const size_t typeBytes = typeSize(t.type);
  const size_t bytes = collBytes(t.func, t.count, typeBytes, comm->nRanks);
  if (t.count == 0) return ncclSuccess;
  AlgoProtoChoice choice;  // one rank: a copy (below), whatever the tables say
  // As the CPU tuner: NCCL_ALGO / NCCL_PROTO that leave a collective nothing make it fail.
  if (comm->nRanks > 1)
    BATON_CHECK(chooseGpuAlgoProto(comm->tun.model, comm->tun.mask, treeChannels_ > 0, t.func, comm->nRanks,
                                   comm->nNodes, bytes, &choice));
  int pluginChannels = 0;  // NCCL_TUNER_PLUGIN's (lesson 16), on the 'gpu' table
  if (comm->nRanks > 1 && comm->tunerPlugin)
    comm->tunerPlugin->revise(comm->tun.model, kPathGpu, comm->tun.mask, t.func, comm->nRanks, comm->nNodes, bytes,
                              false, treeChannels_ > 0, 1 << 30, &choice, &pluginChannels);
  const bool tree = choice.algo == kAlgoTree;
  const Proto proto = choice.proto;
  const int maxCh = tree ? treeChannels_ : nChannels_;
  const int nch =
      pluginChannels > 0 ? std::min(pluginChannels, maxCh) : channelsForBytes(maxCh, comm->tun.minChannelBytes, bytes);
  const CollOp op{t.func, t.sendbuff, t.recvbuff, t.count, typeBytes, t.root};
  GpuCollLaunch l;
  l.base = collArgsFor(op, tree ? kAlgoTree : kAlgoRing, proto, comm->rank, comm->nRanks, nch, comm->tun.chunkSteps);
  fillLaunch(comm, &l);
  l.depth = planFifoDepth(t.func, comm->tun.fifoDepth, comm->tun.chunkSteps);
  l.dtype = t.type;
  l.op = t.op;
  LaunchOrder order;
  BATON_CHECK(beforeLaunch(comm, t.stream, &order));
  const bool sym = planSymmetric(comm, t, &l);
  const uint64_t opCount = comm->opCount++;  // counted whether or not INFO is on
  BATON_INFO(kSubColl,
             "%s: opCount %llx sendbuff %p recvbuff %p count %zu datatype %s op %s root %d comm %p [nranks=%d] "
             "stream %p algorithm %s protocol %s channels %d (CUDA device %d)",
             funcName(t.func), (unsigned long long)opCount, t.sendbuff, t.recvbuff, t.count, typeName(t.type),
             opName(t.op.kind), t.root, (void*)comm, comm->nRanks, t.stream,
             comm->nRanks == 1 && t.op.kind != kOpPreMulSum ? "Copy" : algoName(l.base.algo),
             sym ? "-" : protoName(proto), l.base.nChannels, dev_);
  // One rank: every collective but PreMulSum leaves its input as it is (Avg divides by 1), so it
  // is a copy, or nothing in place; the copy engine moves it at the device's copy bandwidth, as
  // NCCL does for one rank. PreMulSum runs the kernel.
  if (comm->nRanks == 1 && t.op.kind != kOpPreMulSum) {
    if (t.sendbuff != t.recvbuff && b_->copyAsync(dev_, t.recvbuff, t.sendbuff, t.count * typeBytes, t.stream) != 0)
      return batonError(ncclUnhandledCudaError, "rank %d: %s (one rank): %s", comm->rank, funcName(t.func),
                        b_->lastError());
  } else if (b_->launchColl(&l, t.stream) != 0) {
    return batonError(ncclUnhandledCudaError, "rank %d: %s launch: %s", comm->rank, funcName(t.func), b_->lastError());
  }
  return afterLaunch(comm, t.stream, order);
}

}  // namespace baton

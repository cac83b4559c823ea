// Tree AllReduce on a GPU communicator: the trees' FIFOs, made at init when NCCL_ALGO leaves
// AllReduce to Tree (NCCL_ALGO=Tree, or allreduce:Tree), as the CPU backend connects its trees.
// NCCL connects trees always and its tuner weighs them against the ring; baton's GPU tuner
// (tuner.h's 'gpu' table) weighs only what is connected, so it takes Tree only when forced: GPU
// trees across hosts have not run, and their FIFOs (about 9 MB per edge, direction and channel)
// would cost every multi-host job.
//
// Each tree channel follows the communicator's tree of the same index (modulo its trees): chains
// within a host (lesson 07). Every edge has a FIFO each way, at its receiver and placed where the
// sender's device can store (gpu_fifo.cc): up (child -> parent, the reduce) lies at the parent,
// down (parent -> child, the broadcast) at the child. The kernels run algorithms/tree_allreduce.h,
// the body the CPU workers run. Only the first kGpuTreeChannels channels get trees: each edge's
// FIFOs take about 9 MB a direction, on top of the ring's.
#include <algorithm>
#include <cstddef>

#include "comm.h"
#include "gpu/gpu_comm.h"
#include "misc/debug.h"

namespace baton {
namespace {

constexpr uint64_t kTagGpuTreeUp = 9u << 16;     // + channel: the parent's FIFO for a child's sends
constexpr uint64_t kTagGpuTreeDown = 10u << 16;  // + channel: the child's FIFO for its parent's sends

}  // namespace

bool gpuTreeWanted(const ncclComm* comm) {
  const uint8_t* allowed = comm->tun.mask.algo[kFuncAllReduce];
  return comm->nRanks > 1 && allowed[kAlgoTree] && !allowed[kAlgoRing];
}

ncclResult_t GpuComm::connectTrees(ncclComm* comm, std::vector<GpuChannelDev>& chans, const FifoLayout& layout) {
  treeChannels_ = std::min(nChannels_, kGpuTreeChannels);
  // The device address of channel c's k-th tree connector (channelsDev_ is allocated, not yet filled).
  auto at = [&](int c, int k) {
    return reinterpret_cast<ConnDev*>(static_cast<char*>(channelsDev_) + (size_t)c * sizeof(GpuChannelDev) +
                                      offsetof(GpuChannelDev, treeConns) + (size_t)k * sizeof(ConnDev));
  };
  bool ipc = false;
  // Receivers first: a bootstrap send does not wait for its receiver.
  for (int c = 0; c < treeChannels_; ++c) {
    const TreeConns& t = comm->channels[c % comm->nChannels]->tree;
    TreeDev& td = chans[c].tree;
    td.up = t.up;
    td.nDown = t.nDown;
    for (int d = 0; d < t.nDown; ++d) {
      td.down[d] = t.down[d];
      BATON_CHECK(offerFifo(comm, t.down[d], kTagGpuTreeUp + c, layout, c, &treeFifos_,
                            &chans[c].treeConns[kGpuTreeUpRecv + d]));
      td.upRecv[d] = at(c, kGpuTreeUpRecv + d);
    }
    if (t.up >= 0) {
      BATON_CHECK(
          offerFifo(comm, t.up, kTagGpuTreeDown + c, layout, c, &treeFifos_, &chans[c].treeConns[kGpuTreeDownRecv]));
      td.downRecv = at(c, kGpuTreeDownRecv);
    }
  }
  for (int c = 0; c < treeChannels_; ++c) {
    TreeDev& td = chans[c].tree;
    if (td.up >= 0) {
      BATON_CHECK(takeFifo(comm, td.up, kTagGpuTreeUp + c, layout, c, &chans[c].treeConns[kGpuTreeUpSend], &ipc));
      td.upSend = at(c, kGpuTreeUpSend);
    }
    for (int d = 0; d < td.nDown; ++d) {
      BATON_CHECK(
          takeFifo(comm, td.down[d], kTagGpuTreeDown + c, layout, c, &chans[c].treeConns[kGpuTreeDownSend + d], &ipc));
      td.downSend[d] = at(c, kGpuTreeDownSend + d);
    }
  }
  BATON_INFO(kSubInit, "GPU communicator: rank %d: trees on %d channels (NCCL_ALGO leaves AllReduce to Tree)%s",
             comm->rank, treeChannels_, ipc ? ", some reached through CUDA IPC handles" : "");
  return ncclSuccess;
}

}  // namespace baton

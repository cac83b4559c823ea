// A queued operation: what ncclAllReduce / ncclSend / ... record until their group ends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "coll_args.h"
#include "nccl.h"
#include "reduce_ops.h"

struct ncclComm;

namespace baton {

struct ExecCtx;

struct Task {
  // kAlltoAll: an AlltoAll run as rounds (pairwise, Bruck: algorithms/alltoall.h); the direct one
  // is recorded as its sends and receives.
  enum Kind { kColl, kSend, kRecv, kAlltoAll } kind = kColl;
  CollFunc func = kFuncAllReduce;  // for kColl
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  size_t count = 0;
  ncclDataType_t type = ncclFloat;
  OpParams op;  // resolved from ncclRedOp_t when the call is made (reduce_ops.h)
  int root = 0;
  int peer = -1;         // kSend / kRecv
  int alltoallAlgo = 0;  // kAlltoAll: an AlltoAllAlgo
  // kAlltoAll: per peer, bytes and byte offsets: sendBytes[n], sendOffset[n], recvBytes[n],
  // recvOffset[n]; `uniform` when every block has the same size (ncclAlltoAll), which Bruck
  // then need not announce.
  std::shared_ptr<const std::vector<size_t>> layout;
  bool uniform = false;
  // kAlltoAll on the CPU: what runs its rounds (src/alltoall/'s runAlltoAll, set by alltoallTasks),
  // so the core's point-to-point executor runs them without including the AlltoAll subsystem.
  ncclResult_t (*runRounds)(ncclComm* comm, const Task& task, ExecCtx& ctx) = nullptr;
  // What a runRounds other than the AlltoAll's reads (the fused wire-format stage's exchange plan,
  // src/lowp/wire_fused.cc); it outlives the launch with the task.
  std::shared_ptr<void> roundsArg;
  // kAlltoAll by stores into windows: channel 0's symmetric epoch, numbered at launch like the
  // symmetric collectives' (src/enqueue.cc), so every rank uses the same one.
  uint64_t symEpoch = 0;
  // The CUDA backend: a collective on device buffers, enqueued on `stream` (src/gpu/gpu_launch.cc).
  bool onDevice = false;
  cudaStream_t stream = nullptr;
  // NCCL_PROFILER_PLUGIN (profiler/profiler_events.h): the call's CollApi / P2pApi event and the
  // thread's GroupApi, the parents of what the launch records.
  void* profApi = nullptr;
  void* profGroupApi = nullptr;
};

// A send (sendbuff) or receive (recvbuff) of `count` elements with `peer`.
// A collective's task (no operator or root yet: the caller sets what its collective needs).
Task collTask(CollFunc func, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t type);
Task sendRecvTask(Task::Kind kind, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t type, int peer);

size_t typeSize(ncclDataType_t t);

// What one collective moves, computed once when it is planned and read by every choice the planner
// makes: the bytes the operation covers (collBytes: what the tuner and the size thresholds weigh)
// and this rank's input and output bytes (AllGather's output and ReduceScatter's input are nRanks
// blocks).
struct CollShape {
  size_t typeBytes = 0;
  size_t totalBytes = 0;
  size_t sendBytes = 0, recvBytes = 0;
};
CollShape collShapeOf(const Task& t, int nRanks);
const char* typeName(ncclDataType_t t);
const char* opName(RedOpKind k);

}  // namespace baton

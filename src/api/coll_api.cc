// The collective and point-to-point entry points: validate, queue in the group, and (outside a
// group) end the implicit group of one. Gather and Scatter are grouped sends/receives; AlltoAll has
// its own file (alltoall_api.cc).
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "api/api.h"
#include "api/argcheck.h"
#include "api/submit.h"
#include "comm.h"
#include "enqueue.h"
#include "fault/atomic_allreduce.h"
#include "gpu/gpu_comm.h"
#include "group.h"
#include "misc/debug.h"

namespace baton {
namespace {

ncclResult_t collective(CollFunc func, const char* fn, const void* sendbuff, void* recvbuff, size_t count,
                        ncclDataType_t type, ncclRedOp_t op, int root, ncclComm* comm, cudaStream_t stream) {
  // All-or-nothing AllReduce: a communicator in error still votes (atomic_allreduce.cc).
  const bool atomic = func == kFuncAllReduce && checkCommLive(comm, fn) == ncclSuccess && comm->tun.atomicCollectives &&
                      comm->initState.load() == ncclSuccess && !comm->revoked.load() &&
                      comm->asyncError.load() != ncclSuccess;
  if (!atomic) ARGCHECK(checkCommReady(comm, fn));
  ARGCHECK(checkDatatype(type, fn));
  Task t = collTask(func, sendbuff, recvbuff, count, type);
  t.root = root;
  const bool reduces = func == kFuncAllReduce || func == kFuncReduce || func == kFuncReduceScatter;
  if (reduces) ARGCHECK(resolveOp(comm, op, type, fn, &t.op));
  if (func == kFuncBroadcast || func == kFuncReduce) ARGCHECK(checkRoot(comm, root, fn));
  const size_t factor = (func == kFuncAllGather || func == kFuncReduceScatter) ? comm->nRanks : 1;
  ARGCHECK(checkCount(count, type, factor, fn,
                      func == kFuncAllGather       ? "sendcount"
                      : func == kFuncReduceScatter ? "recvcount"
                                                   : "count"));
  const bool rootOnlyRecv = func == kFuncReduce && comm->rank != root;
  const bool rootOnlySend = func == kFuncBroadcast && comm->rank != root;
  const bool oneBuffer = func == kFuncBroadcast && sendbuff == recvbuff;  // ncclBcast's `buff`
  if (!rootOnlySend) ARGCHECK(checkCollPtr(sendbuff, count, fn, oneBuffer ? "buff" : "sendbuff"));
  if (!rootOnlyRecv) ARGCHECK(checkCollPtr(recvbuff, count, fn, oneBuffer ? "buff" : "recvbuff"));
  // Device buffers: a kernel on `stream` (the CUDA backend); host buffers: the CPU backend.
  t.stream = stream;  // gpuClassify refuses host buffers on a stream being captured
  ARGCHECK(gpuClassify(comm, t, fn, &t.onDevice));
  if (t.onDevice) return submit(comm, {t});
  auto run = [comm, &t]() -> ncclResult_t {
    if (!inGroup()) {  // the latency path: no group bookkeeping, no allocation
      bool handled = false;
      const ncclResult_t res = runCollectiveNow(comm, t, &handled);
      if (handled) return res;
    }
    return submit(comm, {t});
  };
  if (func == kFuncAllReduce && comm->tun.atomicCollectives) return atomicAllReduce(comm, t, run);
  return run();
}

// Outside a group, a lone send or receive takes the latency path when it can (runSendRecvNow).
ncclResult_t sendRecv(ncclComm* comm, const std::vector<Task>& tasks) {
  if (!inGroup()) {
    bool handled = false;
    const ncclResult_t res = runSendRecvNow(comm, tasks[0], &handled);
    if (handled) return res;
  }
  return submit(comm, tasks);
}

ncclResult_t checkSendRecv(const char* fn, const void* buf, size_t count, ncclDataType_t type, int peer, ncclComm* comm,
                           const char* bufName) {
  BATON_CHECK(checkCommReady(comm, fn));
  BATON_CHECK(checkDatatype(type, fn));
  BATON_CHECK(checkRoot(comm, peer, fn, "peer"));
  BATON_CHECK(checkCount(count, type, 1, fn));
  return checkCollPtr(buf, count, fn, bufName);
}

}  // namespace
}  // namespace baton

using namespace baton;

NCCL_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                            ncclComm_t comm, cudaStream_t stream) {
  return collective(kFuncAllReduce, "ncclAllReduce", sendbuff, recvbuff, count, datatype, op, 0, comm, stream);
}

NCCL_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                         int root, ncclComm_t comm, cudaStream_t stream) {
  return collective(kFuncReduce, "ncclReduce", sendbuff, recvbuff, count, datatype, op, root, comm, stream);
}

NCCL_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                            ncclComm_t comm, cudaStream_t stream) {
  return collective(kFuncBroadcast, "ncclBroadcast", sendbuff, recvbuff, count, datatype, ncclSum, root, comm, stream);
}

NCCL_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
         cudaStream_t stream);
ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                        cudaStream_t stream) {
  return collective(kFuncBroadcast, "ncclBcast", buff, buff, count, datatype, ncclSum, root, comm, stream);
}

NCCL_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
         ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                            ncclComm_t comm, cudaStream_t stream) {
  return collective(kFuncAllGather, "ncclAllGather", sendbuff, recvbuff, sendcount, datatype, ncclSum, 0, comm, stream);
}

NCCL_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff, size_t recvcount,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                                ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return collective(kFuncReduceScatter, "ncclReduceScatter", sendbuff, recvbuff, recvcount, datatype, op, 0, comm,
                    stream);
}

NCCL_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
         cudaStream_t stream);
ncclResult_t pncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                       cudaStream_t stream) {
  ARGCHECK(checkSendRecv("ncclSend", sendbuff, count, datatype, peer, comm, "sendbuff"));
  std::vector<Task> tasks{sendRecvTask(Task::kSend, sendbuff, nullptr, count, datatype, peer)};
  ARGCHECK(gpuClassifyP2p(comm, tasks, stream, "ncclSend"));
  return sendRecv(comm, tasks);
}

NCCL_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
         cudaStream_t stream);
ncclResult_t pncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                       cudaStream_t stream) {
  ARGCHECK(checkSendRecv("ncclRecv", recvbuff, count, datatype, peer, comm, "recvbuff"));
  std::vector<Task> tasks{sendRecvTask(Task::kRecv, nullptr, recvbuff, count, datatype, peer)};
  ARGCHECK(gpuClassifyP2p(comm, tasks, stream, "ncclRecv"));
  return sendRecv(comm, tasks);
}

NCCL_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                         ncclComm_t comm, cudaStream_t stream) {
  const char* fn = "ncclGather";
  ARGCHECK(checkCommReady(comm, fn));
  ARGCHECK(checkDatatype(datatype, fn));
  ARGCHECK(checkRoot(comm, root, fn));
  ARGCHECK(checkCount(count, datatype, comm->nRanks, fn));
  ARGCHECK(checkCollPtr(sendbuff, count, fn, "sendbuff"));
  if (comm->rank == root) ARGCHECK(checkCollPtr(recvbuff, count, fn, "recvbuff"));
  const size_t block = count * typeSize(datatype);
  std::vector<Task> tasks{sendRecvTask(Task::kSend, sendbuff, nullptr, count, datatype, root)};
  if (comm->rank == root)
    for (int r = 0; r < comm->nRanks; ++r)
      tasks.push_back(sendRecvTask(Task::kRecv, nullptr, static_cast<char*>(recvbuff) + r * block, count, datatype, r));
  ARGCHECK(gpuClassifyP2p(comm, tasks, stream, fn));
  return submit(comm, tasks);
}

NCCL_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                          ncclComm_t comm, cudaStream_t stream) {
  const char* fn = "ncclScatter";
  ARGCHECK(checkCommReady(comm, fn));
  ARGCHECK(checkDatatype(datatype, fn));
  ARGCHECK(checkRoot(comm, root, fn));
  ARGCHECK(checkCount(count, datatype, comm->nRanks, fn));
  if (comm->rank == root) ARGCHECK(checkCollPtr(sendbuff, count, fn, "sendbuff"));
  ARGCHECK(checkCollPtr(recvbuff, count, fn, "recvbuff"));
  const size_t block = count * typeSize(datatype);
  std::vector<Task> tasks;
  if (comm->rank == root)
    for (int r = 0; r < comm->nRanks; ++r)
      tasks.push_back(
          sendRecvTask(Task::kSend, static_cast<const char*>(sendbuff) + r * block, nullptr, count, datatype, r));
  tasks.push_back(sendRecvTask(Task::kRecv, nullptr, recvbuff, count, datatype, root));
  ARGCHECK(gpuClassifyP2p(comm, tasks, stream, fn));
  return submit(comm, tasks);
}

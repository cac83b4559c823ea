// AlltoAll rounds on the point-to-point connections (alltoall_executor.h, lesson 12).
#include "alltoall_executor.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "alltoall.h"
#include "misc/debug.h"
#include "sendrecv_executor.h"

namespace baton {
namespace {

// One round: `sendBytes` from `sendBuf` to `to`, `recvBytes` into `recvBuf` from `from` (either may
// be this rank: a local copy).
ncclResult_t exchange(ncclComm* comm, ExecCtx& ctx, const void* sendBuf, size_t sendBytes, int to, void* recvBuf,
                      size_t recvBytes, int from) {
  const std::vector<Task> round = {sendRecvTask(Task::kSend, sendBuf, nullptr, sendBytes, ncclInt8, to),
                                   sendRecvTask(Task::kRecv, nullptr, recvBuf, recvBytes, ncclInt8, from)};
  return runSendRecvBatch(comm, round, ctx);
}

ncclResult_t pairwise(ncclComm* comm, const Task& t, size_t block, ExecCtx& ctx) {
  const int n = comm->nRanks, me = comm->rank;
  const char* send = static_cast<const char*>(t.sendbuff);
  char* recv = static_cast<char*>(t.recvbuff);
  for (int i = 0; i < n && !ctx.failed; ++i) {
    const int to = pairwiseSendPeer(me, n, i), from = pairwiseRecvPeer(me, n, i);
    BATON_CHECK(exchange(comm, ctx, send + to * block, block, to, recv + from * block, block, from));
  }
  return ncclSuccess;
}

ncclResult_t bruck(ncclComm* comm, const Task& t, size_t block, ExecCtx& ctx) {
  const int n = comm->nRanks, me = comm->rank;
  const char* send = static_cast<const char*>(t.sendbuff);
  char* recv = static_cast<char*>(t.recvbuff);
  size_t maxMoved = 0;
  for (int k = 0; k < bruckRounds(n); ++k) maxMoved = std::max(maxMoved, (size_t)bruckSlotsMoved(n, k));
  // The rotated slots, then one packed buffer to send and one to receive.
  std::unique_ptr<char[]> scratch(new char[block * (n + 2 * maxMoved)]);  // not zeroed: every byte is written first
  char* slots = scratch.get();
  char* packedOut = slots + block * n;
  char* packedIn = packedOut + block * maxMoved;
  for (int i = 0; i < n; ++i) copyBytes(ctx, slots + i * block, send + bruckFirstSource(me, n, i) * block, block);
  for (int k = 0; k < bruckRounds(n) && !ctx.failed; ++k) {
    const size_t bytes = block * bruckSlotsMoved(n, k);
    bruckPack(ctx, packedOut, slots, block, n, k);
    BATON_CHECK(
        exchange(comm, ctx, packedOut, bytes, bruckSendPeer(me, n, k), packedIn, bytes, bruckRecvPeer(me, n, k)));
    bruckUnpack(ctx, slots, packedIn, block, n, k);
  }
  for (int i = 0; i < n && !ctx.failed; ++i)
    copyBytes(ctx, recv + bruckLastDest(me, n, i) * block, slots + i * block, block);
  return ncclSuccess;
}

}  // namespace

ncclResult_t runAlltoAll(ncclComm* comm, const Task& t, ExecCtx& ctx) {
  const size_t block = t.count * typeSize(t.type);
  if (block == 0) return ncclSuccess;
  switch (t.alltoallAlgo) {
    case kAlltoAllPairwise: return pairwise(comm, t, block, ctx);
    case kAlltoAllBruck: return bruck(comm, t, block, ctx);
  }
  return batonError(ncclInternalError, "AlltoAll: algorithm %d (%s) does not run in rounds", t.alltoallAlgo,
                    alltoallAlgoName(t.alltoallAlgo));
}

ncclResult_t runPointToPoint(ncclComm* comm, const std::vector<Task>& tasks, ExecCtx& ctx) {
  std::vector<Task> batch;
  for (const Task& t : tasks)
    if (t.kind != Task::kAlltoAll) batch.push_back(t);
  if (!batch.empty()) BATON_CHECK(runSendRecvBatch(comm, batch, ctx));
  for (const Task& t : tasks)
    if (t.kind == Task::kAlltoAll && !ctx.failed) BATON_CHECK(runAlltoAll(comm, t, ctx));
  return ncclSuccess;
}

}  // namespace baton

// A group's sends and receives for one communicator (sendrecv_executor.h): connect the peers,
// copy self-sends locally, progress every transfer round-robin until all are done.
#include "sendrecv_executor.h"

#include <algorithm>
#include <cstring>

#include "alltoall.h"
#include "misc/debug.h"
#include "sendrecv_progress.h"

namespace baton {

ncclResult_t pairSelfCopies(int rank, const std::vector<Task>& tasks, std::vector<SelfCopy>* out) {
  std::vector<const Task*> sends, recvs;
  for (const Task& t : tasks)
    if (t.peer == rank) (t.kind == Task::kSend ? sends : recvs).push_back(&t);
  if (sends.size() != recvs.size())
    return batonError(ncclInvalidUsage, "rank %d: %zu sends to itself but %zu receives from itself in one group", rank,
                      sends.size(), recvs.size());
  out->clear();
  for (size_t i = 0; i < sends.size(); ++i) {
    const Task& s = *sends[i];
    const Task& r = *recvs[i];
    const size_t sb = s.count * typeSize(s.type), rb = r.count * typeSize(r.type);
    if (sb != rb)
      return batonError(ncclInvalidUsage, "rank %d: send to self of %zu bytes but receive from self of %zu bytes", rank,
                        sb, rb);
    out->push_back({s.sendbuff, r.recvbuff, sb});
  }
  return ncclSuccess;
}

ncclResult_t runSendRecvBatch(ncclComm* comm, const std::vector<Task>& tasks, ExecCtx& ctx) {
  const int n = comm->nRanks, me = comm->rank;
  std::vector<int> sendPeers, recvPeers;
  for (const Task& t : tasks) {
    // An empty transfer needs no connection, and its peer (whose matching one is empty too) may
    // not be connecting: an AlltoAllv rank that moves nothing sits out the device path its peers
    // take, whose connections were made at init.
    if (t.peer != me && t.count * typeSize(t.type) > 0)
      (t.kind == Task::kSend ? sendPeers : recvPeers).push_back(t.peer);
  }
  std::sort(sendPeers.begin(), sendPeers.end());
  sendPeers.erase(std::unique(sendPeers.begin(), sendPeers.end()), sendPeers.end());
  std::sort(recvPeers.begin(), recvPeers.end());
  recvPeers.erase(std::unique(recvPeers.begin(), recvPeers.end()), recvPeers.end());
  BATON_CHECK(connectPeers(comm, sendPeers, recvPeers));

  std::vector<SelfCopy> self;
  BATON_CHECK(pairSelfCopies(me, tasks, &self));
  for (const SelfCopy& c : self)
    if (c.bytes && c.src != c.dst) memmove(c.dst, c.src, c.bytes);

  // NET zero copy (lesson 09): a registered buffer on a NET connection is sent from / received into
  // by the proxy itself, as NCCL does for registered buffers of send/recv over the network.
  auto zeroCopy = [&](const Connection* conn, const void* buf, size_t bytes) {
    return comm->tun.netZeroCopy && conn && conn->viaNet && !comm->reg->empty() && comm->reg->covers(buf, bytes);
  };

  // A connector's transfers run in the order they were issued: each waits for the one before it.
  std::vector<SendRecvTransfer> xs;
  std::vector<int> after;
  std::vector<int> lastSend(n, -1), lastRecv(n, -1);
  xs.reserve(tasks.size());
  after.reserve(tasks.size());
  for (const Task& t : tasks) {
    if (t.peer == me) continue;
    const size_t bytes = t.count * typeSize(t.type);
    if (bytes == 0) continue;
    SendRecvTransfer x;
    x.bytes = bytes;
    x.peer = t.peer;
    x.isSend = t.kind == Task::kSend;
    int& last = x.isSend ? lastSend[t.peer] : lastRecv[t.peer];
    if (x.isSend) {
      x.buf = const_cast<char*>(static_cast<const char*>(t.sendbuff));
      x.conn = &comm->peerSend[t.peer];
      x.zeroCopy = zeroCopy(comm->peerSendConn[t.peer].get(), x.buf, bytes);
    } else {
      x.buf = static_cast<char*>(t.recvbuff);
      x.conn = &comm->peerRecv[t.peer];
      x.zeroCopy = zeroCopy(comm->peerRecvConn[t.peer].get(), x.buf, bytes);
    }
    after.push_back(last);
    last = (int)xs.size();
    xs.push_back(x);
  }
  sendRecvRunAll(ctx, xs.data(), after.data(), (int)xs.size());
  return ncclSuccess;
}

ncclResult_t runPointToPoint(ncclComm* comm, const std::vector<Task>& tasks, ExecCtx& ctx) {
  std::vector<Task> batch;
  for (const Task& t : tasks)
    if (t.kind != Task::kAlltoAll) batch.push_back(t);
  if (!batch.empty()) BATON_CHECK(runSendRecvBatch(comm, batch, ctx));
  for (const Task& t : tasks) {
    if (t.kind != Task::kAlltoAll || ctx.failed) continue;
    if (!t.runRounds)
      return batonError(ncclInternalError, "AlltoAll: algorithm %d (%s) does not run in rounds", t.alltoallAlgo,
                        alltoallAlgoName(t.alltoallAlgo));
    BATON_CHECK(t.runRounds(comm, t, ctx));
  }
  return ncclSuccess;
}

}  // namespace baton

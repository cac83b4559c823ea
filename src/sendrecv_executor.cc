#include "sendrecv_executor.h"

#include <algorithm>
#include <cstring>
#include <deque>

#include "misc/debug.h"
#include "sendrecv_progress.h"

namespace baton {

ncclResult_t runSendRecvBatch(ncclComm* comm, const std::vector<Task>& tasks, ExecCtx& ctx) {
  const int n = comm->nRanks, me = comm->rank;
  std::vector<int> sendPeers, recvPeers;
  std::vector<const Task*> selfSends, selfRecvs;
  for (const Task& t : tasks) {
    if (t.peer == me) (t.kind == Task::kSend ? selfSends : selfRecvs).push_back(&t);
    else (t.kind == Task::kSend ? sendPeers : recvPeers).push_back(t.peer);
  }
  std::sort(sendPeers.begin(), sendPeers.end());
  sendPeers.erase(std::unique(sendPeers.begin(), sendPeers.end()), sendPeers.end());
  std::sort(recvPeers.begin(), recvPeers.end());
  recvPeers.erase(std::unique(recvPeers.begin(), recvPeers.end()), recvPeers.end());
  BATON_CHECK(connectPeers(comm, sendPeers, recvPeers));

  // A send to ourselves is a copy into the matching receive (k-th send pairs with k-th receive).
  if (selfSends.size() != selfRecvs.size())
    return batonError(ncclInvalidUsage, "rank %d: %zu sends to itself but %zu receives from itself in one group", me,
                      selfSends.size(), selfRecvs.size());
  for (size_t i = 0; i < selfSends.size(); ++i) {
    const Task& s = *selfSends[i];
    const Task& r = *selfRecvs[i];
    const size_t sb = s.count * typeSize(s.type), rb = r.count * typeSize(r.type);
    if (sb != rb)
      return batonError(ncclInvalidUsage, "rank %d: send to self of %zu bytes but receive from self of %zu bytes", me,
                        sb, rb);
    if (sb && s.sendbuff != r.recvbuff) memmove(r.recvbuff, s.sendbuff, sb);
  }

  // NET zero copy (lesson 09): a registered buffer on a NET connection is sent from / received into
  // by the proxy itself, as NCCL does for registered buffers of send/recv over the network.
  auto zeroCopy = [&](const Connection* conn, const void* buf, size_t bytes) {
    return comm->tun.netZeroCopy && conn && conn->viaNet && !comm->reg->empty() && comm->reg->covers(buf, bytes);
  };

  // Per peer and direction, transfers run in the order they were issued.
  std::vector<std::deque<SendRecvTransfer>> sends(n), recvs(n);
  size_t pending = 0;
  for (const Task& t : tasks) {
    if (t.peer == me) continue;
    const size_t bytes = t.count * typeSize(t.type);
    if (bytes == 0) continue;
    SendRecvTransfer x;
    x.bytes = bytes;
    x.peer = t.peer;
    if (t.kind == Task::kSend) {
      x.buf = const_cast<char*>(static_cast<const char*>(t.sendbuff));
      x.conn = &comm->peerSend[t.peer];
      x.zeroCopy = zeroCopy(comm->peerSendConn[t.peer].get(), x.buf, bytes);
      sends[t.peer].push_back(x);
    } else {
      x.buf = static_cast<char*>(t.recvbuff);
      x.conn = &comm->peerRecv[t.peer];
      x.zeroCopy = zeroCopy(comm->peerRecvConn[t.peer].get(), x.buf, bytes);
      recvs[t.peer].push_back(x);
    }
    ++pending;
  }
  uint32_t idle = 0;
  uint64_t idleSince = 0;
  while (pending && !ctx.failed) {
    bool progressed = false;
    for (int p = 0; p < n; ++p) {
      if (!sends[p].empty() && sendRecvTrySend(ctx, sends[p].front())) {
        progressed = true;
        if (sends[p].front().complete()) sends[p].pop_front(), --pending;
      }
      if (!recvs[p].empty() && sendRecvTryRecv(ctx, recvs[p].front())) {
        progressed = true;
        if (recvs[p].front().complete()) recvs[p].pop_front(), --pending;
      }
    }
    if (progressed) {
      idle = 0;
      idleSince = 0;
      continue;
    }
    waitPause(idle);
    if (idle % kWaitCheckEvery == 0) {
      // Report the first transfer still pending (the clock restarts whenever anything progresses).
      int peer = 0;
      while (sends[peer].empty() && recvs[peer].empty()) ++peer;
      const bool isSend = !sends[peer].empty();
      const ConnDev* c = isSend ? sends[peer].front().conn : recvs[peer].front().conn;
      // A send needs head >= step + 1 - depth (a free slot), or a zero-copy one that has posted
      // every step head >= its last step + 1; a receive needs tail >= step + 1.
      const uint64_t drain = isSend ? sends[peer].front().drainUntil : 0;
      const uint64_t expected = drain ? drain : isSend ? c->step + 1 - c->depth : c->step + 1;
      waitGiveUp(ctx, idleSince, peer, isSend ? "send head (credit)" : "recv tail", expected,
                 loadAcquire(isSend ? &c->fifo->head : &c->fifo->tail));
    }
  }
  return ncclSuccess;
}

}  // namespace baton

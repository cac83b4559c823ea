// AlltoAll rounds on the point-to-point connections, and stores into windows (alltoall_executor.h,
// lesson 12).
#include "alltoall/alltoall_executor.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "alltoall.h"
#include "alltoall_window.h"
#include "misc/debug.h"
#include "register/window.h"
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

// The task's layout, per peer.
struct Layout {
  const size_t *sendBytes, *sendOff, *recvBytes, *recvOff;
  explicit Layout(const Task& t, int n)
      : sendBytes(t.layout->data()), sendOff(sendBytes + n), recvBytes(sendOff + n), recvOff(recvBytes + n) {}
};

ncclResult_t pairwise(ncclComm* comm, const Task& t, ExecCtx& ctx) {
  const int n = comm->nRanks, me = comm->rank;
  const Layout l(t, n);
  const char* send = static_cast<const char*>(t.sendbuff);
  char* recv = static_cast<char*>(t.recvbuff);
  for (int i = 0; i < n && !ctx.failed; ++i) {
    const int to = pairwiseSendPeer(me, n, i), from = pairwiseRecvPeer(me, n, i);
    BATON_CHECK(exchange(comm, ctx, send + l.sendOff[to], l.sendBytes[to], to, recv + l.recvOff[from],
                         l.recvBytes[from], from));
  }
  return ncclSuccess;
}

// A buffer that grows without zeroing (every byte is written before it is read).
struct Scratch {
  std::unique_ptr<char[]> p;
  size_t cap = 0;
  char* get(size_t bytes) {
    if (bytes > cap) p.reset(new char[cap = std::max(bytes, 2 * cap)]);
    return p.get();
  }
};

// Bruck with blocks of any size: a slot is a block's bytes wherever they are now (first in the
// send buffer, later in the slot's own storage). Unless every block has the same size, each
// round first sends the sizes of the slots that travel, so the receiver knows what comes.
ncclResult_t bruck(ncclComm* comm, const Task& t, ExecCtx& ctx) {
  const int n = comm->nRanks, me = comm->rank;
  const Layout l(t, n);
  const char* send = static_cast<const char*>(t.sendbuff);
  char* recv = static_cast<char*>(t.recvbuff);
  std::vector<const char*> data(n);  // slot i's bytes, wherever they are now
  std::vector<size_t> bytes(n);
  std::vector<Scratch> own(n);  // slot i's storage once it has received
  for (int i = 0; i < n; ++i) {
    const int p = bruckFirstSource(me, n, i);
    data[i] = send + l.sendOff[p], bytes[i] = l.sendBytes[p];
  }
  Scratch packedOut, packedIn;
  std::vector<size_t> sizesOut(n), sizesIn(n);
  for (int k = 0; k < bruckRounds(n) && !ctx.failed; ++k) {
    const int to = bruckSendPeer(me, n, k), from = bruckRecvPeer(me, n, k);
    size_t moved = 0, outBytes = 0;
    for (int i = 0; i < n; ++i)
      if (bruckMoves(i, k)) sizesOut[moved++] = bytes[i], outBytes += bytes[i];
    if (t.uniform) std::copy(sizesOut.begin(), sizesOut.end(), sizesIn.begin());
    else
      BATON_CHECK(exchange(comm, ctx, sizesOut.data(), moved * sizeof(size_t), to, sizesIn.data(),
                           moved * sizeof(size_t), from));
    size_t inBytes = 0;
    for (size_t j = 0; j < moved; ++j) inBytes += sizesIn[j];
    char* out = packedOut.get(outBytes);
    bruckPack(ctx, out, data.data(), bytes.data(), n, k);
    char* in = packedIn.get(inBytes);
    BATON_CHECK(exchange(comm, ctx, out, outBytes, to, in, inBytes, from));
    for (int i = 0, j = 0; i < n; ++i) {
      if (!bruckMoves(i, k)) continue;
      bytes[i] = sizesIn[j++];
      char* dst = own[i].get(bytes[i]);
      copyBytes(ctx, dst, in, bytes[i]);
      data[i] = dst, in += bytes[i];
    }
  }
  for (int i = 0; i < n && !ctx.failed; ++i) {
    const int p = bruckLastDest(me, n, i);
    if (bytes[i] != l.recvBytes[p])
      return batonError(ncclInvalidUsage, "AlltoAll (Bruck): rank %d expected %zu bytes from rank %d, which sent %zu",
                        me, l.recvBytes[p], p, bytes[i]);
    copyBytes(ctx, recv + l.recvOff[p], data[i], bytes[i]);
  }
  return ncclSuccess;
}

// Stores into the peers' windows (alltoall_window.h). The submit saw recvbuff in a symmetric
// window; here each rank checks that its blocks lie in it and still joins the barriers when they
// do not (posting no window), so the peers fail with a message instead of waiting.
ncclResult_t window(ncclComm* comm, const Task& t, ExecCtx& ctx) {
  const int n = comm->nRanks, me = comm->rank;
  const Layout l(t, n);
  WindowTable& wt = *comm->windows;
  if (wt.pads.size() != (size_t)n)
    return batonError(ncclInvalidUsage, "AlltoAll (window): the communicator has no window any more");
  // A rank that receives nothing may pass no recvbuff: it posts any symmetric window, which its
  // peers check only if they would store into it.
  const ncclWindow_vidmem* w = t.recvbuff ? wt.findSymmetric(t.recvbuff, 1) : wt.anySymmetric();
  const size_t base = w && t.recvbuff ? static_cast<size_t>(static_cast<char*>(t.recvbuff) - w->base) : 0;
  std::vector<size_t> recvOffset(n);
  int outside = w ? -1 : me;  // a peer whose block does not fit, or me: recvbuff is in no window
  for (int p = 0; p < n; ++p) {
    recvOffset[p] = base + l.recvOff[p];
    if (w && outside < 0 && l.recvBytes[p] && (recvOffset[p] > w->size || l.recvBytes[p] > w->size - recvOffset[p]))
      outside = p;
  }
  AlltoAllWindowArgs a;
  a.rank = me, a.nRanks = n, a.pads = wt.pads.data(), a.epoch = t.symEpoch;
  a.send = static_cast<const char*>(t.sendbuff);
  a.sendBytes = l.sendBytes, a.sendOffset = l.sendOff, a.recvBytes = l.recvBytes, a.recvOffset = recvOffset.data();
  a.window = outside < 0 ? w->serial : SymAlltoAllPost::kNoWindow;
  a.peerWindow = w ? w->peerBase.data() : nullptr;
  AlltoAllWindowFault f;
  const bool ok = runAlltoAllWindow(ctx, a, &f);
  if (ctx.failed) return ncclSuccess;  // the caller reports the abort or the timeout
  if (outside == me)
    return batonError(ncclInvalidUsage, "AlltoAll (window): rank %d's recvbuff %p lies in no symmetric window", me,
                      t.recvbuff);
  if (outside >= 0)
    return batonError(ncclInvalidUsage,
                      "AlltoAll (window): rank %d's block from rank %d (%zu bytes at offset %zu of recvbuff) reaches "
                      "past its window of %zu bytes",
                      me, outside, l.recvBytes[outside], l.recvOff[outside], w->size);
  if (ok) return ncclSuccess;
  switch (f.kind) {
    case AlltoAllWindowFault::kOtherWindow:
      if (f.theirs == SymAlltoAllPost::kNoWindow)
        return batonError(ncclInvalidUsage,
                          "AlltoAll (window): rank %d's blocks do not lie in its window: nothing "
                          "moved to it",
                          f.peer);
      return batonError(ncclInvalidUsage,
                        "AlltoAll (window): rank %d receives in window #%llu, rank %d in #%llu: every rank's recvbuff "
                        "must lie in the same window",
                        me, (unsigned long long)f.mine, f.peer, (unsigned long long)f.theirs);
    case AlltoAllWindowFault::kSendMismatch:
      return batonError(ncclInvalidUsage, "AlltoAll (window): rank %d sends %llu bytes to rank %d, which expects %llu",
                        me, (unsigned long long)f.mine, f.peer, (unsigned long long)f.theirs);
    case AlltoAllWindowFault::kRecvMismatch:
      return batonError(ncclInvalidUsage,
                        "AlltoAll (window): rank %d expected %llu bytes from rank %d, which sent %llu", me,
                        (unsigned long long)f.mine, f.peer, (unsigned long long)f.theirs);
    case AlltoAllWindowFault::kNone: break;
  }
  return ncclSuccess;
}

}  // namespace

ncclResult_t runAlltoAll(ncclComm* comm, const Task& t, ExecCtx& ctx) {
  switch (t.alltoallAlgo) {
    case kAlltoAllPairwise: return pairwise(comm, t, ctx);
    case kAlltoAllBruck: return bruck(comm, t, ctx);
    case kAlltoAllWindow: return window(comm, t, ctx);
  }
  return batonError(ncclInternalError, "AlltoAll: algorithm %d (%s) does not run in rounds", t.alltoallAlgo,
                    alltoallAlgoName(t.alltoallAlgo));
}

std::vector<Task> alltoallTasks(ncclComm* comm, int algo, const void* sendbuff, void* recvbuff,
                                std::shared_ptr<const std::vector<size_t>> layout, bool uniform) {
  const int n = comm->nRanks;
  if (algo != kAlltoAllDirect) {
    Task t = sendRecvTask(Task::kAlltoAll, sendbuff, recvbuff, 0, ncclInt8, -1);
    t.alltoallAlgo = algo;
    t.layout = std::move(layout);
    t.uniform = uniform;
    t.runRounds = &runAlltoAll;
    return {t};
  }
  const size_t* l = layout->data();
  const char* send = static_cast<const char*>(sendbuff);
  char* recv = static_cast<char*>(recvbuff);
  std::vector<Task> tasks;
  for (int p = 0; p < n; ++p) {
    tasks.push_back(sendRecvTask(Task::kSend, send + l[n + p], nullptr, l[p], ncclInt8, p));
    tasks.push_back(sendRecvTask(Task::kRecv, nullptr, recv + l[3 * n + p], l[2 * n + p], ncclInt8, p));
  }
  return tasks;
}

}  // namespace baton

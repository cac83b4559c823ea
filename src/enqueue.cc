// The planner: turns a group's tasks for one communicator into work items on its channel workers.
// With one blocking communicator in the group, the calling thread runs channel 0's items itself.
//
// A collective is cut into one part per channel (fewer for small messages); each part runs the
// algorithm's kernel on that channel's worker. All point-to-point tasks of the group become one
// batch on channel 0's worker (p2p_executor.cc), after the group's collectives.
#include <algorithm>
#include <memory>
#include <string>

#include "comm.h"
#include "completion.h"
#include "cpu_kernels/coll_kernel.h"
#include "debug.h"
#include "group.h"
#include "p2p_executor.h"
#include "trace.h"

namespace baton {

static ncclResult_t failureResult(const ExecCtx& ctx, ncclComm* comm, const char* what) {
  const WaitFailure& f = ctx.failure;
  const bool aborted = f.result == kWaitAborted && __atomic_load_n(&comm->abortFlag, __ATOMIC_ACQUIRE);
  ncclResult_t code = f.result == kWaitTimeout ? ncclSystemError : ncclInvalidUsage;
  if (aborted && f.what && std::string(f.what).find("size") == std::string::npos)
    return batonError(ncclInvalidUsage, "%s: rank %d channel %d stopped: communicator aborted", what, f.rank, f.channel);
  return batonError(code, "%s: rank %d channel %d %s waiting for %s of peer %d: expected %llu, observed %llu", what,
                    f.rank, f.channel, f.result == kWaitTimeout ? "timed out (BATON_WAIT_TIMEOUT)" : "failed",
                    f.what ? f.what : "?", f.peer, (unsigned long long)f.expected, (unsigned long long)f.observed);
}

ExecCtx makeCtx(ncclComm* comm, int channel) {
  ExecCtx ctx;
  ctx.rank = comm->rank;
  ctx.channel = channel;
  ctx.abortFlag = &comm->abortFlag;
  ctx.timeoutNs = comm->tun.waitTimeoutNs;
  ctx.jitter = comm->tun.jitter;
  ctx.jitterState = 0x9e3779b9u * (comm->rank + 1) + channel;
  ctx.trace = traceEnabled();
  return ctx;
}

// Runs a work item's body on a worker and reports to the completion and the communicator.
// With BATON_TRACE on, the item is one span on its channel's lane of the timeline.
static std::function<void()> wrapWork(ncclComm* comm, std::shared_ptr<Completion> done,
                                      std::function<ncclResult_t()> body, int channel, std::string name) {
  return [comm, done, body, channel, name] {
    ncclResult_t res = ncclSuccess;
    const uint64_t t0 = traceEnabled() ? traceNowNs() : 0;
    if (!__atomic_load_n(&comm->abortFlag, __ATOMIC_ACQUIRE)) res = body();
    else res = ncclInvalidUsage;
    if (t0) traceComplete(comm->rank, channel, name.c_str(), "op", t0, traceNowNs());
    if (res != ncclSuccess) commSetError(comm, res);
    comm->inflight.fetch_sub(1);
    done->done(res);
  };
}

static int channelsFor(ncclComm* comm, const Task& t, size_t bytes) {
  if (t.func == kFuncAllReduce && comm->tun.allreduceAlgo == kAlgoNaive) return 1;
  const size_t want = std::max<size_t>(1, bytes / std::max<size_t>(comm->tun.minChannelBytes, 1));
  return (int)std::min<size_t>(comm->nChannels, want);
}

ncclResult_t launchTasks(ncclComm* comm, std::vector<Task>& tasks, std::shared_ptr<Completion>* out, bool callerRuns) {
  std::vector<const Task*> colls, p2p;
  for (const Task& t : tasks) (t.kind == Task::kColl ? colls : p2p).push_back(&t);
  struct Part {
    int channel;
    std::function<ncclResult_t()> body;
    std::string name;  // for the trace
  };
  std::vector<Part> parts;
  for (const Task* tp : colls) {
    const Task t = *tp;
    // AllGather and Broadcast move bytes: their kernels count in bytes, whatever the datatype.
    const bool bytesOnly = t.func == kFuncAllGather || t.func == kFuncBroadcast;
    const size_t count = bytesOnly ? t.count * typeSize(t.type) : t.count;
    const size_t totalBytes = t.count * typeSize(t.type) * ((t.func == kFuncAllGather || t.func == kFuncReduceScatter) ? comm->nRanks : 1);
    const int nch = channelsFor(comm, t, totalBytes);
    AlgoProtoChoice choice;
    if (t.func == kFuncAllReduce && comm->tun.allreduceAlgo == kAlgoNaive) choice = {kAlgoNaive, kProtoSimple, 0};
    else BATON_CHECK(chooseAlgoProto(comm->tun.model, comm->tun.mask, t.func, comm->nRanks, totalBytes, &choice));
    const int algo = choice.algo;
    const uint64_t opCount = comm->opCount++;
    BATON_INFO(kSubColl,
               "%s: opCount %llx sendbuff %p recvbuff %p count %zu datatype %s op %s root %d comm %p [nranks=%d] "
               "algorithm %s protocol %s channels %d",
               funcName(t.func), (unsigned long long)opCount, t.sendbuff, t.recvbuff, t.count, typeName(t.type),
               opName(t.op.kind), t.root, (void*)comm, comm->nRanks, algoName(algo), protoName(choice.proto), nch);
    if (t.count == 0) continue;
    const std::string traceName = traceEnabled() ? std::string(funcName(t.func)) + " " + std::to_string(totalBytes) +
                                                       " B " + algoName(algo) + "/" + protoName(choice.proto)
                                                 : std::string();
    CollKernel kernel = collKernel(t.func, t.type, t.op.kind);
    if (!kernel) return batonError(ncclInternalError, "no kernel for %s/%s/%s", funcName(t.func), typeName(t.type), opName(t.op.kind));
    CollArgs base;  // what every channel's part shares
    base.func = t.func;
    base.algo = algo;
    base.proto = choice.proto;
    base.direct = comm->allInProcess && comm->tun.direct && t.func == kFuncAllReduce && choice.proto == kProtoSimple;
    base.opTag = opCount + 1;
    base.sendbuff = t.sendbuff;
    base.recvbuff = t.recvbuff;
    base.count = count;
    base.root = t.root;
    base.rank = comm->rank;
    base.nRanks = comm->nRanks;
    base.nChannels = nch;
    base.chunkSteps = comm->tun.chunkSteps;
    base.ring.nRanks = comm->nRanks;
    if (algo == kAlgoNaive && comm->nRanks > 1) {
      parts.push_back({0, [comm, t, kernel, base] {
        std::vector<int> peers;
        if (comm->rank == 0) for (int p = 1; p < comm->nRanks; ++p) peers.push_back(p);
        else peers.push_back(0);
        BATON_CHECK(connectPeers(comm, peers, peers));
        CollArgs a = base;
        a.peerSend = comm->p2pSend.data();
        a.peerRecv = comm->p2pRecv.data();
        ExecCtx ctx = makeCtx(comm, 0);
        kernel(ctx, a, t.op);
        return ctx.failed ? failureResult(ctx, comm, "AllReduce(naive)") : ncclSuccess;
      }, traceName});
      continue;
    }
    // On a closed ring every rank first sends a whole chunk, then must find a free slot for each
    // slice it forwards before its successor has consumed anything more: with fewer than
    // chunkSteps + 1 slots every rank waits for the next one, in a cycle. Chains (Broadcast,
    // Reduce) work with 1 slot; cycles get at least chunkSteps + 1 (lesson 03).
    const bool cycle = t.func == kFuncAllReduce || t.func == kFuncAllGather || t.func == kFuncReduceScatter;
    const int depth = std::max(comm->tun.fifoDepth, cycle ? std::min(comm->tun.chunkSteps + 1, kSteps) : 1);
    for (int c = 0; c < nch; ++c) {
      Channel& ch = *comm->channels[c];
      parts.push_back({c, [comm, t, kernel, &ch, c, base, depth] {
        CollArgs a = base;
        a.channel = c;
        a.ring.index = ch.ringIndex;
        a.ring.userRanks = ch.ringUserRanks.data();
        a.ring.send = &ch.ringSend;
        a.ring.recv = &ch.ringRecv;
        ch.ringSend.depth = depth;  // the worker runs parts in order, so this holds for this part
        ExecCtx ctx = makeCtx(comm, c);
        kernel(ctx, a, t.op);
        return ctx.failed ? failureResult(ctx, comm, funcName(t.func)) : ncclSuccess;
      }, traceName});
    }
  }
  if (!p2p.empty()) {
    std::vector<Task> batch;
    for (const Task* t : p2p) batch.push_back(*t);
    parts.push_back({0, [comm, batch] {
      ExecCtx ctx = makeCtx(comm, 0);
      ncclResult_t res = runP2pBatch(comm, batch, ctx);
      if (res == ncclSuccess && ctx.failed) res = failureResult(ctx, comm, "Send/Recv");
      return res;
    }, "Send/Recv batch"});
  }
  if (parts.empty()) return ncclSuccess;
  auto done = std::make_shared<Completion>((int)parts.size());
  // The latency path: a small collective on a blocking communicator costs a flag hand-off per
  // step, not two thread wake-ups (worker, then caller). When nothing of this communicator is in
  // flight, channel 0's worker is idle, so running its parts here keeps the per-channel order.
  const bool inlineCh0 = callerRuns && comm->inflight.load() == 0;
  comm->inflight.fetch_add((int)parts.size());
  std::vector<std::function<void()>> mine;
  for (Part& p : parts) {
    std::function<void()> work = wrapWork(comm, done, std::move(p.body), p.channel, std::move(p.name));
    if (inlineCh0 && p.channel == 0) mine.push_back(std::move(work));
    else comm->channels[p.channel]->worker.submit(std::move(work));
  }
  for (auto& work : mine) work();
  *out = done;
  return ncclSuccess;
}

}  // namespace baton

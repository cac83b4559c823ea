// The planner: turns a group's tasks for one communicator into work items on its channel workers.
// With one blocking communicator in the group, the calling thread runs channel 0's items itself.
//
// A collective is cut into one part per channel (fewer for small messages); each part runs the
// algorithm's kernel on that channel's worker. All point-to-point tasks of the group become one
// batch on channel 0's worker (sendrecv_executor.cc), after the group's collectives.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

#include "alltoall.h"
#include "coll_arg_check.h"
#include "comm.h"
#include "comm_error.h"
#include "completion.h"
#include "cpu_kernels/coll_kernel.h"
#include "enqueue.h"
#include "gpu/gpu_comm.h"
#include "group.h"
#include "misc/debug.h"
#include "misc/trace.h"
#include "oneshot_allreduce.h"
#include "profiler/profiler_events.h"
#include "proxy.h"
#include "register/symmetric_plan.h"
#include "sendrecv_executor.h"
#include "sendrecv_progress.h"

namespace baton {

namespace {
bool p2pBuffersRegistered(ncclComm* comm, const Task& t);
ncclResult_t failureResult(const ExecCtx& ctx, ncclComm* comm, const char* what) {
  const WaitFailure& f = ctx.failure;
  const bool aborted = f.result == kWaitAborted && flagIsSet(&comm->abortFlag);
  if (f.result == kWaitPeerFailed) {
    // The announcing neighbour usually failed because a rank died: name that one, which is the
    // news, rather than the messenger. The announcement says which, if the neighbour knew; else
    // look for a dead process on this host. (The announcer may be this rank itself, seen by a wait
    // of another channel: a revoke, or a failure found elsewhere in this process.)
    int cause = f.cause >= 0 && f.cause < comm->nRanks ? f.cause : -1;
    for (int r = 0; cause < 0 && r < (int)comm->livenessPids.size(); ++r)
      if (r != comm->rank && comm->livenessPids[r] > 0 && !processAlive(comm->livenessPids[r])) cause = r;
    char whose[48] = "this rank's";
    if (f.peer != comm->rank) snprintf(whose, sizeof whose, "peer rank %d's", f.peer);
    if (cause == comm->rank)
      return batonError(ncclRemoteError,
                        "%s: rank %d channel %d: %s communicator stopped because it holds this rank failed, so this "
                        "operation cannot finish",
                        what, f.rank, f.channel, whose);
    if (cause >= 0 && cause != f.peer) {
      commNoteFailureCause(comm, cause);
      const int pid = comm->livenessPids[cause];
      char where[48] = "";
      if (pid > 0) snprintf(where, sizeof where, " (pid %d, this host)", pid);
      return batonError(ncclRemoteError,
                        "%s: rank %d channel %d: %s communicator stopped because rank %d%s failed, so this operation "
                        "cannot finish",
                        what, f.rank, f.channel, whose, cause, where);
    }
    if (f.peer == comm->rank)
      return batonError(ncclRemoteError, "%s: rank %d channel %d: this rank's communicator was revoked or stopped",
                        what, f.rank, f.channel);
    return batonError(ncclRemoteError,
                      "%s: rank %d channel %d: peer rank %d failed (its communicator stopped), so this "
                      "operation cannot finish",
                      what, f.rank, f.channel, f.peer);
  }
  if (f.result == kWaitPeerDead) {
    commNoteFailureCause(comm, f.peer);
    return batonError(ncclRemoteError,
                      "%s: rank %d channel %d: peer rank %d (pid %d, this host) died while this rank waited for its %s",
                      what, f.rank, f.channel, f.peer, f.peer >= 0 ? comm->livenessPids[f.peer] : -1,
                      f.what ? f.what : "?");
  }
  if (f.result == kWaitBadStep)
    return batonError(ncclInternalError,
                      "%s: rank %d channel %d: the connector with peer %d holds %llu payload bytes per %s step, less "
                      "than one element (%llu bytes), so no chunk could advance: its FIFO table was not filled (a "
                      "bug in baton)",
                      what, f.rank, f.channel, f.peer, (unsigned long long)f.observed, f.what ? f.what : "?",
                      (unsigned long long)f.expected);
  ncclResult_t code = f.result == kWaitTimeout ? ncclSystemError : ncclInvalidUsage;
  if (aborted && f.what && std::string(f.what).find("size") == std::string::npos) {
    // Another part of this rank failed first and raised the flag: that failure is the news.
    if (const int first = comm->asyncError.load(); first != ncclSuccess) {
      const std::string msg = commFirstError(comm);
      if (!msg.empty())
        return batonError((ncclResult_t)first, "%s: rank %d channel %d stopped: %s", what, f.rank, f.channel,
                          msg.c_str());
    }
    return batonError(ncclInvalidUsage, "%s: rank %d channel %d stopped: communicator aborted", what, f.rank,
                      f.channel);
  }
  // The commonest cause when the silent peer is a thread of this process: one thread drives both
  // ranks and called them one after the other outside a group, so each waits for the other.
  const bool sameProcess = f.peer >= 0 && f.peer < (int)comm->peers.size() && f.peer != f.rank &&
                           comm->peers[f.peer].pidHash == comm->peers[comm->rank].pidHash;
  const char* hint = f.result == kWaitTimeout && sameProcess
                         ? "; peer rank is in this process: if one thread drives several ranks, their calls must be "
                           "between ncclGroupStart and ncclGroupEnd, or each rank waits for the others"
                         : "";
  return batonError(code, "%s: rank %d channel %d %s waiting for %s of peer %d: expected %llu, observed %llu%s", what,
                    f.rank, f.channel, f.result == kWaitTimeout ? "timed out (BATON_WAIT_TIMEOUT)" : "failed",
                    f.what ? f.what : "?", f.peer, (unsigned long long)f.expected, (unsigned long long)f.observed,
                    hint);
}
}  // namespace

ExecCtx makeCtx(ncclComm* comm, int channel, size_t opBytes) {
  ExecCtx ctx;
  ctx.rank = comm->rank;
  ctx.channel = channel;
  ctx.abortFlag = &comm->abortFlag;
  ctx.peerPids = comm->livenessPids.data();
  if (channel >= 0 && channel < (int)comm->channels.size()) {
    const Channel& ch = *comm->channels[channel];
    if (ch.sendConn) ctx.watch[0] = &ch.sendConn->fifo->abortedBy;
    if (ch.recvConn) ctx.watch[1] = &ch.recvConn->fifo->abortedBy;
  }
  ctx.timeoutNs = comm->tun.waitTimeoutNs;
  ctx.jitter = comm->tun.jitter;
  ctx.jitterState = 0x9e3779b9u * (comm->rank + 1) + channel;
  ctx.trace = traceEnabled();
  if (comm->flight) ctx.note = comm->flight->note(channel);
  // Small operations only: on a large one the proxy thread streams while the rank copies, and a
  // rank that also drives the sockets took 20-30% longer at 64 MiB across two hosts (docs/perf.md).
  if (opBytes <= comm->tun.proxyAssistBytes && comm->proxy && comm->proxy->wantsAssist())
    ctx.assist = &Proxy::assistHook, ctx.assistArg = comm->proxy.get();
  return ctx;
}

// Runs a work item's body on a worker and reports to the completion and the communicator.
// With BATON_TRACE on, the item is one span on its channel's lane of the timeline.
namespace {
// `one`: a collective's recorder entry (tag 0: none); `batch`: a point-to-point batch's entries.
// `prof`: the launch's profiler events, of which this part runs operations [profFirst, +profN).
std::function<void()> wrapWork(ncclComm* comm, std::shared_ptr<Completion> done, std::function<ncclResult_t()> body,
                               int channel, std::string name, FlightRef one,
                               std::shared_ptr<const std::vector<FlightRef>> batch, std::shared_ptr<LaunchProfile> prof,
                               int profFirst, int profN) {
  return [comm, done, body, channel, name, one, batch, prof, profFirst, profN] {
    ncclResult_t res = ncclSuccess;
    const uint64_t t0 = traceEnabled() ? traceNowNs() : 0;
    PartEvents profEvents;
    if (prof) prof->partStart(profFirst, profN, channel, &profEvents);
    FlightRecorder* rec = comm->flight.get();
    if (rec && one.tag) rec->partStart(one, channel);
    if (rec && batch)
      for (FlightRef r : *batch) rec->partStart(r, channel);
    if (!flagIsSet(&comm->abortFlag)) res = body();
    else res = ncclInvalidUsage;
    if (rec && one.tag) rec->partEnd(one, channel, res);
    if (rec && batch)
      for (FlightRef r : *batch) rec->partEnd(r, channel, res);
    if (t0) traceComplete(comm->rank, channel, name.c_str(), "op", t0, traceNowNs());
    if (prof) prof->partEnd(profFirst, profN, &profEvents);
    if (res != ncclSuccess) commSetError(comm, res, lastError());
    comm->inflight.fetch_sub(1);
    done->done(res);
  };
}

// The one-shot's connectors cross the network: a peer on another host, or SHM and P2P switched off.
bool oneShotOverNet(const ncclComm* comm) { return comm->nNodes != 1 || comm->tun.p2pDisable || comm->tun.shmDisable; }
// 2 ranks over NET: channel 0's ring connectors, whose next and previous rank are the one peer,
// carry the one-shot (runOneShotOnRing), so it needs no connection of its own.
bool oneShotOverRing(const ncclComm* comm) { return comm->nRanks == 2 && oneShotOverNet(comm); }

// The one-shot AllReduce over the FIFOs (lesson 09) for this operation, and in which protocol
// (oneshot_allreduce.h): LL up to BATON_ONESHOT_BYTES, Simple above it up to
// BATON_ONESHOT_SIMPLE_BYTES (forced with BATON_ALLREDUCE_ALGO=oneshot: the same split, wherever a
// step holds the message). Same host, direct connectors in memory (not NET). One rank takes it too:
// its own input, pre- and post-applied, on the calling thread with no plan (the ring's path cost a
// 1-rank AllReduce 0.24 us, more than 2 ranks' one-shot). kNumProtos: not one-shot.
Proto oneShotProto(const ncclComm* comm, const Task& t, const CollShape& s) {
  const Tunables& k = comm->tun;
  if (t.func != kFuncAllReduce || s.typeBytes > 8 || (k.allreduceAlgo != kAlgoOneShot && k.allreduceAlgo != kAlgoUndef))
    return kNumProtos;
  const bool forced = k.allreduceAlgo == kAlgoOneShot;
  // A tuner plugin decides every size above LL's (NCCL_TUNER_PLUGIN, lesson 16): its choice stands.
  const bool simpleAllowed = forced || !comm->tunerPlugin;
  // Some peer over NET: one hop instead of the ring's 2(n-1) network latencies, in Simple steps
  // (the proxy sends a step once its tail is published). 2 ranks: over channel 0's ring connectors
  // (oneShotOverRing), connected at init, up to BATON_ONESHOT_NET_BYTES (kOneShotNetPairBytes when
  // unset). More ranks: over the peer connectors, only when BATON_ONESHOT_NET_BYTES is set, because
  // their first call connects every pair during the call, and a rank that never makes the call
  // then stalls its peers for BATON_BOOTSTRAP_TIMEOUT, not BATON_WAIT_TIMEOUT.
  if (oneShotOverNet(comm)) {
    const bool pair = oneShotOverRing(comm);
    const size_t limit = k.oneShotNetBytes != kOneShotNetUnset ? k.oneShotNetBytes : pair ? kOneShotNetPairBytes : 0;
    const size_t slot = pair ? k.stepBytes : k.sendrecvStepBytes;
    return simpleAllowed && s.totalBytes <= slot && (forced || s.totalBytes <= limit) ? kProtoSimple : kNumProtos;
  }
  const bool llFits = s.totalBytes <= oneShotMaxBytes(k.oneShotStepBytes);
  if (llFits && (s.totalBytes <= k.oneShotBytes || (forced && k.oneShotSimpleBytes <= k.oneShotBytes))) return kProtoLL;
  if (simpleAllowed && s.totalBytes <= k.sendrecvStepBytes && (forced || s.totalBytes <= k.oneShotSimpleBytes))
    return kProtoSimple;
  return kNumProtos;
}
bool useOneShot(const ncclComm* comm, const Task& t, const CollShape& s) {
  return oneShotProto(comm, t, s) != kNumProtos;
}

// The algorithms that run as one part over the peer connectors (naive AllReduce between ranks,
// the one-shot), not one part per channel.
bool runsAsOnePart(CollAlgo algo, const ncclComm* comm) {
  return (algo == kAlgoNaive && comm->nRanks > 1) || algo == kAlgoOneShot;
}

int channelsFor(ncclComm* comm, const Task& t, const CollShape& s) {
  if (t.func == kFuncAllReduce && comm->tun.allreduceAlgo == kAlgoNaive) return 1;
  if (useOneShot(comm, t, s)) return 1;
  return channelsForBytes(comm->nChannels, comm->tun.minChannelBytes, s.totalBytes);
}
}  // namespace

// One collective, planned: everything its channel parts need.
struct CollPlan {
  Task t;
  CollKernel kernel = nullptr;
  CollArgs base;  // what every channel's part shares
  int nch = 1;
  int depth = kSteps;
  std::string traceName;
  bool netZeroCopy = false;  // the ring's NET connectors pass spans of the registered buffers (lesson 09)
  // Symmetric kernels (lesson 09): every rank's buffers as this process reaches them, epochs by channel.
  std::vector<const void*> symSend;
  std::vector<void*> symRecv;
  std::vector<uint64_t> symEpochs;
  FlightRef flight;  // its flight recorder entry
  uint64_t seq = 0;  // its number among this communicator's collectives of its kind (NCCL's seqNumber)
  // BATON_CHECK_MODE=debug: channel 0's part stores 1 once every rank's arguments matched; the other
  // channels' parts wait for it, so a mismatch is reported by the check, not by a scrambled step.
  mutable uint64_t argsChecked = 0;
};

// Both buffers in symmetric windows every rank reaches: the symmetric kernel for this operation
// (symmetric_plan.h) and every rank's buffers in `plan`; false when they are not.
namespace {
bool planSymmetric(ncclComm* comm, const Task& t, const CollShape& s, CollPlan* plan, CollAlgo* algo) {
  SymmetricPlan sp;
  if (!planSymmetricWindows(comm, t, s, false, &sp)) return false;
  plan->symSend.resize(comm->nRanks);
  plan->symRecv.resize(comm->nRanks);
  for (int r = 0; r < comm->nRanks; ++r) {
    plan->symSend[r] = sp.sendPeers[r] + sp.sendOffset;
    plan->symRecv[r] = sp.recvPeers[r] + sp.recvOffset;
  }
  *algo = sp.algo;
  return true;
}

// The collectives the direct ring has (ring_direct.h).
bool hasDirectRing(CollFunc f) {
  return f == kFuncAllReduce || f == kFuncAllGather || f == kFuncReduceScatter || f == kFuncBroadcast ||
         f == kFuncReduce;
}

// All but AllReduce take the direct ring from BATON_SINGLE_COPY_BYTES of total size on every path
// (threads, zero copy, single copy): below it the pointer exchange that starts each operation cost
// more than the copies it saves (AllGather, 2 threads, 1-16 KiB: up to 2.6x slower).
bool directRingWorthIt(const ncclComm* comm, const Task& t, const CollShape& s) {
  return t.func == kFuncAllReduce || s.totalBytes >= comm->tun.singleCopyBytes;
}

// Every buffer `t` reads or writes on this rank is registered (ncclCommRegister or a window):
// Broadcast reads sendbuff only on the root, Reduce writes recvbuff only there.
bool opBuffersRegistered(ncclComm* comm, const Task& t, const CollShape& s) {
  if (comm->reg->empty()) return false;
  const bool root = t.root == comm->rank;
  const bool usesSend = t.func != kFuncBroadcast || root, usesRecv = t.func != kFuncReduce || root;
  return (!usesSend || comm->reg->covers(t.sendbuff, s.sendBytes)) &&
         (!usesRecv || comm->reg->covers(t.recvbuff, s.recvBytes));
}

// NET zero copy for a ring collective (lesson 09): its registered buffers go to and from the
// ring's NET connections without the staging copies on Simple steps (NCCL registers them with the
// ring's NET connections likewise: ncclRegisterCollBuffers, src/register/coll_reg.cc).
bool netZeroCopyRing(ncclComm* comm, const Task& t, const CollShape& s, int nch) {
  if (!comm->tun.netZeroCopy || !opBuffersRegistered(comm, t, s)) return false;
  for (int c = 0; c < nch; ++c) {
    const Channel& ch = *comm->channels[c];
    if ((ch.sendConn && ch.sendConn->viaNet) || (ch.recvConn && ch.recvConn->viaNet)) return true;
  }
  return false;
}

// Registered buffers between processes of this host (lesson 09): the direct ring can read and
// write peers' ncclMemAlloc memory. True when this operation may use it. Not with NCCL_SHM_DISABLE:
// the ring's neighbours then talk through NET's two staging FIFOs, which do not share the words
// (ConnFifo::directTag) the direct ring exchanges its pointers in.
bool zeroCopyBetweenProcesses(ncclComm* comm, const Task& t, const CollShape& s) {
  if (comm->reg->empty() || comm->allInProcess || !comm->tun.direct || comm->tun.shmDisable || !hasDirectRing(t.func) ||
      comm->nRanks < 2)
    return false;
  for (int r = 0; r < comm->nRanks; ++r)
    if (r != comm->rank && !comm->livenessPids[r] && comm->peers[r].pidHash != comm->peers[comm->rank].pidHash)
      return false;  // another host: no load/store path to it
  return directRingWorthIt(comm, t, s) && opBuffersRegistered(comm, t, s);
}

// Plain buffers between processes of this host (lesson 09): the direct ring with single copies
// (cross-memory attach), when every peer allows them and the operation is large enough to repay
// the system calls of each slice (its whole size: AllGather's and ReduceScatter's is every rank's
// part). By default not with more local ranks than cores: 3 and 4 processes on 2 cores measured
// 0.6-1.0x the FIFO. Every rank decides alike (no local facts enter).
// ReduceScatter and Reduce only when forced (BATON_SINGLE_COPY=1): 2 processes measured 0.5-1.9x
// the FIFO's LL128 for ReduceScatter at 64 KiB-64 MiB, no steady win (each byte it reads crosses
// the kernel's copy, and it has no second copy to save as AllGather and Broadcast have).
// AllReduce by default only where the processes' caches are far apart (src/topo/cache_distance.h):
// between near caches the FIFO measured 1.6-2x faster.
bool singleCopyBetweenProcesses(ncclComm* comm, const Task& t, const CollShape& s) {
  const bool readsPeers = t.func == kFuncReduceScatter || t.func == kFuncReduce;
  const bool near = t.func == kFuncAllReduce && !comm->cachesFar && comm->tun.singleCopy != 1;
  return comm->singleCopyAll && (comm->tun.singleCopy == 1 || !comm->oversubscribed) && !near && comm->tun.direct &&
         !comm->tun.shmDisable &&  // as above: NET's FIFOs do not carry the pointer exchange
         hasDirectRing(t.func) && (!readsPeers || comm->tun.singleCopy == 1) &&
         s.totalBytes >= comm->tun.singleCopyBytes;
}

// The flight recorder's entry of a planned collective (lesson 14); `parts`: the work items it runs as.
// One more collective of `func` launched (NCCL's RAS reports these counts per rank): written by the
// launching thread alone, so a load and a store, not a locked add.
void countCollLaunched(ncclComm* comm, CollFunc func) {
  std::atomic<uint64_t>& launched = comm->collCounts[func];
  launched.store(launched.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

FlightRef recordColl(ncclComm* comm, const Task& t, uint64_t seq, CollAlgo algo, Proto proto, int nch, int parts,
                     FlightBuffers buffers, bool timed = true) {
  countCollLaunched(comm, t.func);
  if (!comm->flight) return {};
  FlightOp op;
  op.seq = seq, op.count = t.count, op.kind = kFlightColl, op.func = (uint8_t)t.func, op.type = (uint8_t)t.type;
  op.redop = (uint8_t)t.op.kind, op.algo = (uint8_t)algo, op.proto = (uint8_t)proto, op.channels = (uint8_t)nch;
  op.buffers = (uint8_t)buffers, op.root = t.root;
  return comm->flight->record(op, parts, timed);
}

// The recorder's entry of one send, receive or AlltoAll (comm->flight set), numbered in p2pCount.
FlightRef recordP2p(ncclComm* comm, const Task& t, bool timed) {
  FlightOp op;
  op.seq = comm->p2pCount++, op.count = t.count, op.type = (uint8_t)t.type, op.peer = t.peer;
  op.kind = t.kind == Task::kSend ? kFlightSend : t.kind == Task::kRecv ? kFlightRecv : kFlightAlltoAll;
  op.channels = 1;
  op.buffers = p2pBuffersRegistered(comm, t) ? kFlightRegistered : kFlightPlain;
  return comm->flight->record(op, 1, timed);
}

// The COLL INFO line of one numbered collective (NCCL's shape, and the path it took).
void logColl(const ncclComm* comm, const Task& t, uint64_t opCount, CollAlgo algo, Proto proto, int nch,
             const char* path, const char* tunedBy = "") {
  BATON_INFO(kSubColl,
             "%s: opCount %llx sendbuff %p recvbuff %p count %zu datatype %s op %s root %d comm %p [nranks=%d] "
             "algorithm %s protocol %s channels %d%s%s",
             funcName(t.func), (unsigned long long)opCount, t.sendbuff, t.recvbuff, t.count, typeName(t.type),
             opName(t.op.kind), t.root, (void*)comm, comm->nRanks, algoName(algo), protoName(proto), nch, path,
             tunedBy);
}

// Chooses algorithm, protocol and channels for `t` and numbers it. *skip: nothing to run (count 0).
ncclResult_t planColl(ncclComm* comm, const Task& t, CollPlan* plan, bool* skip) {
  const CollShape shape = collShapeOf(t, comm->nRanks);
  const size_t totalBytes = shape.totalBytes;
  int nch = channelsFor(comm, t, shape);
  AlgoProtoChoice choice;
  const Proto oneShot = oneShotProto(comm, t, shape);
  const char* tunedBy = "";
  CollAlgo symAlgo;
  const bool zeroCopy = zeroCopyBetweenProcesses(comm, t, shape);
  const bool singleCopy = singleCopyBetweenProcesses(comm, t, shape);
  if (t.func == kFuncAllReduce && comm->tun.allreduceAlgo == kAlgoNaive) choice = {kAlgoNaive, kProtoSimple, 0.0};
  // The smallest AllReduces take the LL one-shot even on windows (NCCL's AGxLL does the same: one
  // hop with the data, instead of the load kernels' two barriers).
  else if (oneShot == kProtoLL) choice = {kAlgoOneShot, kProtoLL, 0.0};
  else if (planSymmetric(comm, t, shape, plan, &symAlgo)) choice = {symAlgo, kProtoSimple, 0.0};
  else if (oneShot == kProtoSimple) choice = {kAlgoOneShot, kProtoSimple, 0.0};  // windows keep their own
  else {
    const int path = tuningPathOf(comm, zeroCopy || singleCopy);
    ncclComm::TunedChoice& last = comm->lastTuned[t.func];
    if (last.path == path && last.bytes == totalBytes) {
      choice = last.choice;
    } else {
      BATON_CHECK(chooseAlgoProto(comm->tun.model, path, comm->tun.mask, t.func, comm->nRanks, comm->nNodes, totalBytes,
                                  &choice));
      last = {path, totalBytes, choice};
    }
    if (comm->tunerPlugin) {  // NCCL_TUNER_PLUGIN (lesson 16): the plugin sees the table and may rewrite it
      const bool reg = zeroCopy || opBuffersRegistered(comm, t, shape);
      const TunerPlugin::Verdict v =
          comm->tunerPlugin->revise(comm->tun.model, path, comm->tun.mask, t.func, comm->nRanks, comm->nNodes,
                                    totalBytes, reg, true, comm->nChannels, &choice, &nch);
      tunedBy = v.tableChanged || v.channels > 0 ? " tuner plugin" : "";
    }
  }
  const uint64_t opCount = comm->opCount++;
  const bool direct = (comm->allInProcess || zeroCopy || singleCopy) && comm->tun.direct && hasDirectRing(t.func) &&
                      directRingWorthIt(comm, t, shape) && choice.proto == kProtoSimple && choice.algo == kAlgoRing;
  const bool netZeroCopy = !direct && choice.algo == kAlgoRing && choice.proto == kProtoSimple && comm->nRanks > 1 &&
                           netZeroCopyRing(comm, t, shape, nch);
  const char* path = netZeroCopy          ? " NET zero copy"
                     : !direct            ? ""
                     : comm->allInProcess ? " direct"
                     : singleCopy         ? " direct (single copy)"
                                          : " direct (zero copy)";
  logColl(comm, t, opCount, choice.algo, choice.proto, nch, path, tunedBy);
  // An empty collective runs no part, or one that only takes part in the argument check.
  const int parts = t.count == 0 ? 1 : runsAsOnePart(choice.algo, comm) ? 1 : nch;
  const FlightBuffers buffers = isSymmetric(choice.algo)                            ? kFlightWindow
                                : (zeroCopy || opBuffersRegistered(comm, t, shape)) ? kFlightRegistered
                                                                                    : kFlightPlain;
  plan->flight = recordColl(comm, t, opCount, choice.algo, choice.proto, nch, parts, buffers);
  plan->seq = comm->collCounts[t.func].load(std::memory_order_relaxed) - 1;  // recordColl counted it
  *skip = t.count == 0 && !comm->tun.checkArgs;
  if (*skip) {
    if (comm->flight) comm->flight->oneShotEnd(plan->flight, ncclSuccess);
    return ncclSuccess;
  }
  if (t.count == 0) {
    // BATON_CHECK_MODE=debug: an empty collective still joins the argument check, so a rank that
    // passes count 0 where the others pass data is named, not waited for; it moves nothing.
    plan->t = t;
    plan->nch = 1;
    plan->base.opTag = opCount + 1;
    return ncclSuccess;
  }
  plan->t = t;
  plan->nch = nch;
  plan->netZeroCopy = netZeroCopy;
  plan->kernel = collKernel(t.func, t.type, t.op.kind);
  if (!plan->kernel)
    return batonError(ncclInternalError, "no kernel for %s/%s/%s", funcName(t.func), typeName(t.type),
                      opName(t.op.kind));
  if (traceEnabled())
    plan->traceName = std::string(funcName(t.func)) + " " + std::to_string(totalBytes) + " B " + algoName(choice.algo) +
                      "/" + protoName(choice.proto);
  const CollOp op{t.func, t.sendbuff, t.recvbuff, t.count, shape.typeBytes, t.root};
  CollArgs& b = plan->base;
  b = collArgsFor(op, choice.algo, choice.proto, comm->rank, comm->nRanks, nch, comm->tun.chunkSteps);
  b.direct = direct;
  if (b.direct && (zeroCopy || singleCopy)) {
    // Peers map our buffers if they come from ncclMemAlloc; a plain one goes by single copies
    // where allowed, else by value.
    b.peerMap = comm->peerAddressMap;
    b.sendAlloc = comm->reg->allocationOf(t.sendbuff, shape.sendBytes);
    b.recvAlloc = comm->reg->allocationOf(t.recvbuff, shape.recvBytes);
    if (singleCopy) b.peerCopy = &comm->peerCopy;
  }
  if (isSymmetric(choice.algo)) {
    b.sym.peerSend = plan->symSend.data();
    b.sym.peerRecv = plan->symRecv.data();
    b.sym.pads = symmetricPads(comm);
    plan->symEpochs.resize(nch);
    for (int c = 0; c < nch; ++c) plan->symEpochs[c] = nextSymmetricEpoch(comm, c);
  }
  b.opTag = opCount + 1;
  b.streamStores = comm->tun.streamStores;
  plan->depth = planFifoDepth(t.func, comm->tun.fifoDepth, comm->tun.chunkSteps);
  return ncclSuccess;
}

ncclResult_t launchPlans(ncclComm* comm, std::vector<CollPlan> plans, std::vector<Task> p2p,
                         std::shared_ptr<Completion>* out, bool callerRuns);

bool isNaive(const CollPlan& p, const ncclComm* comm) { return p.base.algo == kAlgoNaive && comm->nRanks > 1; }
bool usesPeerConnectors(const CollPlan& p, const ncclComm* comm) { return runsAsOnePart(p.base.algo, comm); }

// The one-shot kernel with channel 0's ring connectors standing in for the peer's (oneShotOverRing).
// It reads peerSend[peer] and peerRecv[peer] only; the steps it takes go back to the channel, whose
// ring parts run in order with this one (channel 0's block).
void runOneShotOnRing(ncclComm* comm, CollKernel kernel, CollArgs& a, ExecCtx& ctx, const OpParams& op) {
  Channel& ch = *comm->channels[0];
  const int peer = 1 - comm->rank;
  ConnDev send[2], recv[2];
  send[peer] = ch.ringSend, recv[peer] = ch.ringRecv;
  send[peer].netDirect = recv[peer].netDirect = false;  // through the staging slots, not spans
  ConnDev *keepSend = a.peerSend, *keepRecv = a.peerRecv;
  a.peerSend = send, a.peerRecv = recv;
  kernel(ctx, a, op);
  ch.ringSend.step = send[peer].step, ch.ringSend.headSeen = send[peer].headSeen;  // all the kernel moves
  ch.ringRecv.step = recv[peer].step;
  a.peerSend = keepSend, a.peerRecv = keepRecv;
}

// Channel c's part of a planned collective, on whichever thread plays that channel's block.
ncclResult_t runPart(ncclComm* comm, const CollPlan& p, int c) {
  if (comm->tun.checkArgs) {  // BATON_CHECK_MODE=debug (lesson 14)
    if (c == 0) {
      ExecCtx ctx = makeCtx(comm, 0);
      BATON_CHECK(checkCollArgs(comm, p.t, p.base.opTag - 1, ctx));
      if (ctx.failed) {
        const std::string what = std::string(funcName(p.t.func)) + "'s argument check (BATON_CHECK_MODE=debug)";
        return failureResult(ctx, comm, what.c_str());
      }
      storeRelease(&p.argsChecked, 1);
      if (p.t.count == 0) return ncclSuccess;  // checked: nothing to move
    } else {
      ExecCtx ctx = makeCtx(comm, c);
      if (!waitAtLeast(ctx, &p.argsChecked, 1, comm->rank, "the argument check on channel 0"))
        return failureResult(ctx, comm, funcName(p.t.func));
    }
  }
  CollArgs a = p.base;
  if (p.base.algo == kAlgoOneShot && oneShotOverRing(comm)) {
    ExecCtx ctx = makeCtx(comm, 0, p.t.count * typeSize(p.t.type));
    runOneShotOnRing(comm, p.kernel, a, ctx, p.t.op);
    return ctx.failed ? failureResult(ctx, comm, funcName(p.t.func)) : ncclSuccess;
  }
  if (usesPeerConnectors(p, comm)) {
    const bool everyone = p.base.algo == kAlgoOneShot;  // naive: rank 0 and the others
    if (!everyone || !comm->allPeersConnected) {        // the 8-byte latency path allocates nothing
      std::vector<int> peers;
      for (int r = 0; r < comm->nRanks; ++r)
        if (r != comm->rank && (everyone || comm->rank == 0 || r == 0)) peers.push_back(r);
      BATON_CHECK(connectPeers(comm, peers, peers));
      if (everyone) comm->allPeersConnected = true;
    }
    a.peerSend = comm->peerSend.data();
    a.peerRecv = comm->peerRecv.data();
  } else if (p.base.algo == kAlgoTree) {
    Channel& ch = *comm->channels[c];
    TreeConns& tc = ch.tree;
    if (!tc.connected) BATON_CHECK(connectTree(comm, ch));
    a.channel = c;
    a.tree.up = tc.up;
    a.tree.nDown = tc.nDown;
    if (tc.up >= 0) {
      tc.upSend.depth = p.depth;
      a.tree.upSend = &tc.upSend;
      a.tree.downRecv = &tc.downRecv;
    }
    for (int d = 0; d < tc.nDown; ++d) {
      tc.downSend[d].depth = p.depth;
      a.tree.down[d] = tc.down[d];
      a.tree.upRecv[d] = &tc.upRecv[d];
      a.tree.downSend[d] = &tc.downSend[d];
    }
  } else if (isSymmetric(p.base.algo)) {
    a.channel = c;
    a.sym.epoch = p.symEpochs[c];
  } else {
    Channel& ch = *comm->channels[c];
    a.channel = c;
    a.ring.index = ch.ringIndex;
    a.ring.userRanks = ch.ringUserRanks.data();
    a.ring.send = &ch.ringSend;
    a.ring.recv = &ch.ringRecv;
    ch.ringSend.depth = p.depth;  // the worker runs parts in order, so these hold for this part
    ch.ringSend.netDirect = p.netZeroCopy && ch.sendConn && ch.sendConn->viaNet;
    ch.ringRecv.netDirect = p.netZeroCopy && ch.recvConn && ch.recvConn->viaNet;
  }
  ExecCtx ctx = makeCtx(comm, c, p.t.count * typeSize(p.t.type));
  p.kernel(ctx, a, p.t.op);
  return ctx.failed ? failureResult(ctx, comm, isNaive(p, comm) ? "AllReduce(naive)" : funcName(p.t.func))
                    : ncclSuccess;
}

// The 8-byte path (lesson 09): a one-shot AllReduce whose peer connectors exist is planned from
// the call alone (registrations and windows do not change that choice), so it skips the plan, its
// copies and its run-time dispatch: the arguments, the kernel, this thread. False: not this case.
bool runOneShotNow(ncclComm* comm, const Task& t, ncclResult_t* res) {
  if (t.func != kFuncAllReduce || !(comm->allPeersConnected || oneShotOverRing(comm)) || t.count == 0 ||
      comm->tun.allreduceAlgo == kAlgoNaive || comm->tun.checkArgs)
    return false;
  const size_t typeBytes = typeSize(t.type);
  const CollKernel kernel = collKernel(t.func, t.type, t.op.kind);
  CollShape shape;  // an AllReduce's: every byte count is count x type (collShapeOf, without its switch)
  shape.typeBytes = typeBytes, shape.totalBytes = shape.sendBytes = shape.recvBytes = t.count * typeBytes;
  const Proto proto = kernel ? oneShotProto(comm, t, shape) : kNumProtos;  // planColl reports a missing kernel
  // Symmetric windows take over above LL's sizes (planColl): where they may, plan the call.
  if (proto == kNumProtos || (proto == kProtoSimple && symmetricEligible(comm))) return false;
  const uint64_t opCount = comm->opCount++;
  logColl(comm, t, opCount, kAlgoOneShot, proto, 1, "");
  const FlightBuffers buffers =
      comm->reg->empty() || !comm->reg->covers(t.sendbuff, shape.sendBytes) ? kFlightPlain : kFlightRegistered;
  const FlightRef flight = recordColl(comm, t, opCount, kAlgoOneShot, proto, 1, 1, buffers, /*timed=*/false);
  // Built on the first call, then only the call's fields change: zeroing and copying the whole
  // argument block cost more than the rest of the planning.
  CollArgs& a = comm->oneShotArgs;
  if (!a.peerSend) {
    a = collArgsFor(CollOp{t.func, nullptr, nullptr, 0, typeBytes, 0}, kAlgoOneShot, kProtoLL, comm->rank, comm->nRanks,
                    1, comm->tun.chunkSteps);
    a.streamStores = comm->tun.streamStores;
    a.peerSend = comm->peerSend.data();
    a.peerRecv = comm->peerRecv.data();
  }
  a.proto = proto;
  a.sendbuff = t.sendbuff;
  a.recvbuff = t.recvbuff;
  a.count = t.count;  // AllReduce counts elements (collArgsFor)
  a.opTag = opCount + 1;
  comm->inflight.fetch_add(1);  // as runCollectiveNow's: an abort from another thread waits for us
  ExecCtx ctx = makeCtx(comm, 0, shape.totalBytes);
  if (oneShotOverRing(comm)) runOneShotOnRing(comm, kernel, a, ctx, t.op);
  else kernel(ctx, a, t.op);
  *res = ctx.failed ? failureResult(ctx, comm, funcName(t.func)) : ncclSuccess;
  if (comm->flight) comm->flight->quickEnd(flight, *res);
  if (*res != ncclSuccess) commSetError(comm, *res, lastError());
  comm->inflight.fetch_sub(1);
  return true;
}
}  // namespace

ncclResult_t runCollectiveNow(ncclComm* comm, const Task& t, bool* handled) {
  *handled = false;
  // The latency path, without allocations: one collective on an idle blocking communicator that
  // needs one channel runs right here, on the calling thread (as channel 0's block).
  if (!comm->blocking || t.kind != Task::kColl || comm->inflight.load() != 0 || traceEnabled() ||
      (comm->profiler && comm->profiler->wantsAny()))  // the general path, where every event has its place
    return ncclSuccess;
  if (flagIsSet(&comm->abortFlag)) return ncclSuccess;  // the general path reports it
  *handled = true;
  ncclResult_t res;
  if (runOneShotNow(comm, t, &res)) return res;
  CollPlan plan;
  bool skip = false;
  BATON_CHECK(planColl(comm, t, &plan, &skip));
  if (skip) return ncclSuccess;
  if (plan.nch == 1) {
    // Counted in flight like a worker's part, so an ncclCommAbort from another thread waits for
    // this thread to leave the communicator before freeing it.
    comm->inflight.fetch_add(1);
    comm->proxy->kick();
    if (comm->flight) comm->flight->partStart(plan.flight, 0);
    res = runPart(comm, plan, 0);
    if (comm->flight) comm->flight->partEnd(plan.flight, 0, res);
    if (res != ncclSuccess) commSetError(comm, res, lastError());
    comm->inflight.fetch_sub(1);
    return res;
  }
  std::shared_ptr<Completion> done;
  std::vector<CollPlan> plans;
  plans.push_back(std::move(plan));
  BATON_CHECK(launchPlans(comm, std::move(plans), {}, &done, true));
  return done ? done->wait() : ncclSuccess;
}

// The latency path of a lone ncclSend or ncclRecv (issue 45): as runCollectiveNow's, on the
// calling thread, with no group, plan or allocation. Taken when the connector to the peer exists
// (the first transfer to a peer connects it on the general path) and the proxy's zero copy cannot
// apply (a registered buffer over NET); tracing and profiling keep the general path, where their
// events have their places.
ncclResult_t runSendRecvNow(ncclComm* comm, const Task& t, bool* handled) {
  *handled = false;
  const bool send = t.kind == Task::kSend;
  const size_t bytes = t.count * typeSize(t.type);
  if (!comm->blocking || t.onDevice || bytes == 0 || t.peer == comm->rank || comm->inflight.load() != 0 ||
      traceEnabled() || (comm->profiler && comm->profiler->wantsAny()) || flagIsSet(&comm->abortFlag))
    return ncclSuccess;
  const Connection* conn = send ? comm->peerSendConn[t.peer].get() : comm->peerRecvConn[t.peer].get();
  if (!conn || (conn->viaNet && !comm->reg->empty())) return ncclSuccess;
  *handled = true;
  BATON_INFO(kSubP2p, "%s: count %zu datatype %s peer %d comm %p [nranks=%d] on the calling thread",
             send ? "Send" : "Recv", t.count, typeName(t.type), t.peer, (void*)comm, comm->nRanks);
  const FlightRef flight = comm->flight ? recordP2p(comm, t, /*timed=*/false) : FlightRef{};
  comm->inflight.fetch_add(1);  // an abort from another thread waits for us
  if (conn->viaNet) comm->proxy->kick();
  ExecCtx ctx = makeCtx(comm, 0, bytes);
  SendRecvTransfer x;
  x.buf = send ? const_cast<char*>(static_cast<const char*>(t.sendbuff)) : static_cast<char*>(t.recvbuff);
  x.bytes = bytes, x.peer = t.peer, x.isSend = send;
  x.conn = send ? &comm->peerSend[t.peer] : &comm->peerRecv[t.peer];
  const int after = -1;
  sendRecvRunAll(ctx, &x, &after, 1);
  const ncclResult_t res = ctx.failed ? failureResult(ctx, comm, "Send/Recv") : ncclSuccess;
  if (comm->flight) comm->flight->quickEnd(flight, res);
  if (res != ncclSuccess) commSetError(comm, res, lastError());
  comm->inflight.fetch_sub(1);
  return res;
}

ncclResult_t runTasksNow(ncclComm* comm, std::vector<Task> tasks) {
  std::shared_ptr<Completion> done;
  BATON_CHECK(launchTasks(comm, tasks, &done, /*callerRuns=*/true));
  return done ? done->wait() : ncclSuccess;
}

ncclResult_t launchTasks(ncclComm* comm, std::vector<Task>& tasks, std::shared_ptr<Completion>* out, bool callerRuns) {
  std::vector<CollPlan> plans;
  std::vector<Task> p2p, deviceP2p, deviceAlltoAll;
  for (const Task& t : tasks) {
    if (t.onDevice && t.kind == Task::kAlltoAll) {  // by stores into windows, or as steps (gpu_alltoall.cc)
      deviceAlltoAll.push_back(t);
      continue;
    }
    if (t.onDevice && t.kind != Task::kColl) {
      deviceP2p.push_back(t);
      continue;
    }
    if (t.onDevice) {  // the CUDA backend: enqueued on its stream, in call order
      // Counted for RAS, but not in the flight recorder: its kernels end on the device.
      countCollLaunched(comm, t.func);
      BATON_CHECK(comm->gpu->launch(comm, t));
      continue;
    }
    if (t.kind != Task::kColl) {
      p2p.push_back(t);
      continue;
    }
    CollPlan plan;
    bool skip = false;
    BATON_CHECK(planColl(comm, t, &plan, &skip));
    if (!skip) plans.push_back(std::move(plan));
  }
  // A group's device AlltoAlls by stores, then its sends and receives as one kernel, after its
  // device collectives on every rank, as the CPU runs a group's point-to-point work after its
  // collectives: so the order of a group's calls of different kinds may differ between ranks.
  for (const Task& t : deviceAlltoAll) BATON_CHECK(comm->gpu->launchAlltoAll(comm, t));
  if (!deviceP2p.empty()) BATON_CHECK(comm->gpu->launchSendRecv(comm, deviceP2p));
  // Channel 0 runs the point-to-point batch after this launch's collectives, so its AlltoAlls by
  // stores take their epochs after those the collectives took.
  for (Task& t : p2p)
    if (t.kind == Task::kAlltoAll && t.alltoallAlgo == kAlltoAllWindow) t.symEpoch = nextSymmetricEpoch(comm, 0);
  return launchPlans(comm, std::move(plans), std::move(p2p), out, callerRuns);
}

namespace {
// Whether a send's or receive's buffer is registered (the recorder's buffer kind); for an
// AlltoAll, whether its input and output start in registered memory (its blocks' layout varies).
bool p2pBuffersRegistered(ncclComm* comm, const Task& t) {
  if (comm->reg->empty()) return false;
  const size_t bytes = t.count * typeSize(t.type);
  if (t.kind == Task::kSend) return comm->reg->covers(t.sendbuff, bytes);
  if (t.kind == Task::kRecv) return comm->reg->covers(t.recvbuff, bytes);
  return comm->reg->covers(t.sendbuff, 1) && comm->reg->covers(t.recvbuff, 1);
}

ncclResult_t launchPlans(ncclComm* comm, std::vector<CollPlan> plansIn, std::vector<Task> p2p,
                         std::shared_ptr<Completion>* out, bool callerRuns) {
  // Parts may run after this returns (non-blocking communicators): they share the plans.
  auto plans = std::make_shared<const std::vector<CollPlan>>(std::move(plansIn));
  struct Part {
    int channel;
    std::function<ncclResult_t()> body;
    std::string name;  // for the trace
    FlightRef flight;  // the recorder's entry of the collective it runs (tag 0: none)
    std::shared_ptr<const std::vector<FlightRef>> batch;  // or of the send/recv batch
    int profFirst = 0, profN = 0;                         // its operations' profiler events
  };
  std::shared_ptr<LaunchProfile> prof = comm->profiler ? LaunchProfile::begin(comm) : nullptr;
  void* groupApi = nullptr;  // the KernelLaunch event's parent
  std::vector<Part> parts;
  for (size_t i = 0; i < plans->size(); ++i) {
    const CollPlan& p = (*plans)[i];
    const int nParts = usesPeerConnectors(p, comm) ? 1 : p.nch;
    int op = 0;
    if (prof) {
      const bool ringConns = p.base.algo == kAlgoRing || (p.base.algo == kAlgoOneShot && oneShotOverRing(comm));
      const LaunchProfile::ProxyConns conns = ringConns                     ? LaunchProfile::kRingConns
                                              : usesPeerConnectors(p, comm) ? LaunchProfile::kNoProxyConns
                                              : p.base.algo == kAlgoTree    ? LaunchProfile::kTreeConns
                                                                            : LaunchProfile::kNoProxyConns;
      op = prof->addColl(p.t, p.seq, algoName(p.base.algo), protoName(p.base.proto), p.nch, nParts, conns);
      groupApi = groupApi ? groupApi : p.t.profGroupApi;
    }
    for (int c = 0; c < nParts; ++c)
      parts.push_back({c,
                       [comm, plans, i, c] { return runPart(comm, (*plans)[i], c); },
                       p.traceName,
                       p.flight,
                       {},
                       op,
                       prof ? 1 : 0});
  }
  if (!p2p.empty()) {
    int first = 0;
    if (prof) {
      first = prof->addP2p(p2p[0]);
      for (size_t i = 1; i < p2p.size(); ++i) prof->addP2p(p2p[i]);
      groupApi = groupApi ? groupApi : p2p[0].profGroupApi;
    }
    auto refs = std::make_shared<std::vector<FlightRef>>();
    if (comm->flight)
      for (const Task& t : p2p) refs->push_back(recordP2p(comm, t, /*timed=*/true));
    parts.push_back({0,
                     [comm, p2p] {
                       size_t most = 0;
                       // A round-based AlltoAll counts 0 (its rounds always get the proxy's
                       // assist); the fused wire-format exchange counts the bytes it sends.
                       for (const Task& t : p2p) most = std::max(most, t.count * typeSize(t.type));
                       ExecCtx ctx = makeCtx(comm, 0, most);
                       ncclResult_t res = runPointToPoint(comm, p2p, ctx);
                       if (res == ncclSuccess && ctx.failed) res = failureResult(ctx, comm, "Send/Recv");
                       return res;
                     },
                     "Send/Recv batch", FlightRef{}, std::move(refs), first, prof ? (int)p2p.size() : 0});
  }
  if (parts.empty()) return ncclSuccess;
  auto done = std::make_shared<Completion>((int)parts.size());
  // The latency path: a small collective on a blocking communicator costs a flag hand-off per
  // step, not two thread wake-ups (worker, then caller). When nothing of this communicator is in
  // flight, channel 0's worker is idle, so running its parts here keeps the per-channel order.
  const bool inlineCh0 = callerRuns && comm->inflight.load() == 0;
  comm->inflight.fetch_add((int)parts.size());
  comm->proxy->kick();                                      // NET connections move only while their proxy is awake
  if (prof) comm->proxy->partsAppended((int)parts.size());  // its ProxyCtrl Append events
  std::vector<std::function<void()>> mine;
  if (prof) prof->launchStart(groupApi);
  for (Part& p : parts) {
    std::function<void()> work = wrapWork(comm, done, std::move(p.body), p.channel, std::move(p.name), p.flight,
                                          std::move(p.batch), prof, p.profFirst, p.profN);
    if (inlineCh0 && p.channel == 0) mine.push_back(std::move(work));
    else comm->channels[p.channel]->worker.submit(std::move(work));
  }
  if (prof) prof->launchEnd();
  for (auto& work : mine) work();
  *out = done;
  return ncclSuccess;
}
}  // namespace

}  // namespace baton

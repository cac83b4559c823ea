// BATON_CHECK_MODE=debug's argument exchange (coll_arg_check.h).
#include "coll_arg_check.h"

#include <cstring>
#include <string>
#include <vector>

#include "comm.h"
#include "cpu_kernels/coll_kernel.h"
#include "enqueue.h"
#include "misc/debug.h"

namespace baton {

namespace {
// One rank's view of an operation, as it travels (32 bytes, the same layout on every rank).
struct ArgRecord {
  uint64_t seq;
  uint64_t count;
  int32_t func, type, redop, root;
};
static_assert(sizeof(ArgRecord) == 32, "one record per rank, 32 bytes");

ArgRecord recordOf(const Task& t, uint64_t seq) {
  ArgRecord r;
  std::memset(&r, 0, sizeof r);
  r.seq = seq, r.count = t.count, r.func = t.func, r.type = t.type, r.redop = t.op.kind;
  // Only the rooted collectives' root means anything; the others' is whatever the caller left.
  r.root = t.func == kFuncBroadcast || t.func == kFuncReduce ? t.root : -1;
  return r;
}

// The first field where a and b differ, both values in words ("" if none).
std::string difference(const ArgRecord& a, const ArgRecord& b) {
  char s[160];
  if (a.seq != b.seq)
    snprintf(s, sizeof s, "operation number %llu against %llu", (unsigned long long)a.seq, (unsigned long long)b.seq);
  else if (a.func != b.func) snprintf(s, sizeof s, "collective %s against %s", funcName(a.func), funcName(b.func));
  else if (a.count != b.count)
    snprintf(s, sizeof s, "count %llu against %llu", (unsigned long long)a.count, (unsigned long long)b.count);
  else if (a.type != b.type)
    snprintf(s, sizeof s, "datatype %s against %s", typeName((ncclDataType_t)a.type), typeName((ncclDataType_t)b.type));
  else if (a.redop != b.redop)
    snprintf(s, sizeof s, "operator %s against %s", opName((RedOpKind)a.redop), opName((RedOpKind)b.redop));
  else if (a.root != b.root) snprintf(s, sizeof s, "root %d against %d", a.root, b.root);
  else return "";
  return s;
}
}  // namespace

ncclResult_t checkCollArgs(ncclComm* comm, const Task& t, uint64_t seq, ExecCtx& ctx) {
  const int n = comm->nRanks;
  if (n < 2) return ncclSuccess;
  const ArgRecord mine = recordOf(t, seq);
  std::vector<ArgRecord> all(n);
  // An AllGather of bytes with LL on channel 0's ring: the smallest steps, no size threshold.
  const CollOp op{kFuncAllGather, &mine, all.data(), sizeof(ArgRecord), 1, 0};
  CollArgs a = collArgsFor(op, kAlgoRing, kProtoLL, comm->rank, n, 1, comm->tun.chunkSteps);
  Channel& ch = *comm->channels[0];
  a.channel = 0;
  a.ring.index = ch.ringIndex;
  a.ring.userRanks = ch.ringUserRanks.data();
  a.ring.send = &ch.ringSend;
  a.ring.recv = &ch.ringRecv;
  ch.ringSend.depth = planFifoDepth(kFuncAllGather, comm->tun.fifoDepth, comm->tun.chunkSteps);
  ch.ringSend.netDirect = ch.ringRecv.netDirect = false;
  const CollKernel kernel = collKernel(kFuncAllGather, ncclUint8, kOpSum);
  if (!kernel) return batonError(ncclInternalError, "BATON_CHECK_MODE=debug: no AllGather kernel for bytes");
  // The next rank may find a difference and stop before this rank has received every record (they
  // come from the previous rank, which drains into this one before it stops): its stop must not
  // end this rank's receives. A next rank that dies is still caught (abort flag, wait timeout).
  const uint64_t* nextStop = ctx.watch[0];
  ctx.watch[0] = nullptr;
  kernel(ctx, a, OpParams{});
  ctx.watch[0] = nextStop;
  if (ctx.failed) return ncclSuccess;  // the caller names the wait, as for any other
  const char* fn = funcName(t.func);
  for (int r = 0; r < n; ++r) {
    const std::string d = difference(all[r], mine);
    if (d.empty()) continue;
    // Failing announces it to the ring neighbours, whose waits then stop: first let the next rank
    // read every record this rank sent, so that each rank completes the exchange and names the
    // difference itself (by induction round the ring), rather than one stopping halfway.
    ExecCtx drain = makeCtx(comm, 0);
    drain.watch[0] = drain.watch[1] = nullptr;  // a neighbour that failed first stops nothing here
    if (ch.ringSend.fifo)
      waitAtLeast(drain, &ch.ringSend.fifo->head, ch.ringSend.step, ch.ringSend.peer, "the next rank's reads");
    return batonError(ncclInvalidUsage,
                      "%s #%llu: rank %d's arguments differ from this rank's (rank %d): %s (BATON_CHECK_MODE=debug)",
                      fn, (unsigned long long)seq, r, comm->rank, d.c_str());
  }
  return ncclSuccess;
}

}  // namespace baton

// baton's own profiler, as an NCCL profiler plugin (libnccl-profiler-baton.so, ncclProfiler_v5):
// it answers "where did the time go" for any library that drives NCCL's profiler interface, baton
// or NVIDIA's NCCL. Lesson 13 (docs/lessons/13-profiling.md).
//
// For each communicator and rank it writes two files into BATON_PROFILE_DIR (default: the current
// directory) when the communicator is destroyed:
//   <commId>.rank<R>.json   a Chrome / Perfetto trace (baton's timeline, src/misc/trace.h, valid
//                           JSON): the collectives on one lane, each channel's parts and its NET
//                           send steps on two more. With BATON_TRACE set, these spans go into that
//                           file instead, beside the library's own (one timeline, one writer), and
//                           the summaries below only where BATON_PROFILE_DIR is set
//   <commId>.rank<R>.jsonl  one JSON object per completed collective, in the spirit of NCCL's
//                           Inspector: communicator, seq, collective, bytes, algorithm, protocol,
//                           channels, time, algbw, busbw, the channels' time (channel_us), the
//                           part of it with a NET send step in flight (net_send_us), and the
//                           bytes its NET steps sent and received
// tools/baton-prof merges the ranks' .jsonl files into the table per collective and size.
// NCCL_PROFILE_EVENT_MASK overrides the events asked for (by default: Coll, KernelCh, ProxyOp,
// ProxyStep). Of baton's library only the timeline writer (src/misc/trace.cc) is linked in, with its
// logging and parameters, all hidden: the plugin exports ncclProfiler_v5 alone.

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "baton/plugin_profiler.h"
#include "misc/trace.h"

namespace {

// The timeline writer's clock (linked in): the library's spans and these share it.
using baton::traceNowNs;

// Bytes of NCCL's datatype names (ncclDatatypeToString's words).
size_t typeBytes(const char* t) {
  if (!t) return 0;
  if (strstr(t, "8") && !strstr(t, "64")) return 1;  // ncclInt8, ncclUint8, ncclFloat8e4m3, ...
  if (strstr(t, "16")) return 2;
  if (strstr(t, "32")) return 4;
  if (strstr(t, "64")) return 8;
  return 0;
}

// nccl-tests' bus bandwidth factor, and the bytes its size column shows.
double busFactor(const std::string& f, int n) {
  if (n <= 1) return 1.0;
  if (f == "AllReduce") return 2.0 * (n - 1) / n;
  if (f == "AllGather" || f == "ReduceScatter" || f == "AllToAll") return double(n - 1) / n;
  return 1.0;
}
size_t opBytes(const std::string& f, size_t count, size_t tb, int n) {
  return f == "AllGather" || f == "ReduceScatter" ? count * tb * n : count * tb;
}

struct Context;

struct Event {
  Context* ctx = nullptr;
  uint64_t type = 0;
  Event* parent = nullptr;  // the Coll of a KernelCh or ProxyOp, the ProxyOp of a ProxyStep
  uint64_t start = 0, stop = 0;
  int channel = -1;
  int openChildren = 0;  // a Coll's KernelCh and ProxyOp events not yet stopped
  bool stopped = false, reported = false;
  uint64_t lastChildStop = 0;
  uint64_t stepsBusyUntil = 0;  // a ProxyOp: the end of its steps' in-flight time counted so far
  // Coll
  uint64_t seq = 0;
  std::string func, datatype, algo, proto;
  size_t count = 0;
  int nChannels = 0;
  // Its KernelCh time summed over channels; the time a send step of a channel was in flight, summed
  // over channels (a channel has up to 8 steps in flight: their union, not their sum).
  uint64_t chNs = 0, netNs = 0;
  size_t netBytes = 0, netRecvBytes = 0;  // what its send steps sent, its receive steps received
  // ProxyOp and ProxyStep
  bool isSend = false;
  size_t transSize = 0;
};

struct Context {
  std::mutex mu;
  uint64_t commId = 0;
  int rank = 0, nRanks = 0;
  std::deque<Event> events;  // stable addresses until finalize: handles point into it
  size_t dropped = 0;
  std::vector<std::string> lines;  // the .jsonl, one per completed collective
};

constexpr size_t kMaxEvents = 1 << 20;  // then events are dropped, and counted in the trace

ncclResult_t init(void** context, uint64_t commId, int* mask, const char*, int, int nRanks, int rank,
                  ncclDebugLogger_t log) {
  auto* c = new Context;
  c->commId = commId, c->rank = rank, c->nRanks = nRanks;
  *context = c;
  const char* m = getenv("NCCL_PROFILE_EVENT_MASK");
  *mask = m ? (int)strtol(m, nullptr, 0)
            : ncclProfileColl | ncclProfileKernelCh | ncclProfileProxyOp | ncclProfileProxyStep;
  const char* dir = getenv("BATON_PROFILE_DIR");
  if (log && rank == 0)
    log(NCCL_LOG_INFO, NCCL_INIT, __FILE__, __LINE__,
        "baton profiler: comm %" PRIx64 ", %d ranks, mask 0x%x, files in %s", commId, nRanks, *mask, dir ? dir : ".");
  return ncclSuccess;
}

// The Coll an event counts for (KernelCh, ProxyOp: its parent; ProxyStep: its ProxyOp's parent).
Event* collOf(Event* e) {
  Event* p = e->type == ncclProfileProxyStep && e->parent ? e->parent->parent : e->parent;
  return p && p->type == ncclProfileColl ? p : nullptr;
}

ncclResult_t startEvent(void* context, void** handle, ncclProfilerEventDescr_v5_t* d) {
  auto* c = static_cast<Context*>(context);
  *handle = nullptr;
  std::lock_guard<std::mutex> lock(c->mu);
  if (c->events.size() >= kMaxEvents) return ++c->dropped, ncclSuccess;
  Event& e = c->events.emplace_back();
  e.ctx = c;
  e.type = d->type;
  e.start = traceNowNs();
  switch (d->type) {
    case ncclProfileColl:
      e.seq = d->coll.seqNumber, e.func = d->coll.func ? d->coll.func : "?";
      e.datatype = d->coll.datatype ? d->coll.datatype : "?";
      e.algo = d->coll.algo ? d->coll.algo : "?", e.proto = d->coll.proto ? d->coll.proto : "?";
      e.count = d->coll.count, e.nChannels = d->coll.nChannels;
      break;
    case ncclProfileKernelCh: e.channel = d->kernelCh.channelId; break;
    case ncclProfileProxyOp: e.channel = d->proxyOp.channelId, e.isSend = d->proxyOp.isSend != 0; break;
    default: break;
  }
  if (d->type == ncclProfileKernelCh || d->type == ncclProfileProxyOp || d->type == ncclProfileProxyStep) {
    e.parent = static_cast<Event*>(d->parentObj);
    if (e.parent && e.parent->ctx != c) e.parent = nullptr;  // not one of this communicator's
    if (d->type == ncclProfileProxyStep && e.parent) e.channel = e.parent->channel, e.isSend = e.parent->isSend;
    if (d->type != ncclProfileProxyStep && collOf(&e)) ++collOf(&e)->openChildren;
  }
  *handle = &e;
  return ncclSuccess;
}

// A collective whose event and children have all stopped: its line. The context's lock is held.
void report(Context* c, Event& e) {
  e.reported = true;
  const size_t bytes = opBytes(e.func, e.count, typeBytes(e.datatype.c_str()), c->nRanks);
  const uint64_t end = std::max(e.stop, e.lastChildStop);  // NCCL stops a Coll at launch, before its kernel
  const double us = (end - e.start) / 1e3;
  const double algbw = us > 0 ? bytes / us / 1e3 : 0;  // GB/s
  char line[768];
  snprintf(line, sizeof line,
           "{\"comm\":\"%" PRIx64 "\",\"rank\":%d,\"nranks\":%d,\"seq\":%" PRIu64
           ",\"coll\":\"%s\",\"count\":%zu,\"datatype\":\"%s\",\"bytes\":%zu,\"algo\":\"%s\",\"proto\":\"%s\","
           "\"channels\":%d,\"time_us\":%.3f,\"algbw_GBs\":%.4f,\"busbw_GBs\":%.4f,\"channel_us\":%.3f,"
           "\"net_send_us\":%.3f,\"net_send_bytes\":%zu,\"net_recv_bytes\":%zu}",
           c->commId, c->rank, c->nRanks, e.seq, e.func.c_str(), e.count, e.datatype.c_str(), bytes, e.algo.c_str(),
           e.proto.c_str(), e.nChannels, us, algbw, algbw * busFactor(e.func, c->nRanks), e.chNs / 1e3, e.netNs / 1e3,
           e.netBytes, e.netRecvBytes);
  c->lines.push_back(line);
}

ncclResult_t stopEvent(void* handle) {
  if (!handle) return ncclSuccess;
  auto* e = static_cast<Event*>(handle);
  Context* c = e->ctx;
  std::lock_guard<std::mutex> lock(c->mu);
  e->stop = traceNowNs();
  e->stopped = true;
  Event* coll = collOf(e);
  if (coll) {
    if (e->type == ncclProfileKernelCh) coll->chNs += e->stop - e->start;
    if (e->type == ncclProfileProxyStep && e->isSend) {
      // A connection's steps start and end in order, so each adds what it extends past the last.
      const uint64_t from = std::max(e->start, e->parent->stepsBusyUntil);
      if (e->stop > from) coll->netNs += e->stop - from;
      e->parent->stepsBusyUntil = std::max(e->parent->stepsBusyUntil, e->stop);
      coll->netBytes += e->transSize;
    } else if (e->type == ncclProfileProxyStep) {
      coll->netRecvBytes += e->transSize;
    }
    if (e->type != ncclProfileProxyStep) {
      --coll->openChildren;
      coll->lastChildStop = std::max(coll->lastChildStop, e->stop);
    }
  }
  Event* done = e->type == ncclProfileColl ? e : coll;
  if (done && done->stopped && done->openChildren == 0 && !done->reported) report(c, *done);
  return ncclSuccess;
}

ncclResult_t recordEventState(void* handle, ncclProfilerEventState_v5_t, ncclProfilerEventStateArgs_v5_t* a) {
  if (!handle) return ncclSuccess;
  auto* e = static_cast<Event*>(handle);
  std::lock_guard<std::mutex> lock(e->ctx->mu);
  if (e->type == ncclProfileProxyStep && a) e->transSize = a->proxyStep.transSize;
  return ncclSuccess;
}

// The trace: one span per collective (the collectives lane), per channel part (the channel's
// parts lane) and per NET step (the channel's sends or receives lane), in baton's timeline format.
std::vector<baton::TraceRecord> traceRecords(Context* c) {
  std::vector<baton::TraceRecord> out;
  for (const Event& e : c->events) {
    if (!e.stopped) continue;
    const Event* coll = collOf(const_cast<Event*>(&e));
    std::string name, args;
    int lane = baton::kTraceCollLane;
    if (e.type == ncclProfileColl) {
      char buf[256];
      snprintf(buf, sizeof buf, "%s %zu x %s", e.func.c_str(), e.count, e.datatype.c_str());
      name = buf;
      snprintf(buf, sizeof buf, "\"seq\":%" PRIu64 ",\"algo\":\"%s\",\"proto\":\"%s\",\"channels\":%d", e.seq,
               e.algo.c_str(), e.proto.c_str(), e.nChannels);
      args = buf;
    } else if (e.type == ncclProfileKernelCh) {
      name = coll ? coll->func : "channel part";
      lane = baton::kTracePartLane + std::max(e.channel, 0);
    } else if (e.type == ncclProfileProxyStep) {
      name = e.isSend ? "send step" : "recv step";
      lane = (e.isSend ? baton::kTraceNetSendLane : baton::kTraceNetRecvLane) + std::max(e.channel, 0);
      args = "\"bytes\":" + std::to_string(e.transSize);
    } else {
      continue;
    }
    const uint64_t end = e.type == ncclProfileColl ? std::max(e.stop, e.lastChildStop) : e.stop;
    out.push_back({e.start, end, c->rank, lane, std::move(name), "nccl", std::move(args)});
  }
  return out;
}

ncclResult_t finalize(void* context) {
  auto* c = static_cast<Context*>(context);
  const char* dir = getenv("BATON_PROFILE_DIR");
  const char* trace = getenv("BATON_TRACE");
  std::string base = std::string(dir && *dir ? dir : ".") + "/";
  char name[64];
  snprintf(name, sizeof name, "%016" PRIx64 ".rank%d", c->commId, c->rank);
  base += name;
  ncclResult_t res = ncclSuccess;
  {
    std::lock_guard<std::mutex> lock(c->mu);
    // BATON_TRACE: into that timeline, beside the library's own spans (the same job: the commId);
    // else a file of this communicator's rank.
    const bool toTrace = trace && *trace;
    const std::string path = toTrace ? std::string(trace) : base + ".json";
    if (!baton::traceWriteSpans(path.c_str(), c->commId, traceRecords(c), c->dropped)) res = ncclSystemError;
    // The summaries: always without BATON_TRACE; with it, where BATON_PROFILE_DIR asks for them.
    if (!toTrace || (dir && *dir)) {
      if (FILE* f = fopen((base + ".jsonl").c_str(), "w")) {
        for (const std::string& l : c->lines) fprintf(f, "%s\n", l.c_str());
        if (fclose(f) != 0) res = ncclSystemError;
      } else {
        res = ncclSystemError;
      }
    }
  }
  delete c;
  return res;
}

}  // namespace

extern "C" {
__attribute__((visibility("default")))
ncclProfiler_v5_t ncclProfiler_v5 = {"baton", init, startEvent, stopEvent, recordEventState, finalize};
}

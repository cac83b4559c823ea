#include "profiler/profiler_plugin.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstring>

#include "misc/debug.h"
#include "misc/param.h"
#include "misc/plugin_lib.h"

namespace baton {

namespace {

// The process's profiler library (misc/plugin_lib.h's SharedPluginLib), as the tuner's.
struct LoadedProfiler {
  SharedPluginLib shared;
  ncclProfiler_v5_t api{};  // the plugin's own v5 table, or adapters over v4
  int version = 0;
  const ncclProfiler_v4_t* v4 = nullptr;
};
LoadedProfiler& loaded() {
  static LoadedProfiler* p = new LoadedProfiler;  // never destroyed: communicators may outlive static destructors
  return *p;
}

// v4 behind the v5 shape (NCCL's src/plugin/profiler/profiler_v4.cc does the same): init's
// arguments in v4's order, and only the event types v4 knows, with the Group as a task's parent.
constexpr int kV4Types = ncclProfileGroup | ncclProfileColl | ncclProfileP2p | ncclProfileProxyOp |
                         ncclProfileProxyStep | ncclProfileProxyCtrl | ncclProfileKernelCh | ncclProfileNetPlugin;
ncclResult_t initV4(void** ctx, uint64_t commId, int* mask, const char* commName, int nNodes, int nRanks, int rank,
                    ncclDebugLogger_t log) {
  const ncclResult_t res = loaded().v4->init(ctx, mask, commName, commId, nNodes, nRanks, rank, log);
  *mask &= kV4Types;
  return res;
}
ncclResult_t startV4(void* ctx, void** handle, ncclProfilerEventDescr_v5_t* d) {
  *handle = nullptr;
  if (!(d->type & kV4Types)) return ncclSuccess;
  ncclProfilerEventDescr_v4_t o;
  memset(&o, 0, sizeof o);
  o.type = (uint8_t)d->type;
  o.parentObj = d->parentObj;
  o.rank = d->rank;
  if (d->type == ncclProfileColl) {
    o.parentObj = d->coll.parentGroup;
    o.coll = {d->coll.seqNumber, d->coll.func,      d->coll.sendBuff, d->coll.recvBuff, d->coll.count, d->coll.root,
              d->coll.datatype,  d->coll.nChannels, d->coll.nWarps,   d->coll.algo,     d->coll.proto};
  } else if (d->type == ncclProfileP2p) {
    o.parentObj = d->p2p.parentGroup;
    o.p2p = {d->p2p.func, d->p2p.buff, d->p2p.datatype, d->p2p.count, d->p2p.peer, d->p2p.nChannels};
  } else if (d->type == ncclProfileProxyOp) {
    o.proxyOp = {d->proxyOp.pid,    d->proxyOp.channelId, d->proxyOp.peer,
                 d->proxyOp.nSteps, d->proxyOp.chunkSize, d->proxyOp.isSend};
  } else if (d->type == ncclProfileProxyStep) {
    o.proxyStep.step = d->proxyStep.step;
  } else if (d->type == ncclProfileKernelCh) {
    o.kernelCh = {d->kernelCh.channelId, d->kernelCh.pTimer};
  } else if (d->type == ncclProfileNetPlugin) {
    o.netPlugin = {d->netPlugin.id, d->netPlugin.data};
  }
  return loaded().v4->startEvent(ctx, handle, &o);
}

bool bindVersion(LoadedProfiler& p, void* h) {
  if (auto* v5 = static_cast<const ncclProfiler_v5_t*>(dlsym(h, "ncclProfiler_v5"))) {
    p.api = *v5, p.version = 5;
  } else if ((p.v4 = static_cast<const ncclProfiler_v4_t*>(dlsym(h, "ncclProfiler_v4")))) {
    p.api = {p.v4->name, initV4, startV4, p.v4->stopEvent, p.v4->recordEventState, p.v4->finalize};
    p.version = 4;
    if (!p.v4->init || !p.v4->startEvent) return false;
  } else {
    return false;
  }
  if (!p.api.name) p.api.name = "(unnamed)";
  return p.api.init && p.api.startEvent && p.api.stopEvent && p.api.recordEventState && p.api.finalize;
}

// BATON_TRACE is a shorthand for baton's own profiler (its spans join the timeline): the copy
// beside this library, else wherever the loader finds one.
std::string tracePlugin() {
  if (envStr("BATON_TRACE").empty()) return "";
  const std::string beside = besideThisLibrary("libnccl-profiler-baton.so");
  return !beside.empty() && access(beside.c_str(), R_OK) == 0 ? beside : "libnccl-profiler-baton.so";
}

bool acquire() {
  LoadedProfiler& p = loaded();
  const SharedPluginLib::Use use = p.shared.acquire(
      kPluginProfiler, "NCCL_PROFILER_PLUGIN", "ncclProfiler_v5 or ncclProfiler_v4",
      [&p](void* h) {
        if (bindVersion(p, h)) return true;
        p.v4 = nullptr;
        return false;
      },
      tracePlugin());
  if (use == SharedPluginLib::kFirst) {
    BATON_INFO(kSubInit, "PROFILER/Plugin: Using %s (v%d)", p.api.name, p.version);
    BATON_INFO(kSubInit, "Successfully loaded external profiler plugin %s", p.shared.lib().path.c_str());
  }
  return use != SharedPluginLib::kNone;
}

void release() {
  LoadedProfiler& p = loaded();
  if (p.shared.release())
    BATON_INFO(kSubInit, "PROFILER/Plugin: Closing profiler plugin %s (its library stays mapped)", p.api.name);
}

}  // namespace

std::unique_ptr<ProfilerPlugin> ProfilerPlugin::start(uint64_t commId, const char* commName, int nNodes, int nRanks,
                                                      int rank) {
  if (!acquire()) return nullptr;
  LoadedProfiler& p = loaded();
  std::unique_ptr<ProfilerPlugin> me(new ProfilerPlugin);
  me->name_ = p.api.name;
  me->version_ = p.version;
  me->rank_ = rank;
  int mask = 0;
  const ncclResult_t res =
      p.api.init(&me->ctx_, commId, &mask, commName ? commName : "", nNodes, nRanks, rank, pluginLogger);
  if (res != ncclSuccess) {
    BATON_INFO(kSubInit, "PROFILER/Plugin: %s (%s): init returned %d (%s); this communicator runs without a profiler",
               me->name_.c_str(), p.shared.lib().path.c_str(), (int)res, ncclGetErrorString(res));
    me->live_ = false;  // no finalize for an init that failed
    release();
    return nullptr;
  }
  if (mask == 0) {
    BATON_INFO(kSubInit, "PROFILER/Plugin: %s wants no event type (mask 0) on rank %d", me->name_.c_str(), rank);
  } else {
    BATON_INFO(kSubInit, "PROFILER/Plugin: %s on rank %d: event mask 0x%x", me->name_.c_str(), rank, mask);
  }
  me->mask_.store(mask);
  return me;
}

ProfilerPlugin::~ProfilerPlugin() {
  if (!live_) return;
  const ncclResult_t res = loaded().api.finalize(ctx_);
  if (res != ncclSuccess) BATON_WARN("PROFILER/Plugin: %s: finalize returned %d", name_.c_str(), (int)res);
  release();
}

void ProfilerPlugin::failed(const char* call, ncclResult_t res) {
  mask_.store(0, std::memory_order_relaxed);
  if (!warned_.exchange(true))
    BATON_WARN("PROFILER/Plugin: %s: %s returned %d (%s); rank %d profiles nothing more on this communicator",
               name_.c_str(), call, (int)res, ncclGetErrorString(res), rank_);
}

void* ProfilerPlugin::startEvent(ncclProfilerEventDescr_v5_t* d) {
  if (!wants((int)d->type)) return nullptr;
  d->rank = rank_;
  void* handle = nullptr;
  const ncclResult_t res = loaded().api.startEvent(ctx_, &handle, d);
  if (res != ncclSuccess) {
    failed("startEvent", res);
    return nullptr;
  }
  return handle;
}

void ProfilerPlugin::stopEvent(void* handle) {
  if (!handle || warned_.load(std::memory_order_relaxed)) return;
  const ncclResult_t res = loaded().api.stopEvent(handle);
  if (res != ncclSuccess) failed("stopEvent", res);
}

void ProfilerPlugin::recordState(void* handle, ncclProfilerEventState_t state, ncclProfilerEventStateArgs_v5_t* args) {
  if (!handle || warned_.load(std::memory_order_relaxed)) return;
  const ncclResult_t res = loaded().api.recordEventState(handle, state, args);
  if (res != ncclSuccess) failed("recordEventState", res);
}

}  // namespace baton

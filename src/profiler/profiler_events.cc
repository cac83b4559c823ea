#include "profiler/profiler_events.h"

#include <unistd.h>

#include <utility>

#include "baton/plugin_net.h"
#include "comm.h"
#include "net/net_backend.h"
#include "task.h"

namespace baton {

namespace {

// NCCL's names (ncclFuncToString, ncclDatatypeToString): plugins match on them. funcName's are
// NCCL's already; point-to-point and AlltoAll are added here.
const char* ncclFuncName(const Task& t) {
  if (t.kind == Task::kSend) return "Send";
  if (t.kind == Task::kRecv) return "Recv";
  if (t.kind == Task::kAlltoAll) return "AllToAll";
  return funcName(t.func);
}
const char* ncclTypeName(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: return "ncclInt8";
    case ncclUint8: return "ncclUint8";
    case ncclInt32: return "ncclInt32";
    case ncclUint32: return "ncclUint32";
    case ncclInt64: return "ncclInt64";
    case ncclUint64: return "ncclUint64";
    case ncclFloat16: return "ncclFloat16";
    case ncclFloat32: return "ncclFloat32";
    case ncclFloat64: return "ncclFloat64";
    case ncclBfloat16: return "ncclBfloat16";
    default: return typeName(t);
  }
}

// The calling thread's API events: one GroupApi for its outermost group (opened by the group's
// first operation call, which names the communicator whose plugin context it goes to, as in NCCL),
// and the CollApi / P2pApi events of the entry point running now.
// Plain thread-locals for the owner and the GroupApi: every ncclGroupEnd tests the owner, and a
// class with a vector would put a construction guard on that path.
struct ApiState {
  ProfilerPlugin* owner;
  void* groupApi;
  bool startRecorded;
};
thread_local ApiState tApi __attribute__((tls_model("initial-exec"))) = {nullptr, nullptr, false};
thread_local std::vector<std::pair<ProfilerPlugin*, void*>> tOpen;

}  // namespace

void profileApiCall(ncclComm* comm, Task* t, int groupDepth) {
  ProfilerPlugin* p = comm->profiler.get();
  if (!p) return;
  if (!tApi.owner) {
    tApi.owner = p;
    ncclProfilerEventDescr_v5_t d{};
    d.type = ncclProfileGroupApi;
    d.groupApi.groupDepth = groupDepth;
    tApi.groupApi = p->startEvent(&d);
  }
  if (!tApi.startRecorded) {
    tApi.startRecorded = true;
    if (tApi.owner) tApi.owner->recordState(tApi.groupApi, ncclProfilerGroupStartApiStop);
  }
  t->profGroupApi = tApi.groupApi;
  ncclProfilerEventDescr_v5_t d{};
  d.parentObj = tApi.groupApi;
  if (t->kind == Task::kSend || t->kind == Task::kRecv) {
    d.type = ncclProfileP2pApi;
    d.p2pApi = {ncclFuncName(*t), t->count, ncclTypeName(t->type), (void*)t->stream, false};
  } else {
    d.type = ncclProfileCollApi;
    d.collApi = {ncclFuncName(*t), t->count, ncclTypeName(t->type), t->root, (void*)t->stream, false};
  }
  t->profApi = p->startEvent(&d);
  if (t->profApi) tOpen.push_back({p, t->profApi});
}

void profileApiCallsEnd() {
  if (tOpen.empty()) return;
  for (auto& [p, h] : tOpen) p->stopEvent(h);
  tOpen.clear();
}

void profileGroupEndStart() {
  if (tApi.owner) tApi.owner->recordState(tApi.groupApi, ncclProfilerGroupEndApiStart);
}

void profileGroupEnd() {
  if (!tApi.owner) return;
  profileApiCallsEnd();  // a lone call's CollApi ends inside its implicit group's GroupApi
  tApi.owner->stopEvent(tApi.groupApi);
  tApi = {nullptr, nullptr, false};
}

// ---- LaunchProfile ---------------------------------------------------------------------------

namespace {
constexpr int kLaunchTypes = ncclProfileGroup | ncclProfileColl | ncclProfileP2p | ncclProfileKernelCh |
                             ncclProfileKernelLaunch | ncclProfileProxyOp | ncclProfileProxyStep;
}

std::shared_ptr<LaunchProfile> LaunchProfile::begin(ncclComm* comm) {
  ProfilerPlugin* p = comm->profiler.get();
  if (!p || !p->wants(kLaunchTypes)) return nullptr;
  std::shared_ptr<LaunchProfile> lp(new LaunchProfile(comm, p));
  ncclProfilerEventDescr_v5_t d{};
  d.type = ncclProfileGroup;
  lp->group_ = p->startEvent(&d);
  return lp;
}

LaunchProfile::~LaunchProfile() { finishIfIdle(); }

int LaunchProfile::addColl(const Task& t, uint64_t seq, const char* algo, const char* proto, int nChannels, int parts,
                           ProxyConns conns) {
  ncclProfilerEventDescr_v5_t d{};
  d.type = ncclProfileColl;
  d.parentObj = t.profApi;
  d.coll.seqNumber = seq;
  d.coll.func = ncclFuncName(t);
  d.coll.sendBuff = t.sendbuff;
  d.coll.recvBuff = t.recvbuff;
  d.coll.count = t.count;
  d.coll.root = t.root;
  d.coll.datatype = ncclTypeName(t.type);
  d.coll.nChannels = (uint8_t)nChannels;
  d.coll.nWarps = 1;  // each channel's part is one thread on the CPU
  d.coll.algo = algo;
  d.coll.proto = proto;
  d.coll.parentGroup = group_;
  Op& op = ops_.emplace_back();
  op.handle = prof_->startEvent(&d);
  op.partsLeft.store(parts);
  op.conns = conns;
  opsLeft_.fetch_add(1);
  return (int)ops_.size() - 1;
}

int LaunchProfile::addP2p(const Task& t) {
  ncclProfilerEventDescr_v5_t d{};
  d.parentObj = t.profApi;
  if (t.kind == Task::kAlltoAll) {  // NCCL records an AlltoAll as its sends and receives: one Coll here
    d.type = ncclProfileColl;
    d.coll.func = "AllToAll";
    d.coll.sendBuff = t.sendbuff, d.coll.recvBuff = t.recvbuff, d.coll.count = t.count;
    d.coll.datatype = ncclTypeName(t.type);
    d.coll.nChannels = 1, d.coll.nWarps = 1, d.coll.algo = "Pairwise", d.coll.proto = "Simple";
    d.coll.parentGroup = group_;
  } else {
    d.type = ncclProfileP2p;
    d.p2p.func = ncclFuncName(t);
    d.p2p.buff = t.kind == Task::kSend ? const_cast<void*>(t.sendbuff) : t.recvbuff;
    d.p2p.datatype = ncclTypeName(t.type);
    d.p2p.count = t.count;
    d.p2p.peer = t.peer;
    d.p2p.nChannels = 1;
    d.p2p.parentGroup = group_;
  }
  Op& op = ops_.emplace_back();
  op.handle = prof_->startEvent(&d);
  op.partsLeft.store(1);
  opsLeft_.fetch_add(1);
  return (int)ops_.size() - 1;
}

void LaunchProfile::launchStart(void* groupApi) {
  ncclProfilerEventDescr_v5_t d{};
  d.type = ncclProfileKernelLaunch;
  d.parentObj = groupApi;
  launch_ = prof_->startEvent(&d);
}

void LaunchProfile::launchEnd() { prof_->stopEvent(std::exchange(launch_, nullptr)); }

void profileProxyCtrl(ProfilerPlugin* p, ncclProfilerEventState_t state, int appended) {
  if (!p || !p->wants(ncclProfileProxyCtrl)) return;
  ncclProfilerEventDescr_v5_t d{};
  d.type = ncclProfileProxyCtrl;
  void* h = p->startEvent(&d);
  ncclProfilerEventStateArgs_v5_t a{};
  a.proxyCtrl.appendedProxyOps = appended;
  if (state == ncclProfilerProxyCtrlAppendEnd) p->recordState(h, ncclProfilerProxyCtrlAppend, &a);
  p->recordState(h, state, &a);
  p->stopEvent(h);
}

void* profileProxySleep(ProfilerPlugin* p) {
  if (!p || !p->wants(ncclProfileProxyCtrl)) return nullptr;
  ncclProfilerEventDescr_v5_t d{};
  d.type = ncclProfileProxyCtrl;
  void* h = p->startEvent(&d);
  p->recordState(h, ncclProfilerProxyCtrlSleep);
  return h;
}

void profileProxyWake(ProfilerPlugin* p, void* sleep) {
  if (!sleep) return;
  p->recordState(sleep, ncclProfilerProxyCtrlWakeup);
  p->stopEvent(sleep);
}

namespace {
// What a network back-end or plugin gets as pHandle for a step (NetOpWatch), and what its events'
// handles are here: the profiler plugin is per communicator, the callback is not.
struct NetStepRef : NetProfileRef {
  ProfilerPlugin* prof = nullptr;
  void* step = nullptr;
};
struct NetPluginEvent {
  ProfilerPlugin* prof;
  void* handle;
};

// NCCL's ncclProfilerCallback: start (under the step), update, stop, or update and stop.
ncclResult_t netPluginEvent(void** eHandle, int type, void* pHandle, int64_t pluginId, void* extData) {
  if (!eHandle) return ncclSuccess;
  if (type == ncclProfilerNetEventStart) {
    *eHandle = nullptr;
    auto* ref = static_cast<NetStepRef*>(pHandle);
    if (!ref || !ref->prof || !ref->step || !ref->prof->wants(ncclProfileNetPlugin)) return ncclSuccess;
    ncclProfilerEventDescr_v5_t d{};
    d.type = ncclProfileNetPlugin;
    d.parentObj = ref->step;
    d.netPlugin.id = pluginId;
    d.netPlugin.data = extData;
    if (void* h = ref->prof->startEvent(&d)) *eHandle = new NetPluginEvent{ref->prof, h};
    return ncclSuccess;
  }
  auto* e = static_cast<NetPluginEvent*>(*eHandle);
  if (!e) return ncclSuccess;
  if (type != ncclProfilerNetEventStop) {
    ncclProfilerEventStateArgs_v5_t a{};
    a.netPlugin.data = extData;
    e->prof->recordState(e->handle, ncclProfilerNetPluginUpdate, &a);
  }
  if (type == ncclProfilerNetEventStop || type == ncclProfilerNetEventUpdateAndStop) {
    e->prof->stopEvent(e->handle);
    delete e;
    *eHandle = nullptr;
  }
  return ncclSuccess;
}
[[maybe_unused]] const bool netPluginEventsSet = (setNetProfilerCallback(netPluginEvent), true);

// One ring part's steps on one NET connection: a ProxyOp, and a ProxyStep per step the proxy moves.
class NetOpWatch final : public ProxyOpWatch {
 public:
  NetOpWatch(std::shared_ptr<LaunchProfile> lp, int op, void* parent, uint64_t first, int channel, int peer, bool send)
      : ProxyOpWatch(first, !send), lp_(std::move(lp)), op_(op), send_(send) {
    ncclProfilerEventDescr_v5_t d{};
    d.type = ncclProfileProxyOp;
    d.parentObj = parent;
    d.proxyOp.pid = getpid();
    d.proxyOp.channelId = (uint8_t)channel;
    d.proxyOp.peer = peer;
    d.proxyOp.nSteps = 0;  // not known in advance: the proxy learns the steps as the ranks write them
    d.proxyOp.isSend = send ? 1 : 0;
    handle_ = lp_->plugin()->startEvent(&d);
  }
  // A receive watch hears from the proxy and from the rank's add() (early steps): one at a time.
  void stepPosted(uint64_t s) override {
    std::lock_guard<std::mutex> lock(mu_);
    posted(s);
  }
  void stepDone(uint64_t s, size_t bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    Step& st = steps_[s % kSlots];
    if (!st.started || st.step != s) posted(s);
    st.ref.step = nullptr;  // the plugin's request is done: no event of it comes after this one
    ncclProfilerEventStateArgs_v5_t a{};
    a.proxyStep.transSize = bytes;
    lp_->plugin()->recordState(st.handle, send_ ? ncclProfilerProxyStepSendWait : ncclProfilerProxyStepRecvWait, &a);
    lp_->plugin()->stopEvent(st.handle);
    st.started = false;
  }
  void finished() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      lp_->plugin()->stopEvent(handle_);
    }
    lp_->proxyOpDone(op_);
  }

 private:
  void* netPluginParent(uint64_t s) override {
    std::lock_guard<std::mutex> lock(mu_);
    Step& st = steps_[s % kSlots];
    return st.started && st.step == s && st.handle ? &st.ref : nullptr;
  }
  void posted(uint64_t s) {
    Step& st = steps_[s % kSlots];
    if (st.started && st.step == s) return;
    st = {s, true, startStep(s), {}};
    st.ref.report = netPluginEvent, st.ref.prof = lp_->plugin(), st.ref.step = st.handle;
    lp_->plugin()->recordState(st.handle, send_ ? ncclProfilerProxyStepSendWait : ncclProfilerProxyStepRecvWait);
  }
  void* startStep(uint64_t s) {
    if (!progressed_) {
      progressed_ = true;
      lp_->plugin()->recordState(handle_, ncclProfilerProxyOpInProgress_v4);
    }
    ncclProfilerEventDescr_v5_t d{};
    d.type = ncclProfileProxyStep;
    d.parentObj = handle_;
    d.proxyStep.step = (int)(s - firstStep);
    return lp_->plugin()->startEvent(&d);
  }
  static constexpr int kSlots = 2 * kSteps;  // the proxy has at most kSteps steps of a connection in flight
  struct Step {
    uint64_t step = 0;
    bool started = false;
    void* handle = nullptr;
    NetStepRef ref;  // a network plugin's pHandle for it
  };
  std::mutex mu_;
  std::shared_ptr<LaunchProfile> lp_;
  int op_;
  bool send_;
  bool progressed_ = false;
  void* handle_ = nullptr;
  Step steps_[kSlots];
};
}  // namespace

void LaunchProfile::partStart(int first, int n, int channel, PartEvents* ev) {
  if (prof_->wants(ncclProfileKernelCh)) {
    const uint64_t t0 = nowNs();
    for (int i = first; i < first + n; ++i) {
      ncclProfilerEventDescr_v5_t d{};
      d.type = ncclProfileKernelCh;
      d.parentObj = ops_[i].handle;
      d.kernelCh.channelId = (uint8_t)channel;
      d.kernelCh.pTimer = t0;
      ev->kernelCh.push_back(prof_->startEvent(&d));
    }
  }
  if (n != 1 || ops_[first].conns == kNoProxyConns || !prof_->wants(ncclProfileProxyOp | ncclProfileProxyStep)) return;
  Channel& ch = *comm_->channels[channel];
  auto watch = [&](Connection* conn, ConnDev& dev, bool send) {
    if (!conn || !conn->viaNet) return;
    Op& op = ops_[first];
    op.partsLeft.fetch_add(1);  // the operation ends after this ProxyOp too
    auto w = std::make_shared<NetOpWatch>(shared_from_this(), first, op.handle, dev.step, channel, dev.peer, send);
    conn->watchProxyOp(w);
    ev->watches.push_back({std::move(w), &dev.step});
  };
  // Every NET connection the part's algorithm uses, in a fixed order: the peer queues its watches
  // for the same parts, so the watches' numbers match on both ends (proxy_op_watch.h).
  if (ops_[first].conns == kRingConns) {
    watch(ch.sendConn.get(), ch.ringSend, true);
    watch(ch.recvConn.get(), ch.ringRecv, false);
    return;
  }
  TreeConns& t = ch.tree;
  if (!t.connected) return;  // connected by its first Tree operation, inside the part
  watch(t.upSendConn.get(), t.upSend, true);
  watch(t.downRecvConn.get(), t.downRecv, false);
  for (int i = 0; i < kTreeMaxArity; ++i) {
    watch(t.upRecvConn[i].get(), t.upRecv[i], false);
    watch(t.downSendConn[i].get(), t.downSend[i], true);
  }
}

void LaunchProfile::partEnd(int first, int n, PartEvents* ev) {
  if (!ev->kernelCh.empty()) {
    ncclProfilerEventStateArgs_v5_t a{};
    a.kernelCh.pTimer = nowNs();
    for (void* h : ev->kernelCh) {
      prof_->recordState(h, ncclProfilerKernelChStop, &a);
      prof_->stopEvent(h);
    }
    ev->kernelCh.clear();
  }
  for (auto& [w, step] : ev->watches) w->end(*step);
  ev->watches.clear();
  for (int i = first; i < first + n; ++i) opPartDone(ops_[i]);
}

void LaunchProfile::opPartDone(Op& op) {
  if (op.partsLeft.fetch_sub(1) != 1) return;
  prof_->stopEvent(op.handle);
  if (opsLeft_.fetch_sub(1) == 1 && !groupStopped_.exchange(true)) prof_->stopEvent(group_);
}

void LaunchProfile::finishIfIdle() {
  if (opsLeft_.load() == 0 && !groupStopped_.exchange(true)) prof_->stopEvent(group_);
}

}  // namespace baton

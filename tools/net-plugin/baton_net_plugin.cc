// libnccl-net-baton.so: baton's socket back-end (transports/net/socket/) as an NCCL network plugin,
// exporting ncclNetPlugin_v11 and, for cores that predate it, ncclNetPlugin_v6 (lesson 16). Built
// with -DBATON_NET_V6_ONLY it exports v6 alone: the test suite's stand-in for an older third-party
// socket plugin.
//
// NCCL's semantics, mapped onto baton's back-end interface (net_backend.h):
//   - a tag is an int matched exactly; baton's socket back-end carries 64-bit tags and picks among
//     candidate buffers by the low byte, so an NCCL tag travels in the upper bits over candidate 0
//     and a receive checks it on arrival (messages of a comm arrive in order, as NCCL assumes);
//   - one buffer per receive (maxRecvs 1: the core then never groups receives);
//   - comms are wrapped so regMr, which NCCL gives either kind, knows which it holds;
//   - v11: each request is one profiler event (ncclProfileNetPlugin, NCCL's socket data layout)
//     under the phandle the core passed with it, from post to completion.
#include <time.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "baton/plugin_net.h"
#include "baton/plugin_profiler.h"
#include "misc/debug.h"
#include "net/net_backend.h"

namespace baton {
// The socket back-end's clock, which the library keeps in exec_model_host.cc with the tracing this
// plugin leaves out.
uint64_t nowNs() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}
}  // namespace baton

namespace {

using namespace baton;

NetBackend* net() { return socketNetBackend(); }

struct Comm {
  NetSendComm* send = nullptr;
  NetRecvComm* recv = nullptr;
};
struct Request {
  NetRequest* req;
  bool recv;
  int tag;                              // a receive's expected tag
  void* event = nullptr;                // its profiler event (v11: under the core's phandle)
  ncclProfilerNetSockDescr_v1_t descr;  // the event's data, NCCL's socket layout
};

ncclProfilerCallback_t profiler = nullptr;  // v11's init hands it over

// One event per request, from its post to its completion, as NCCL's socket transport reports.
void profileStart(Request* r, void* phandle, size_t size) {
  if (!profiler || !phandle) return;
  r->descr = {};
  r->descr.type = ncclProfileSocket;
  r->descr.sock.fd = -1;  // the back-end's sockets are its own
  r->descr.sock.op = r->recv ? 0 : 1;
  r->descr.sock.length = size;
  profiler(&r->event, ncclProfilerNetEventStart, phandle, NCCL_PROFILER_NET_TYPE_SOCK | NCCL_PROFILER_NET_SOCKET_VER,
           &r->descr);
}
void profileStop(Request* r) {
  if (profiler && r->event) profiler(&r->event, ncclProfilerNetEventStop, nullptr, 0, nullptr);
}

ncclDebugLogger_t logger = nullptr;
char names[8][64], paths[8][256];  // getProperties hands out pointers into these

#define PLUGIN_LOG(fmt, ...) \
  (logger ? logger(NCCL_LOG_WARN, NCCL_NET, __FILE__, __LINE__, "NET/baton: " fmt, __VA_ARGS__) : (void)0)

ncclResult_t pluginInit() {
  ncclResult_t res = net()->init();
  if (res != ncclSuccess) PLUGIN_LOG("socket back-end init failed: %s", lastError());
  return res;
}
ncclResult_t devices(int* n) {
  *n = net()->devices();
  return ncclSuccess;
}
template <class Props>
ncclResult_t properties(int dev, Props* p) {
  if (dev < 0 || dev >= net()->devices() || dev >= 8) return ncclInvalidArgument;
  NetProperties q;
  ncclResult_t res = net()->getProperties(dev, &q);
  if (res != ncclSuccess) return res;
  memset(p, 0, sizeof *p);
  snprintf(names[dev], sizeof names[dev], "%s", q.name);
  snprintf(paths[dev], sizeof paths[dev], "%s", q.pciPath);
  p->name = names[dev];
  p->pciPath = paths[dev];
  p->guid = q.guid;
  p->ptrSupport = NCCL_PTR_HOST;
  p->speed = q.speedMbps;
  p->port = q.port;
  p->latency = q.latencyUs;
  p->maxComms = q.maxComms;
  p->maxRecvs = 1;
  return ncclSuccess;
}
ncclResult_t listen(int dev, void* handle, void** listenComm) {
  NetHandle h{};
  NetListenComm* l = nullptr;
  ncclResult_t res = net()->listen(dev, &h, &l);
  if (res != ncclSuccess) return PLUGIN_LOG("listen: %s", lastError()), res;
  memcpy(handle, h.data, NCCL_NET_HANDLE_MAXSIZE);
  *listenComm = l;
  return ncclSuccess;
}
ncclResult_t connect(int dev, void* handle, void** sendComm) {
  NetHandle h;
  memcpy(h.data, handle, NCCL_NET_HANDLE_MAXSIZE);
  NetSendComm* s = nullptr;
  *sendComm = nullptr;
  ncclResult_t res = net()->connect(dev, h, nullptr, &s);
  if (res != ncclSuccess) return PLUGIN_LOG("connect: %s", lastError()), res;
  if (s) *sendComm = new Comm{s, nullptr};
  return ncclSuccess;
}
ncclResult_t accept(void* listenComm, void** recvComm) {
  NetRecvComm* r = nullptr;
  *recvComm = nullptr;
  ncclResult_t res = net()->accept(static_cast<NetListenComm*>(listenComm), &r);
  if (res != ncclSuccess) return PLUGIN_LOG("accept: %s", lastError()), res;
  if (r) *recvComm = new Comm{nullptr, r};
  return ncclSuccess;
}
ncclResult_t regMr(void* comm, void* data, size_t size, int type, void** mhandle) {
  if (type != NCCL_PTR_HOST) return ncclInternalError;  // host memory only, as getProperties says
  auto* c = static_cast<Comm*>(comm);
  NetMemHandle* m = nullptr;
  ncclResult_t res = net()->regMr(c->send, c->recv, data, size, kNetPtrHost, &m);
  *mhandle = m;
  return res;
}
ncclResult_t regMrInt(void* comm, void* data, int size, int type, void** mhandle) {
  return regMr(comm, data, (size_t)size, type, mhandle);
}
ncclResult_t deregMr(void* comm, void* mhandle) {
  auto* c = static_cast<Comm*>(comm);
  return net()->deregMr(c->send, c->recv, static_cast<NetMemHandle*>(mhandle));
}
ncclResult_t isend(void* comm, void* data, size_t size, int tag, void* mhandle, void** request,
                   void* phandle = nullptr) {
  NetRequest* r = nullptr;
  *request = nullptr;
  ncclResult_t res = net()->isend(static_cast<Comm*>(comm)->send, data, size, (uint64_t)(uint32_t)tag << 8,
                                  static_cast<NetMemHandle*>(mhandle), &r);
  if (res != ncclSuccess) return PLUGIN_LOG("isend: %s", lastError()), res;
  if (!r) return ncclSuccess;
  auto* q = new Request{r, false, tag, nullptr, {}};
  profileStart(q, phandle, size);
  *request = q;
  return ncclSuccess;
}
ncclResult_t isendInt(void* comm, void* data, int size, int tag, void* mhandle, void** request) {
  return isend(comm, data, (size_t)size, tag, mhandle, request);
}
ncclResult_t irecv(void* comm, int n, void** data, const size_t* sizes, const int* tags, void** mhandles,
                   void** request, void* phandle = nullptr) {
  *request = nullptr;
  if (n != 1) return ncclInternalError;  // maxRecvs is 1
  uint64_t tag = 0;                      // candidate 0
  NetMemHandle* m = static_cast<NetMemHandle*>(mhandles ? mhandles[0] : nullptr);
  NetRequest* r = nullptr;
  ncclResult_t res = net()->irecv(static_cast<Comm*>(comm)->recv, 1, data, sizes, &tag, &m, &r);
  if (res != ncclSuccess) return PLUGIN_LOG("irecv: %s", lastError()), res;
  if (!r) return ncclSuccess;
  auto* q = new Request{r, true, tags[0], nullptr, {}};
  profileStart(q, phandle, sizes[0]);
  *request = q;
  return ncclSuccess;
}
ncclResult_t irecvInt(void* comm, int n, void** data, int* sizes, int* tags, void** mhandles, void** request) {
  if (n != 1) return ncclInternalError;
  const size_t size = (size_t)sizes[0];
  return irecv(comm, n, data, &size, tags, mhandles, request);
}
ncclResult_t iflush(void*, int, void**, int*, void**, void** request) {
  *request = nullptr;  // host memory needs no flush
  return ncclSuccess;
}
ncclResult_t test(void* request, int* done, int* sizes) {
  auto* r = static_cast<Request*>(request);
  size_t size = 0;
  uint64_t tag = 0;
  ncclResult_t res = net()->test(r->req, done, &size, nullptr, &tag);
  if (res != ncclSuccess) {
    PLUGIN_LOG("test: %s", lastError());
    profileStop(r);
    delete r;
    return res;
  }
  if (!*done) return ncclSuccess;
  profileStop(r);
  const bool mismatch = r->recv && (int)(uint32_t)(tag >> 8) != r->tag;
  if (mismatch) PLUGIN_LOG("a message with tag %d arrived where tag %d was posted", (int)(tag >> 8), r->tag);
  if (sizes) *sizes = (int)size;
  delete r;
  return mismatch ? ncclRemoteError : ncclSuccess;
}
ncclResult_t closeSend(void* comm) {
  auto* c = static_cast<Comm*>(comm);
  ncclResult_t res = net()->closeSend(c->send);
  delete c;
  return res;
}
ncclResult_t closeRecv(void* comm) {
  auto* c = static_cast<Comm*>(comm);
  ncclResult_t res = net()->closeRecv(c->recv);
  delete c;
  return res;
}
ncclResult_t closeListen(void* comm) { return net()->closeListen(static_cast<NetListenComm*>(comm)); }

// v6's entry points.
ncclResult_t initV6(ncclDebugLogger_t log) { return logger = log, pluginInit(); }
ncclResult_t propsV6(int dev, ncclNetProperties_v6_t* p) { return properties(dev, p); }
ncclResult_t connectV6(int dev, void* handle, void** sendComm) { return connect(dev, handle, sendComm); }
ncclResult_t acceptV6(void* l, void** r) { return accept(l, r); }

#ifndef BATON_NET_V6_ONLY
// v11's: a context per communicator, which this plugin does not need (one back-end per process).
int contexts = 0;
ncclResult_t initV11(void** ctx, uint64_t, ncclNetCommConfig_v11_t*, ncclDebugLogger_t log,
                     ncclProfilerCallback_t prof) {
  logger = log;
  profiler = prof;
  *ctx = &contexts;
  return pluginInit();
}
ncclResult_t propsV11(int dev, ncclNetProperties_v11_t* p) {
  ncclResult_t res = properties(dev, p);
  if (res == ncclSuccess) {
    p->vProps.ndevs = 1, p->vProps.devs[0] = dev;
    p->maxP2pBytes = p->maxCollBytes = 1ull << 30;
    p->maxMultiRequestSize = 1;
  }
  return res;
}
ncclResult_t listenV11(void*, int dev, void* handle, void** l) { return listen(dev, handle, l); }
ncclResult_t connectV11(void*, int dev, void* handle, void** s, ncclNetDeviceHandle_v11_t**) {
  return connect(dev, handle, s);
}
ncclResult_t acceptV11(void* l, void** r, ncclNetDeviceHandle_v11_t**) { return accept(l, r); }
ncclResult_t finalizeV11(void*) { return ncclSuccess; }
ncclResult_t irecvP(void* comm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void** phandles,
                    void** request) {
  return irecv(comm, n, data, sizes, tags, mhandles, request, phandles ? phandles[0] : nullptr);
}
ncclResult_t isendP(void* comm, void* data, size_t size, int tag, void* mhandle, void* phandle, void** request) {
  return isend(comm, data, size, tag, mhandle, request, phandle);
}
#endif

}  // namespace

extern "C" {

__attribute__((visibility("default"))) ncclNet_v6_t ncclNetPlugin_v6 = {
    .name = "baton-socket",
    .init = initV6,
    .devices = devices,
    .getProperties = propsV6,
    .listen = listen,
    .connect = connectV6,
    .accept = acceptV6,
    .regMr = regMrInt,
    .regMrDmaBuf = nullptr,
    .deregMr = deregMr,
    .isend = isendInt,
    .irecv = irecvInt,
    .iflush = iflush,
    .test = test,
    .closeSend = closeSend,
    .closeRecv = closeRecv,
    .closeListen = closeListen,
};

#ifndef BATON_NET_V6_ONLY
__attribute__((visibility("default"))) ncclNet_v11_t ncclNetPlugin_v11 = {
    .name = "baton-socket",
    .init = initV11,
    .devices = devices,
    .getProperties = propsV11,
    .listen = listenV11,
    .connect = connectV11,
    .accept = acceptV11,
    .regMr = regMr,
    .regMrDmaBuf = nullptr,
    .deregMr = deregMr,
    .isend = isendP,
    .irecv = irecvP,
    .iflush = iflush,
    .test = test,
    .closeSend = closeSend,
    .closeRecv = closeRecv,
    .closeListen = closeListen,
    .getDeviceMr = nullptr,
    .irecvConsumed = nullptr,
    .makeVDevice = nullptr,
    .finalize = finalizeV11,
    .setNetAttr = nullptr,
};
#endif
}

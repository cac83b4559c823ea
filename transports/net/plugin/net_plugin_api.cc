// One adapter per network plugin version (NCCL 2.28.9 accepts v6 .. v11): each maps the version's
// table onto PluginNetApi. The versions differ in small ways (include/baton/plugin_net.h lists
// them), so one template covers all six, its `if constexpr` lines naming the version a difference
// starts at.
#include <dlfcn.h>

#include <atomic>
#include <climits>
#include <cstring>
#include <type_traits>

#include "baton/plugin_net.h"
#include "misc/debug.h"
#include "misc/plugin_lib.h"
#include "net/plugin/net_plugin_api.h"

namespace baton {

namespace {

std::atomic<NetProfilerCallback> profilerCallback{nullptr};

// What a v10+ plugin gets as its profiler callback: the profiler host's, once it set one; until
// then no event (a plugin then skips its bookkeeping).
ncclResult_t profilerEvents(void** eHandle, int type, void* pHandle, int64_t pluginId, void* extData) {
  if (NetProfilerCallback cb = profilerCallback.load(std::memory_order_acquire))
    return cb(eHandle, type, pHandle, pluginId, extData);
  if (eHandle && type == ncclProfilerNetEventStart) *eHandle = nullptr;
  return ncclSuccess;
}

template <int V, class Net, class Props>
class VersionedPluginNet : public PluginNetApi {
 public:
  explicit VersionedPluginNet(Net* net) : net_(net) {}
  int version() const override { return V; }
  const char* name() const override { return net_->name; }

  ncclResult_t init() override {
    if constexpr (V >= 11) {
      ncclNetCommConfig_v11_t config{NCCL_NET_TRAFFIC_CLASS_UNDEF};
      return net_->init(&ctx_, 0, &config, pluginLogger, profilerEvents);
    } else if constexpr (V >= 10) {
      return net_->init(pluginLogger, profilerEvents);
    } else {
      return net_->init(pluginLogger);
    }
  }
  ncclResult_t devices(int* ndev) override { return net_->devices(ndev); }
  ncclResult_t getProperties(int dev, NetProperties* out) override {
    Props p;
    memset(&p, 0, sizeof p);
    ncclResult_t res = net_->getProperties(dev, &p);
    if (res != ncclSuccess) return res;
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", p.name ? p.name : "?");
    snprintf(out->pciPath, sizeof out->pciPath, "%s", p.pciPath ? p.pciPath : "");
    out->guid = p.guid;
    out->ptrSupport = p.ptrSupport;
    out->speedMbps = p.speed;
    out->port = p.port;
    out->latencyUs = p.latency;
    out->maxComms = p.maxComms;
    out->maxRecvs = p.maxRecvs;
    return ncclSuccess;
  }
  ncclResult_t listen(int dev, void* handle, void** listenComm) override {
    if constexpr (V >= 11) return net_->listen(ctx_, dev, handle, listenComm);
    else return net_->listen(dev, handle, listenComm);
  }
  ncclResult_t connect(int dev, void* handle, void** sendComm) override {
    if constexpr (V >= 11) {
      ncclNetDeviceHandle_v11_t* devComm = nullptr;  // null: no device offload wanted
      return net_->connect(ctx_, dev, handle, sendComm, &devComm);
    } else if constexpr (V >= 10) {
      ncclNetCommConfig_v10_t config{NCCL_NET_TRAFFIC_CLASS_UNDEF};
      ncclNetDeviceHandle_v10_t* devComm = nullptr;
      return net_->connect(dev, &config, handle, sendComm, &devComm);
    } else if constexpr (V >= 7) {
      ncclNetDeviceHandle_v7_t* devComm = nullptr;
      return net_->connect(dev, handle, sendComm, &devComm);
    } else {
      return net_->connect(dev, handle, sendComm);
    }
  }
  ncclResult_t accept(void* listenComm, void** recvComm) override {
    if constexpr (V >= 7) {
      ncclNetDeviceHandle_v7_t* devComm = nullptr;
      return net_->accept(listenComm, recvComm, &devComm);
    } else {
      return net_->accept(listenComm, recvComm);
    }
  }
  ncclResult_t regMr(void* comm, void* data, size_t size, int type, void** mhandle) override {
    if constexpr (V >= 8) {
      return net_->regMr(comm, data, size, type, mhandle);
    } else {
      BATON_CHECK(fitsInt(size, "regMr"));
      return net_->regMr(comm, data, (int)size, type, mhandle);
    }
  }
  ncclResult_t deregMr(void* comm, void* mhandle) override { return net_->deregMr(comm, mhandle); }
  ncclResult_t isend(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle,
                     void** request) override {
    if constexpr (V >= 10) {
      return net_->isend(sendComm, data, size, tag, mhandle, phandle, request);
    } else if constexpr (V >= 9) {
      return net_->isend(sendComm, data, size, tag, mhandle, request);
    } else {
      BATON_CHECK(fitsInt(size, "isend"));
      return net_->isend(sendComm, data, (int)size, tag, mhandle, request);
    }
  }
  ncclResult_t irecv(void* recvComm, void* data, size_t size, int tag, void* mhandle, void** request) override {
    void* datas[1] = {data};
    int tags[1] = {tag};
    void* mhandles[1] = {mhandle};
    if constexpr (V >= 9) {
      size_t sizes[1] = {size};
      void* phandles[1] = {nullptr};
      if constexpr (V >= 10) return net_->irecv(recvComm, 1, datas, sizes, tags, mhandles, phandles, request);
      else return net_->irecv(recvComm, 1, datas, sizes, tags, mhandles, request);
    } else {
      BATON_CHECK(fitsInt(size, "irecv"));
      int sizes[1] = {(int)size};
      return net_->irecv(recvComm, 1, datas, sizes, tags, mhandles, request);
    }
  }
  ncclResult_t test(void* request, int* done, size_t* size) override {
    int n = 0;
    ncclResult_t res = net_->test(request, done, &n);
    if (size) *size = n < 0 ? 0 : (size_t)n;
    return res;
  }
  ncclResult_t closeSend(void* c) override { return net_->closeSend(c); }
  ncclResult_t closeRecv(void* c) override { return net_->closeRecv(c); }
  ncclResult_t closeListen(void* c) override { return net_->closeListen(c); }

 private:
  static ncclResult_t fitsInt(size_t size, const char* call) {
    if (size <= (size_t)INT_MAX) return ncclSuccess;
    return batonError(ncclInvalidArgument, "NET/Plugin: %s of %zu bytes does not fit a v%d plugin's int size", call,
                      size, V);
  }
  Net* net_;
  void* ctx_ = nullptr;  // v11's context, one for the process
};

// The functions baton calls: a table missing one is unsupported (NCCL would crash on it later).
template <class Net>
bool complete(const Net* n) {
  return n->name && n->init && n->devices && n->getProperties && n->listen && n->connect && n->accept && n->regMr &&
         n->deregMr && n->isend && n->irecv && n->test && n->closeSend && n->closeRecv && n->closeListen;
}

template <int V, class Net, class Props>
std::unique_ptr<PluginNetApi> bindVersion(void* lib, const char* symbol) {
  auto* net = static_cast<Net*>(dlsym(lib, symbol));
  if (!net) return nullptr;
  if (!complete(net)) {
    BATON_INFO(kSubInit | kSubNet, "NET/Plugin: %s has a null name or function; skipping it", symbol);
    return nullptr;
  }
  return std::make_unique<VersionedPluginNet<V, Net, Props>>(net);
}

}  // namespace

void setNetProfilerCallback(NetProfilerCallback cb) { profilerCallback.store(cb, std::memory_order_release); }

std::unique_ptr<PluginNetApi> bindPluginNet(void* lib) {
  std::unique_ptr<PluginNetApi> api;
  if (!api) api = bindVersion<11, ncclNet_v11_t, ncclNetProperties_v11_t>(lib, "ncclNetPlugin_v11");
  if (!api) api = bindVersion<10, ncclNet_v10_t, ncclNetProperties_v10_t>(lib, "ncclNetPlugin_v10");
  if (!api) api = bindVersion<9, ncclNet_v9_t, ncclNetProperties_v9_t>(lib, "ncclNetPlugin_v9");
  if (!api) api = bindVersion<8, ncclNet_v8_t, ncclNetProperties_v8_t>(lib, "ncclNetPlugin_v8");
  if (!api) api = bindVersion<7, ncclNet_v7_t, ncclNetProperties_v7_t>(lib, "ncclNetPlugin_v7");
  if (!api) api = bindVersion<6, ncclNet_v6_t, ncclNetProperties_v6_t>(lib, "ncclNetPlugin_v6");
  return api;
}

}  // namespace baton

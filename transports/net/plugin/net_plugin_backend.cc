// baton's NET transport over an external network plugin (NCCL_NET_PLUGIN, lesson 16).
//
// baton's back-end interface (net_backend.h) and NCCL's plugin interface differ in one place that
// matters: baton's receiver learns what arrived from the message (a 64-bit tag naming the FIFO
// step's protocol and payload size, and a choice among candidate buffers), while NCCL's proxy knows
// it in advance from the operation and an NCCL plugin reports only the byte count. So each baton
// message crosses a plugin as two plugin messages on the same comm:
//
//   frame    16 bytes {tag, size}, plugin tag 0, from a small registered ring of frames
//   payload  `size` bytes straight from/to the caller's buffer, plugin tag 1 (none when size is 0)
//
// The receiver posts the frame, then posts the payload into the candidate the frame's tag selects.
// Plugins deliver a comm's messages in the order they were posted (NCCL relies on the same), so a
// sender posts a frame only after the previous payload was taken: an isend that finds a payload
// still waiting returns "later". The cost is one small message per step; the data is not copied.
#include <cstring>
#include <memory>
#include <string>

#include "misc/debug.h"
#include "net/plugin/net_plugin_api.h"

namespace baton {

namespace {

struct Frame {
  uint64_t tag;
  uint64_t size;
};
constexpr int kFrameTag = 0, kPayloadTag = 1;  // the plugin-level tags
constexpr int kFrameRing = 32;                 // frames a send comm can have in flight

struct PluginRequest;

struct PluginSendComm {
  void* comm = nullptr;
  Frame frames[kFrameRing] = {};
  void* framesMh = nullptr;
  uint64_t nextFrame = 0;
  int inFlight = 0;
  PluginRequest* waiting = nullptr;  // its payload is not posted yet: nothing else may be
};

struct PluginRecvComm {
  void* comm = nullptr;
  Frame frame = {};
  void* frameMh = nullptr;
  bool busy = false;  // a receive is posted (one at a time: the frame buffer is shared)
};

struct PluginListenComm {
  void* comm = nullptr;
};

struct PluginRequest {
  bool send = false;
  PluginSendComm* s = nullptr;
  PluginRecvComm* r = nullptr;
  void* frameReq = nullptr;
  void* dataReq = nullptr;
  bool frameDone = false, dataPosted = false, dataDone = false;
  // send: the payload; receive: the candidates, then (after the frame) the chosen one
  int n = 0;
  void* data[kNetMaxRecvs + 4] = {};
  size_t sizes[kNetMaxRecvs + 4] = {};
  uint64_t tags[kNetMaxRecvs + 4] = {};
  void* mhs[kNetMaxRecvs + 4] = {};
  int index = 0;
  uint64_t tag = 0, size = 0;
  void* phandle = nullptr;  // a send payload's profiler reference
};

void* mh(NetMemHandle* m) { return reinterpret_cast<void*>(m); }

class PluginNetBackend : public NetBackend {
 public:
  PluginNetBackend(std::unique_ptr<PluginNetApi> api, std::string file)
      : api_(std::move(api)), file_(std::move(file)) {}
  const char* name() const override { return api_->name(); }
  ncclResult_t init() override { return ncclSuccess; }  // the loader ran the plugin's init and devices
  int devices() const override {
    int n = 0;
    return api_->devices(&n) == ncclSuccess ? n : 0;
  }
  ncclResult_t getProperties(int dev, NetProperties* props) const override {
    ncclResult_t res = api_->getProperties(dev, props);
    if (res != ncclSuccess) return fail(res, "getProperties");
    props->maxRecvs = kNetMaxRecvs;  // candidates are chosen here, above the plugin
    return ncclSuccess;
  }

  ncclResult_t listen(int dev, NetHandle* handle, NetListenComm** out) override {
    auto* l = new PluginListenComm;
    ncclResult_t res = api_->listen(dev, handle->data, &l->comm);
    if (res != ncclSuccess || !l->comm) {
      delete l;
      return fail(res != ncclSuccess ? res : ncclInternalError, "listen");
    }
    *out = reinterpret_cast<NetListenComm*>(l);
    return ncclSuccess;
  }
  ncclResult_t connect(int dev, const NetHandle& handle, const volatile int*, NetSendComm** out) override {
    *out = nullptr;
    NetHandle copy = handle;  // the plugin may write into it
    void* comm = nullptr;
    ncclResult_t res = api_->connect(dev, copy.data, &comm);
    if (res != ncclSuccess) return fail(res, "connect");
    if (!comm) return ncclSuccess;  // not yet: the caller calls again
    auto* s = new PluginSendComm;
    s->comm = comm;
    res = api_->regMr(comm, s->frames, sizeof s->frames, kNetPtrHost, &s->framesMh);
    if (res != ncclSuccess) {
      api_->closeSend(comm);
      delete s;
      return fail(res, "regMr");
    }
    *out = reinterpret_cast<NetSendComm*>(s);
    return ncclSuccess;
  }
  ncclResult_t accept(NetListenComm* listenComm, NetRecvComm** out) override {
    *out = nullptr;
    void* comm = nullptr;
    ncclResult_t res = api_->accept(reinterpret_cast<PluginListenComm*>(listenComm)->comm, &comm);
    if (res != ncclSuccess) return fail(res, "accept");
    if (!comm) return ncclSuccess;
    auto* r = new PluginRecvComm;
    r->comm = comm;
    res = api_->regMr(comm, &r->frame, sizeof r->frame, kNetPtrHost, &r->frameMh);
    if (res != ncclSuccess) {
      api_->closeRecv(comm);
      delete r;
      return fail(res, "regMr");
    }
    *out = reinterpret_cast<NetRecvComm*>(r);
    return ncclSuccess;
  }

  ncclResult_t regMr(NetSendComm* send, NetRecvComm* recv, void* data, size_t size, int type,
                     NetMemHandle** mhandle) override {
    void* comm = send ? reinterpret_cast<PluginSendComm*>(send)->comm : reinterpret_cast<PluginRecvComm*>(recv)->comm;
    void* m = nullptr;
    ncclResult_t res = api_->regMr(comm, data, size, type, &m);
    if (res != ncclSuccess) return fail(res, "regMr");
    *mhandle = reinterpret_cast<NetMemHandle*>(m);
    return ncclSuccess;
  }
  ncclResult_t deregMr(NetSendComm* send, NetRecvComm* recv, NetMemHandle* mhandle) override {
    void* comm = send ? reinterpret_cast<PluginSendComm*>(send)->comm : reinterpret_cast<PluginRecvComm*>(recv)->comm;
    ncclResult_t res = api_->deregMr(comm, mh(mhandle));
    return res == ncclSuccess ? res : fail(res, "deregMr");
  }

  ncclResult_t isend(NetSendComm* comm, void* data, size_t size, uint64_t tag, NetMemHandle* mhandle,
                     NetRequest** request) override {
    return isendProfiled(comm, data, size, tag, mhandle, nullptr, request);
  }
  // The payload carries the step's profiler reference (the frame is baton's own business).
  ncclResult_t isendProfiled(NetSendComm* comm, void* data, size_t size, uint64_t tag, NetMemHandle* mhandle,
                             void* phandle, NetRequest** request) override {
    auto* s = reinterpret_cast<PluginSendComm*>(comm);
    *request = nullptr;
    if (s->waiting) BATON_CHECK(postPayload(s->waiting));
    if (s->waiting || s->inFlight == kFrameRing) return ncclSuccess;  // later
    Frame* f = &s->frames[s->nextFrame % kFrameRing];
    f->tag = tag;
    f->size = size;
    void* frameReq = nullptr;
    ncclResult_t res = api_->isend(s->comm, f, sizeof *f, kFrameTag, s->framesMh, nullptr, &frameReq);
    if (res != ncclSuccess) return fail(res, "isend");
    if (!frameReq) return ncclSuccess;
    auto* req = new PluginRequest;
    req->send = true, req->s = s, req->frameReq = frameReq;
    req->data[0] = data, req->sizes[0] = size, req->mhs[0] = mh(mhandle), req->tag = tag, req->size = size;
    req->phandle = phandle;
    ++s->nextFrame, ++s->inFlight;
    *request = reinterpret_cast<NetRequest*>(req);
    if (size == 0) {
      req->dataPosted = req->dataDone = true;
      return ncclSuccess;
    }
    s->waiting = req;
    return postPayload(req);  // "later" leaves it waiting; test() and the next isend try again
  }

  ncclResult_t irecv(NetRecvComm* comm, int n, void** data, const size_t* sizes, const uint64_t* tags,
                     NetMemHandle** mhandles, NetRequest** request) override {
    auto* r = reinterpret_cast<PluginRecvComm*>(comm);
    *request = nullptr;
    if (n < 1 || n > kNetMaxRecvs + 4)
      return batonError(ncclInternalError, "NET/Plugin %s: irecv with %d buffers", name(), n);
    if (r->busy) return ncclSuccess;
    void* frameReq = nullptr;
    ncclResult_t res = api_->irecv(r->comm, &r->frame, sizeof r->frame, kFrameTag, r->frameMh, &frameReq);
    if (res != ncclSuccess) return fail(res, "irecv");
    if (!frameReq) return ncclSuccess;
    auto* req = new PluginRequest;
    req->r = r, req->frameReq = frameReq, req->n = n;
    for (int i = 0; i < n; ++i)
      req->data[i] = data[i], req->sizes[i] = sizes[i], req->tags[i] = tags[i], req->mhs[i] = mh(mhandles[i]);
    r->busy = true;
    *request = reinterpret_cast<NetRequest*>(req);
    return ncclSuccess;
  }

  ncclResult_t test(NetRequest* request, int* done, size_t* size, int* index, uint64_t* tag) override {
    auto* req = reinterpret_cast<PluginRequest*>(request);
    *done = 0;
    ncclResult_t res = req->send ? progressSend(req) : progressRecv(req);
    if (res != ncclSuccess) {
      finish(req);
      return res;
    }
    if (!req->frameDone || !req->dataDone) return ncclSuccess;
    *done = 1;
    if (size) *size = req->size;
    if (index) *index = req->index;
    if (tag) *tag = req->tag;
    finish(req);
    return ncclSuccess;
  }

  ncclResult_t closeSend(NetSendComm* comm) override {
    auto* s = reinterpret_cast<PluginSendComm*>(comm);
    if (s->framesMh) api_->deregMr(s->comm, s->framesMh);
    ncclResult_t res = api_->closeSend(s->comm);
    delete s;
    return res == ncclSuccess ? res : fail(res, "closeSend");
  }
  ncclResult_t closeRecv(NetRecvComm* comm) override {
    auto* r = reinterpret_cast<PluginRecvComm*>(comm);
    if (r->frameMh) api_->deregMr(r->comm, r->frameMh);
    ncclResult_t res = api_->closeRecv(r->comm);
    delete r;
    return res == ncclSuccess ? res : fail(res, "closeRecv");
  }
  ncclResult_t closeListen(NetListenComm* comm) override {
    auto* l = reinterpret_cast<PluginListenComm*>(comm);
    ncclResult_t res = api_->closeListen(l->comm);
    delete l;
    return res == ncclSuccess ? res : fail(res, "closeListen");
  }
  bool handleHoldsAddress() const override { return false; }

 private:
  // A plugin's error, in baton's words: which plugin and which call (the plugin logs its own why).
  ncclResult_t fail(ncclResult_t res, const char* call) const {
    static const char* const names[] = {"ncclSuccess",       "ncclUnhandledCudaError", "ncclSystemError",
                                        "ncclInternalError", "ncclInvalidArgument",    "ncclInvalidUsage",
                                        "ncclRemoteError",   "ncclInProgress"};
    const char* what = (int)res >= 0 && (int)res < 8 ? names[res] : "an unknown code";
    return batonError(res, "NET/Plugin %s (%s): %s returned %s", api_->name(), file_.c_str(), call, what);
  }

  ncclResult_t postPayload(PluginRequest* req) {
    ncclResult_t res =
        api_->isend(req->s->comm, req->data[0], req->sizes[0], kPayloadTag, req->mhs[0], req->phandle, &req->dataReq);
    if (res != ncclSuccess) return fail(res, "isend");
    if (req->dataReq) req->dataPosted = true, req->s->waiting = nullptr;
    return ncclSuccess;
  }

  ncclResult_t progressSend(PluginRequest* req) {
    if (!req->dataPosted && req->s->waiting == req) BATON_CHECK(postPayload(req));
    if (!req->frameDone) BATON_CHECK(testOne(req->frameReq, &req->frameDone, nullptr));
    if (req->dataPosted && !req->dataDone) BATON_CHECK(testOne(req->dataReq, &req->dataDone, nullptr));
    return ncclSuccess;
  }

  ncclResult_t progressRecv(PluginRequest* req) {
    if (!req->frameDone) {
      size_t got = 0;
      BATON_CHECK(testOne(req->frameReq, &req->frameDone, &got));
      if (!req->frameDone) return ncclSuccess;
      const Frame f = req->r->frame;
      req->tag = f.tag, req->size = f.size, req->index = -1;
      for (int i = 0; i < req->n && req->index < 0; ++i)
        if (req->tags[i] == (f.tag & kNetTagMatchMask)) req->index = i;
      if (got != sizeof f || req->index < 0 || f.size > req->sizes[req->index])
        return batonError(ncclRemoteError,
                          "NET/Plugin %s: malformed frame (%zu bytes, tag %#llx, %llu payload bytes): no buffer fits",
                          name(), got, (unsigned long long)f.tag, (unsigned long long)f.size);
      if (f.size == 0) req->dataPosted = req->dataDone = true;
    }
    if (!req->dataPosted) {
      const int i = req->index;
      ncclResult_t res = api_->irecv(req->r->comm, req->data[i], req->size, kPayloadTag, req->mhs[i], &req->dataReq);
      if (res != ncclSuccess) return fail(res, "irecv");
      if (!req->dataReq) return ncclSuccess;
      req->dataPosted = true;
    }
    if (!req->dataDone) {
      size_t got = 0;
      BATON_CHECK(testOne(req->dataReq, &req->dataDone, &got));
      if (req->dataDone && got != req->size)
        return batonError(ncclRemoteError, "NET/Plugin %s: payload of %zu bytes where the frame announced %llu", name(),
                          got, (unsigned long long)req->size);
    }
    return ncclSuccess;
  }

  ncclResult_t testOne(void* preq, bool* isDone, size_t* got) {
    int d = 0;
    ncclResult_t res = api_->test(preq, &d, got);
    if (res != ncclSuccess) return fail(res, "test");
    *isDone = d != 0;
    return ncclSuccess;
  }

  void finish(PluginRequest* req) {
    if (req->send) {
      --req->s->inFlight;
      if (req->s->waiting == req) req->s->waiting = nullptr;
    } else {
      req->r->busy = false;
    }
    delete req;
  }

  std::unique_ptr<PluginNetApi> api_;
  std::string file_;
};

}  // namespace

std::unique_ptr<NetBackend> makePluginNetBackend(std::unique_ptr<PluginNetApi> api, std::string file) {
  return std::make_unique<PluginNetBackend>(std::move(api), std::move(file));
}

}  // namespace baton

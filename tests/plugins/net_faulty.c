/* Network plugins that go wrong in one way each, for tests/tools/net_plugin_test.sh. Built as
 *   libnccl-net-zerodev.so   (-DNET_ZERO_DEVICES)  init succeeds, devices() reports 0
 *   libnccl-net-failinit.so  (-DNET_FAIL_INIT)     init returns ncclSystemError
 *   libnccl-net-failconn.so  (-DNET_FAIL_CONNECT)  one device that listens, but connect fails
 *   libnccl-net-v5.so, -v12.so (-DNET_SYMBOL=...)   a table of a version NCCL 2.28 does not accept
 * baton must name each in one line and carry on with its own network (the first two), or fail
 * the communicator with a message naming the plugin and never hang (the third). Exports
 * ncclNetPlugin_v8, a middle version, so the v8 adapter is exercised too. */
#include <stdlib.h>
#include <string.h>

#include "baton/plugin_net.h"

static ncclDebugLogger_t logFn;
static int listens;

static ncclResult_t init(ncclDebugLogger_t log) {
  logFn = log;
#ifdef NET_FAIL_INIT
  logFn(NCCL_LOG_WARN, NCCL_NET, __FILE__, __LINE__, "faulty net plugin: failing init on purpose");
  return ncclSystemError;
#else
  return ncclSuccess;
#endif
}
static ncclResult_t devices(int* n) {
#ifdef NET_ZERO_DEVICES
  *n = 0;
#else
  *n = 1;
#endif
  return ncclSuccess;
}
static ncclResult_t props(int dev, ncclNetProperties_v8_t* p) {
  (void)dev;
  memset(p, 0, sizeof *p);
  p->name = (char*)"faulty0";
  p->pciPath = (char*)"";
  p->ptrSupport = NCCL_PTR_HOST;
  p->speed = 1000;
  p->maxComms = 1024;
  p->maxRecvs = 1;
  return ncclSuccess;
}
static ncclResult_t listen_(int dev, void* handle, void** listenComm) {
  (void)dev;
  memset(handle, 0, NCCL_NET_HANDLE_MAXSIZE);
  *listenComm = &listens;
  ++listens;
  return ncclSuccess;
}
static ncclResult_t connect_(int dev, void* handle, void** sendComm, ncclNetDeviceHandle_v8_t** d) {
  (void)dev, (void)handle, (void)d;
  *sendComm = NULL;
  logFn(NCCL_LOG_WARN, NCCL_NET, __FILE__, __LINE__, "faulty net plugin: refusing to connect on purpose");
  return ncclSystemError;
}
static ncclResult_t accept_(void* listenComm, void** recvComm, ncclNetDeviceHandle_v8_t** d) {
  (void)listenComm, (void)d;
  *recvComm = NULL; /* nobody ever connects */
  return ncclSuccess;
}
static ncclResult_t regMr(void* c, void* data, size_t size, int type, void** m) {
  (void)c, (void)data, (void)size, (void)type;
  *m = NULL;
  return ncclSuccess;
}
static ncclResult_t deregMr(void* c, void* m) {
  (void)c, (void)m;
  return ncclSuccess;
}
static ncclResult_t isend(void* c, void* data, int size, int tag, void* m, void** req) {
  (void)c, (void)data, (void)size, (void)tag, (void)m;
  *req = NULL;
  return ncclInternalError;
}
static ncclResult_t irecv(void* c, int n, void** data, int* sizes, int* tags, void** m, void** req) {
  (void)c, (void)n, (void)data, (void)sizes, (void)tags, (void)m;
  *req = NULL;
  return ncclInternalError;
}
static ncclResult_t test(void* req, int* done, int* size) {
  (void)req, (void)size;
  *done = 0;
  return ncclInternalError;
}
static ncclResult_t closeComm(void* c) {
  (void)c;
  return ncclSuccess;
}
static ncclResult_t closeListen(void* c) {
  (void)c;
  --listens;
  return ncclSuccess;
}

/* -DNET_SYMBOL=ncclNetPlugin_v5 / _v12: the same table under a version baton (and NCCL 2.28) does
 * not accept, older or newer: it must be named unsupported. */
#ifndef NET_SYMBOL
#define NET_SYMBOL ncclNetPlugin_v8
#endif
__attribute__((visibility("default"))) ncclNet_v8_t NET_SYMBOL = {
    .name = "Faulty",
    .init = init,
    .devices = devices,
    .getProperties = props,
    .listen = listen_,
    .connect = connect_,
    .accept = accept_,
    .regMr = regMr,
    .deregMr = deregMr,
    .isend = isend,
    .irecv = irecv,
    .test = test,
    .closeSend = closeComm,
    .closeRecv = closeComm,
    .closeListen = closeListen,
};

// The network back-end interface: what the NET transport (net_transport.cc) and its proxy need from
// a network, modelled on NCCL's network plugin (ncclNet_v8..v11, docs/lessons/08-network-and-proxy.md).
//
//   receiver: listen(dev) -> a 128-byte handle, sent to the peer inside the connect info
//   sender:   connect(dev, handle) until it yields a send comm   (non-blocking, as in NCCL)
//   receiver: accept(listen comm) until it yields a recv comm    (non-blocking, as in NCCL)
//   data:     isend / irecv post requests; test() drives them and reports completion; a request
//             that cannot be posted now comes back null ("try again later", as in NCCL)
//
// Two built-in implementations: sockets (transports/net/socket/) and InfiniBand verbs
// (transports/net/ib/); a third carries these calls over an external NCCL network plugin
// (transports/net/plugin/). NCCL_NET picks one by name; without it a plugin goes first, then IB
// when it has a device, then sockets.
//
// Differences from NCCL's plugin, on purpose:
//   - tags are 64 bits. The low 8 bits select the buffer of an irecv (below); the whole tag reaches
//     the receiver, so a message can carry a small descriptor (the NET transport puts a FIFO step's
//     protocol there, and the step's payload byte count in the upper bits).
//   - irecv with n > 1 buffers posts n *candidates* for ONE message: the message lands in the
//     buffer whose tags[i] equals its tag's low 8 bits. (NCCL's n > 1 receives n messages at once.)
//   - every call that can fail returns ncclSystemError (local trouble) or ncclRemoteError (the peer:
//     refused, reset, closed, malformed or oversized frame) with a message naming the peer's address.
// Threading: one comm is used by one thread at a time (the proxy); listen/connect/accept may run on
// any thread. Every object is closed exactly once by its close call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "nccl.h"

namespace baton {

constexpr size_t kNetHandleBytes = 128;  // NCCL_NET_HANDLE_MAXSIZE
constexpr int kNetMaxRecvs = 8;          // buffers one irecv may offer
constexpr uint64_t kNetTagMatchMask = 0xff;

enum NetPtrType : int { kNetPtrHost = 1, kNetPtrCuda = 2, kNetPtrDmaBuf = 4 };  // NCCL_PTR_*

struct NetProperties {
  char name[64];      // interface or HCA name ("eth0", "mlx5_0:1")
  char pciPath[256];  // sysfs path of the device ("" when it has none)
  uint64_t guid;
  int ptrSupport;   // NetPtrType bits: what regMr accepts
  int speedMbps;    // link speed
  int port;         // IB port (1-based) or 0
  float latencyUs;  // 0: unknown
  int maxComms;     // connections it can hold
  int maxRecvs;     // buffers one irecv may offer
};

struct NetHandle {
  char data[kNetHandleBytes];
};

// Opaque objects of a back-end.
struct NetListenComm;
struct NetSendComm;
struct NetRecvComm;
struct NetMemHandle;
struct NetRequest;

class NetBackend {
 public:
  virtual ~NetBackend() = default;
  virtual const char* name() const = 0;
  // Finds devices. Called once; a back-end without devices still initialises (devices() = 0).
  virtual ncclResult_t init() = 0;
  virtual int devices() const = 0;
  virtual ncclResult_t getProperties(int dev, NetProperties* props) const = 0;

  virtual ncclResult_t listen(int dev, NetHandle* handle, NetListenComm** listenComm) = 0;
  // *sendComm stays null until the connection is established; call again (the caller owns the
  // deadline). Sockets finish in one call, waiting at most BATON_BOOTSTRAP_TIMEOUT for an
  // unreachable peer and returning early once `abortFlag` (may be null) is raised. A peer that
  // refuses for longer than a few retries is ncclRemoteError.
  virtual ncclResult_t connect(int dev, const NetHandle& handle, const volatile int* abortFlag,
                               NetSendComm** sendComm) = 0;
  // Non-blocking: *recvComm stays null until the peer has connected; call again.
  virtual ncclResult_t accept(NetListenComm* listenComm, NetRecvComm** recvComm) = 0;

  // Registers memory for the comm (sockets: a no-op handle; verbs: an MR from a cache).
  // `type` is a NetPtrType. Both comm kinds can register: pass exactly one of send/recv.
  virtual ncclResult_t regMr(NetSendComm* send, NetRecvComm* recv, void* data, size_t size, int type,
                             NetMemHandle** mhandle) = 0;
  virtual ncclResult_t deregMr(NetSendComm* send, NetRecvComm* recv, NetMemHandle* mhandle) = 0;

  // Posts a send of `size` bytes. *request = null: cannot post now, try again later.
  virtual ncclResult_t isend(NetSendComm* comm, void* data, size_t size, uint64_t tag, NetMemHandle* mhandle,
                             NetRequest** request) = 0;
  // isend for a step the profiler watches: `phandle` is handed to a network plugin, which may
  // report its own events under the step's (NCCL's ncclProfileNetPlugin). Others ignore it.
  virtual ncclResult_t isendProfiled(NetSendComm* comm, void* data, size_t size, uint64_t tag, NetMemHandle* mhandle,
                                     void* phandle, NetRequest** request) {
    (void)phandle;
    return isend(comm, data, size, tag, mhandle, request);
  }
  // Posts n (1..maxRecvs) candidate buffers for the next message (see above).
  virtual ncclResult_t irecv(NetRecvComm* comm, int n, void** data, const size_t* sizes, const uint64_t* tags,
                             NetMemHandle** mhandles, NetRequest** request) = 0;
  // Drives the request. When *done: *size is the bytes received (or sent), *index the irecv
  // buffer the message landed in, *tag its full tag (sends: the tag sent); the request is freed.
  // An error frees it too.
  virtual ncclResult_t test(NetRequest* request, int* done, size_t* size, int* index, uint64_t* tag) = 0;

  // A descriptor that turns readable when a message (or the peer's end) arrives, or when a peer
  // connects: the proxy sleeps on it between operations. -1: none (the proxy polls on a timer).
  virtual int pollFd(NetRecvComm*) const { return -1; }
  virtual int pollFd(NetListenComm*) const { return -1; }

  // Ends the connection now without freeing it (the peer sees it close; later calls fail): a
  // failed communicator tells its remote peers this way. The close call still frees it.
  virtual void shutdown(NetSendComm*) {}
  virtual void shutdown(NetRecvComm*) {}
  // Whether a listen handle starts with the listener's SocketAddress (the built-in back-ends'
  // do; a plugin's handle is its own), so messages can name the peer's address.
  virtual bool handleHoldsAddress() const { return true; }

  virtual ncclResult_t closeSend(NetSendComm* comm) = 0;
  virtual ncclResult_t closeRecv(NetRecvComm* comm) = 0;
  virtual ncclResult_t closeListen(NetListenComm* comm) = 0;
};

// What network plugins (v10+) call to report their own events; the profiler host sets it
// (src/profiler/profiler_events.cc), and until then their events go nowhere. Its arguments are
// NCCL's ncclProfilerCallback_t's (include/baton/plugin_net.h).
using NetProfilerCallback = ncclResult_t (*)(void** eHandle, int type, void* pHandle, int64_t pluginId, void* extData);
void setNetProfilerCallback(NetProfilerCallback cb);

// What isendProfiled's phandle points to: the callback to report a back-end's own events with,
// under the step the phandle stands for. A built-in back-end calls it; an external plugin got the
// same function at init and is handed the whole phandle.
struct NetProfileRef {
  NetProfilerCallback report = nullptr;
};

// The built-in back-ends (one instance each, initialised on first use).
NetBackend* socketNetBackend();
NetBackend* ibNetBackend();
// External network plugins (NCCL_NET_PLUGIN; transports/net/plugin/): those that loaded and
// initialised with at least one device, in the order NCCL_NET_PLUGIN names them. Loaded once.
const std::vector<NetBackend*>& pluginNetBackends();
// NCCL's order: NCCL_NET's choice by name (a plugin's, "IB" or "Socket", case-insensitive), else
// the first plugin, else IB when it has a device, else sockets. An NCCL_NET naming none of them is
// ncclInvalidArgument listing the names there are.
ncclResult_t selectNetBackend(NetBackend** out);

}  // namespace baton

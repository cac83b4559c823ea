// The InfiniBand verbs back-end's private objects (ib_backend.cc explains the protocol and its ordering).
//   ib_devices.cc  devices, ports, RoCE GID choice, protection domains, the memory-registration cache
//   ib_connect.cc  listen / connect / accept over an out-of-band TCP socket, QP state changes, close
//   ib_data.cc     isend / irecv / test: the receiver-driven RDMA-write data path
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <string>

#include "misc/socket.h"
#include "net/net_backend.h"

namespace baton {
namespace netib {

constexpr uint32_t kIbSocketType = 4;  // NCCL's ncclSocketTypeNetIb, in the OOB handshake
constexpr int kMaxRequests = 32;       // outstanding requests per comm (NCCL_NET_MAX_REQUESTS)
constexpr uint32_t kWireVersion = 1;   // both ends must run this layout of ConnInfo/CtsEntry/DoneRecord

// NCCL_IB_HCA: comma list of "name[:port]"; names are prefixes unless the list starts with '=';
// a leading '^' keeps every port the list does NOT name. True: port `port` of HCA `dev` is used.
bool hcaSelected(const std::string& spec, const std::string& dev, int port);

// Read once at init (envInt logs every read).
struct IbParams {
  int timeout, retryCnt, sl, tc, pkey, gidIndex, rocev;
};

struct IbDev;
// A registration: page-aligned [start, end) of one device's protection domain, shared by refcount.
struct IbMr {
  IbDev* dev;
  uintptr_t start, end;
  ibv_mr* mr;
  int refs;
};

// One ACTIVE port of one HCA ("mlx5_0:1"). Contexts stay open for the life of the process.
struct IbDev {
  std::string name, devName;
  int port = 0;
  ibv_context* ctx = nullptr;
  ibv_port_attr attr{};
  int maxQp = 0;
  int gidIndex = 0;
  ibv_gid gid{};
  int speedMbps = 0;
  uint64_t guid = 0;
  std::string pciPath;
  int ptrSupport = kNetPtrHost;
  std::mutex mu;  // guards pd, pdRefs, mrs
  ibv_pd* pd = nullptr;
  int pdRefs = 0;  // comms + registrations using pd
  std::list<IbMr> mrs;
};

// Receiver -> sender, RDMA-written into the sender's fifo: where the next message may land.
struct CtsEntry {
  uint64_t addr[kNetMaxRecvs];
  uint64_t size[kNetMaxRecvs];
  uint32_t rkey[kNetMaxRecvs];
  uint8_t tag[kNetMaxRecvs];  // low 8 bits of each candidate's tag
  int32_t n;
  uint32_t pad;
  uint64_t seq;  // request sequence + 1; last in address order (see ib_backend.cc)
};
static_assert(offsetof(CtsEntry, seq) + sizeof(uint64_t) == sizeof(CtsEntry), "seq must be CtsEntry's last word");
// Sender -> receiver, RDMA-written with immediate (imm = slot): what arrived.
struct DoneRecord {
  uint64_t tag, size;
  uint32_t index, seq;
};
// One registered block per comm; each side's peer writes into one half, the other half is the
// source of this side's own writes (sender: cts remote-written, rec local; receiver: the reverse).
struct CommMem {
  CtsEntry cts[kMaxRequests];
  DoneRecord rec[kMaxRequests];
};

// Exchanged both ways over the OOB socket.
struct ConnInfo {
  uint32_t version, qpn, psn;
  uint16_t lid;
  uint8_t linkLayer, mtu;  // IBV_LINK_LAYER_*, enum ibv_mtu
  uint8_t gid[16];
  uint64_t memAddr;  // this side's CommMem
  uint32_t memRkey, pad;
};

struct Handle {
  SocketAddress addr;
  uint64_t magic;
};
static_assert(sizeof(Handle) <= kNetHandleBytes, "Handle must fit NetHandle");

struct Comm;
struct Request {
  Comm* comm;
  bool inUse, done;
  uint64_t seq;
  size_t size;
  int index;
  uint64_t tag;
};

// A send or a receive comm (isSend says which); connection-setup fields are used until it is returned.
struct Comm {
  IbDev* dev = nullptr;
  bool isSend = false;
  int fd = -1;
  std::string peer;  // the peer's OOB address, for messages
  bool pdHeld = false;
  ibv_cq* cq = nullptr;
  ibv_qp* qp = nullptr;
  CommMem* mem = nullptr;
  ibv_mr* memMr = nullptr;
  ConnInfo local{}, remote{};
  uint64_t seq = 0;    // next request's sequence number
  int ctsPending = 0;  // receiver: CTS writes whose completion test() has not reaped yet
  Request reqs[kMaxRequests]{};
  ncclResult_t failed = ncclSuccess;  // a completion error poisons the comm
  std::string failure;
  // connection setup
  int stage = 0;
  size_t got = 0;
  uint32_t ready = 0;
  uint64_t deadlineNs = 0;
};

struct ListenComm {
  IbDev* dev;
  int fd;
  uint64_t magic;
  Comm* pending;  // an accept in progress
};

// ib_devices.cc
ncclResult_t ibInit();
int ibDevCount();
ncclResult_t ibDevice(const char* op, int dev, IbDev** out);  // an error naming why none is there
const IbParams& ibParams();
ncclResult_t ibProperties(int dev, NetProperties* props);
ncclResult_t pdGet(IbDev* d);
ncclResult_t pdPut(IbDev* d);
ncclResult_t mrRegister(IbDev* d, void* data, size_t size, int type, IbMr** out);
ncclResult_t mrDeregister(IbMr* m);

// ib_connect.cc
ncclResult_t ibListen(int dev, NetHandle* handle, NetListenComm** out);
ncclResult_t ibConnect(int dev, const NetHandle& handle, NetSendComm** out);
ncclResult_t ibAccept(NetListenComm* listen, NetRecvComm** out);
ncclResult_t ibCloseComm(Comm* c);
ncclResult_t ibCloseListen(NetListenComm* listen);

// ib_data.cc
ncclResult_t ibIsend(Comm* c, void* data, size_t size, uint64_t tag, IbMr* mr, NetRequest** request);
ncclResult_t ibIrecv(Comm* c, int n, void** data, const size_t* sizes, const uint64_t* tags, NetMemHandle** mrs,
                     NetRequest** request);
ncclResult_t ibTest(NetRequest* request, int* done, size_t* size, int* index, uint64_t* tag);

}  // namespace netib
}  // namespace baton

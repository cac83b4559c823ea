// The transport interface: how the receiving side of a connection creates its FIFO and how the
// sending side attaches to it. Everything above this file sees only ConnFifo (algorithms/connector.h).
//
//   receiver: createRecv()  -> FIFO memory + a 256-byte ConnectInfo, sent to the peer by bootstrap
//   sender:   connectSend() <- that ConnectInfo, maps the same FIFO
//
// Transports, in the order they are tried: p2p (same process), shm (same host), NET (anywhere:
// staging FIFOs on both sides and a proxy thread in each process moving steps through a network
// back-end, transports/net/, lesson 08).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "connector.h"
#include "nccl.h"

namespace baton {

constexpr size_t kConnectInfoBytes = 256;  // NCCL's CONNECT_SIZE

// What a rank tells every other rank about itself at init.
struct PeerInfo {
  int32_t rank;
  int32_t cudaDev;
  int32_t pid;
  int32_t version;
  uint64_t hostHash;              // NCCL_HOSTID or hostname + boot id
  uint64_t pidHash;               // hostHash + pid: equal means "same process"
  int32_t numaNode;               // the NUMA node the rank's thread ran on at init (topology, lesson 06)
  uint32_t pidNs = 0;             // low bits of the pid namespace's inode: pids compare only within one
  uint64_t crossMemoryProbe = 0;  // a word local peers read to test single copies (lesson 09)
  int32_t gpu = 0;                // a CUDA device was current at init (src/gpu/gpu_comm.h)
  int32_t yamaScope1 = 0;         // its kernel's Yama ptrace_scope is 1: single copies need a prctl first
};

class Proxy;
class ProxyOpWatch;

// Who a connection is for. p2p and shm need only the FIFO layout; NET registers the connection
// with the communicator's proxy, names the peer in its errors, and picks a NIC by channel.
struct ConnSetup {
  Proxy* proxy = nullptr;
  const volatile int* abortFlag = nullptr;
  int rank = -1;  // this rank
  int peer = -1;  // the other end
  int channel = 0;
};

struct ConnectInfo {
  int32_t transport;  // index into transports()
  char data[kConnectInfoBytes - sizeof(int32_t)];
};

// One side's mapping of a FIFO. Destroying it releases that side's share of the memory.
class Connection {
 public:
  virtual ~Connection() = default;
  ConnFifo* fifo = nullptr;
  FifoLayout layout;
  bool viaNet = false;  // a NET staging FIFO: its proxy can send from / receive into user buffers
  ConnDev dev(int peer, int depth) const { return makeConnDev(fifo, layout, peer, depth); }
  // A connection whose proxy moves its steps reports an operation's steps to `w` (NET); others
  // have no proxy steps to report and drop it. False: dropped.
  virtual bool watchProxyOp(std::shared_ptr<ProxyOpWatch> w) { return (void)w, false; }
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;
  virtual bool canConnect(const PeerInfo& self, const PeerInfo& peer) const = 0;
  virtual ncclResult_t createRecv(const ConnSetup& setup, const FifoLayout& layout, ConnectInfo* info,
                                  std::unique_ptr<Connection>* conn) = 0;
  virtual ncclResult_t connectSend(const ConnSetup& setup, const ConnectInfo& info,
                                   std::unique_ptr<Connection>* conn) = 0;
};

// p2p, shm, NET: the index is what ConnectInfo::transport carries.
const std::vector<Transport*>& transports();
enum TransportIndex { kTransportP2p = 0, kTransportShm = 1, kTransportNet = 2 };
// The first transport that connects self -> peer (NET always can, as in NCCL).
// `p2pOff` / `shmOff`: NCCL_P2P_DISABLE / NCCL_SHM_DISABLE as read when the communicator was made.
ncclResult_t selectTransport(const PeerInfo& self, const PeerInfo& peer, bool p2pOff, bool shmOff, int* index);

Transport* makeP2pTransport();
Transport* makeShmTransport();
Transport* makeNetTransport();

// Bytes a FIFO occupies: the counters and kSteps slots of every protocol it carries.
inline size_t fifoBytes(const FifoLayout& l) { return sizeof(ConnFifo) + l.totalSlotBytes(); }

}  // namespace baton

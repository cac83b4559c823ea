// The NET transport's pieces (lesson 08): each side of a connection has its own FIFO in host
// memory, laid out exactly like a shm FIFO, so the primitives run unchanged on it; the proxy
// thread of each process moves FIFO steps between them through a network back-end.
//
// Both FIFOs (and the receive side's bounce buffer) are registered with the back-end (regMr) once
// the connection exists: InfiniBand needs it, sockets ignore it.
//
//   sender's primitives -> sender's staging FIFO -> NetSendTask (isend) ~~ network ~~
//   NetRecvTask (irecv) -> receiver's FIFO -> receiver's primitives
//
// One network message per FIFO step. Its tag says which protocol's slot the step used (low 8 bits)
// and how many payload bytes it carries (netStepTag below), because the three protocols share one
// step sequence (connector.h) and the receiver's primitives check each slot's size; while a
// profiler watches, also which operation the step is of (proxy_op_watch.h).
//
// Memory-ordering contract:
//   send side: Simple data (and its sizes[] entry) is released by tail, which the proxy
//     loadAcquire()s; an LL/LL128 step's size is released by its line 0's flag and its data by each
//     line's flag, which the proxy loadAcquire()s line by line before sending (a line half-written
//     by the ranks never leaves). After the back-end reports
//     the send done, storeRelease(head, s + 1) hands the slot back to the ranks.
//   receive side: a step lands only in a slot the ranks released (loadAcquire(head) + kSteps > s).
//     Simple: payload is received straight into the slot, then sizes[slot], then
//     storeRelease(tail, s + 1). LL/LL128: received into a bounce buffer, then copied into the slot
//     with each line's flag stored last with release (LL: every 8-byte half is one release store;
//     LL128: 15 payload words, then the flag), so the ranks never see a flag before its data.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "connector.h"
#include "exec_model.h"
#include "net/net_backend.h"
#include "proxy.h"
#include "transport.h"

namespace baton {

// What the receiver sends the sender (inside ConnectInfo).
struct NetConnectInfo {
  NetHandle handle;
  FifoLayout layout;
  int32_t rank;  // the receiver
  int32_t dev;   // its device
  char devName[32];
};
static_assert(sizeof(NetConnectInfo) <= sizeof(ConnectInfo::data), "fits in ConnectInfo");

// A FIFO in this process's heap, zeroed (a zero LL/LL128 flag never matches a step).
struct HostFifo {
  explicit HostFifo(const FifoLayout& l);
  ~HostFifo();
  HostFifo(const HostFifo&) = delete;
  HostFifo& operator=(const HostFifo&) = delete;
  ConnFifo* fifo = nullptr;
  FifoLayout layout;
  size_t bytes = 0;
};

// The last message of a connection closed in order (a communicator destroyed): the receiver then
// knows the end of the stream is not a crash.
constexpr uint64_t kNetByeTag = 0xff;
// A Simple step of a zero-copy send (lesson 09): sent from the user's registered buffer
// (ConnFifo::netSendPtr); the receiver lands it in its user buffer where the rank offered one
// (ConnFifo::netRecvPtr), else in the Simple slot, and says which in ConnFifo::netRecvLanded.
constexpr int kNetTagDirect = kNumProtos;
// What a step's tag carries: bits 0-7 the protocol's slot (the receiver's buffer choice), 8-39 the
// payload bytes, and, while a profiler watches the operation (proxy_op_watch.h), bit 63 set and
// bits 40-55 the low bits of its watch's number on the connection.
inline uint64_t netStepTag(int proto, uint64_t payloadBytes) { return (payloadBytes << 8) | (uint64_t)proto; }
constexpr uint64_t kNetTagWatched = 1ull << 63;
constexpr int kNetTagWatchShift = 40;
inline uint64_t netTagBytes(uint64_t tag) { return (tag >> 8) & 0xffffffffull; }
inline uint64_t netTagWatch(uint64_t tag) { return (tag >> kNetTagWatchShift) & ProxyOpWatches::kOrdinalMask; }
// Bytes on the wire for `payloadBytes` of protocol `proto` (LL: 16-byte lines of 8 payload bytes;
// LL128: 128-byte lines of 120).
uint64_t netWireBytes(int proto, uint64_t payloadBytes);

class NetSendTask : public ProxyTask {
 public:
  NetSendTask(NetBackend* net, NetSendComm* comm, std::shared_ptr<HostFifo> fifo, int rank, int peer,
              std::string peerAddr, const volatile int* abortFlag);
  ~NetSendTask() override;
  ncclResult_t progress(bool* didWork, std::string* message) override;
  ncclResult_t registerFifo();  // before the first step; the connection exists from the start
  void sever() override { net_->shutdown(comm_), severed_ = true; }
  bool pending() override {
    int proto;
    uint64_t bytes;
    return posted_ > done_ || stepReady(posted_, &proto, &bytes);
  }

 private:
  // Which protocol step s used and its payload bytes, once the ranks have finished it (false: not yet).
  bool stepReady(uint64_t s, int* proto, uint64_t* bytes);
  NetBackend* net_;
  NetSendComm* comm_;
  std::shared_ptr<HostFifo> fifo_;
  int rank_, peer_;
  std::string peerAddr_;
  const volatile int* abortFlag_;  // raised (abort, or a failure): close without a goodbye
  bool severed_ = false;
  uint64_t posted_ = 0, done_ = 0;  // steps handed to the network / confirmed sent
  NetRequest* reqs_[kSteps] = {};
  uint64_t sentBytes_[kSteps] = {};    // payload bytes of the steps in flight (the profiler's transSize)
  NetMemHandle* mh_ = nullptr;         // the staging FIFO's registration (sockets: none needed)
  NetMemHandle* userMh_[kSteps] = {};  // zero-copy steps in flight: their user-buffer span's registration
  uint64_t linesChecked_ = 0;          // LL/LL128 lines of step posted_ already seen complete
  uint64_t zeroCopySteps_ = 0;         // steps sent from user buffers (the INFO line at close)
};

class NetRecvTask : public ProxyTask {
 public:
  NetRecvTask(NetBackend* net, NetListenComm* listen, std::shared_ptr<HostFifo> fifo, int rank, int peer);
  ~NetRecvTask() override;
  ncclResult_t progress(bool* didWork, std::string* message) override;
  void sever() override {
    if (comm_) net_->shutdown(comm_);
    closed_ = true;
  }
  // The socket to sleep on: the listener until the peer connected, then the connection, unless the
  // next step waits for the ranks to free a slot (then only an operation can move it).
  int pollFd() override {
    if (closed_) return -1;
    if (!comm_) return net_->pollFd(listen_);
    if (!req_ && loadAcquire(&fifo_->fifo->head) + kSteps < next_ + 1) return -1;
    return net_->pollFd(comm_);
  }

 private:
  ncclResult_t deliver(uint64_t s, uint64_t tag, size_t wire, bool inUserBuffer, std::string* message);
  NetBackend* net_;
  NetListenComm* listen_;
  NetRecvComm* comm_ = nullptr;
  std::shared_ptr<HostFifo> fifo_;
  int rank_, peer_;
  uint64_t next_ = 0;  // the step the network delivers next
  NetRequest* req_ = nullptr;
  std::unique_ptr<char[]> bounce_;  // LL and LL128 steps land here first (and the goodbye)
  size_t bounceBytes_ = 0;
  NetMemHandle* fifoMh_ = nullptr;  // registrations, made once the peer has connected
  NetMemHandle* bounceMh_ = nullptr;
  char* reqUser_ = nullptr;                          // req_ offered this span of the rank's user buffer (zero copy)
  NetMemHandle* reqUserMh_ = nullptr;                // and registered it
  uint64_t zeroCopySteps_ = 0, zeroCopyMissed_ = 0;  // zero-copy steps landed in user buffers / in the FIFO
  bool sawOffer_ = false;                            // the rank has offered a user buffer once
  bool closed_ = false;                              // the peer said goodbye
};

}  // namespace baton

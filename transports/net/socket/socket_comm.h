// The socket back-end's objects (lesson 08): a connection is one control socket plus nSocks data
// sockets served by helper threads (NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD).
//
// Wire format of one message, on the control socket: FrameHeader {tag, size}; then the payload,
// inline on the control socket when it is small (< kMinTaskBytes) or there are no data sockets,
// otherwise cut into tasks spread over the data sockets (taskLayout: both sides compute the same
// cut from the size and the message's sequence number). Every socket starts with a Hello whose
// magic is the listener's random one: a stranger's connection is dropped with a warning.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "baton/plugin_net.h"
#include "baton/plugin_profiler.h"
#include "misc/socket.h"
#include "net/net_backend.h"

namespace baton {
namespace netsock {

constexpr size_t kMinTaskBytes = 64 << 10;  // NCCL_SOCKET_MIN_TASKSIZE
constexpr int kMaxSocks = 64, kMaxThreads = 16;
constexpr int kMaxRequests = 32;  // NCCL_NET_MAX_REQUESTS per comm

struct Hello {
  uint64_t magic;
  uint32_t type;   // kSocketNet
  uint32_t index;  // 0: control socket, 1..nSocks: data sockets
};

struct Handle {
  SocketAddress addr;
  uint64_t magic;
  int32_t nSocks, nThreads;
};
static_assert(sizeof(Handle) <= kNetHandleBytes, "a handle fits NCCL_NET_HANDLE_MAXSIZE");

struct FrameHeader {
  uint64_t tag;
  uint64_t size;
};

struct Comm;

// One posted isend or irecv.
struct Request {
  Comm* comm = nullptr;
  bool send = false;
  int n = 1;  // candidate buffers (irecv)
  char* data[kNetMaxRecvs] = {};
  size_t sizes[kNetMaxRecvs] = {};
  uint64_t tags[kNetMaxRecvs] = {};
  // Progress.
  FrameHeader hdr{};
  size_t hdrDone = 0;      // header bytes moved on the control socket
  int index = -1;          // the buffer the message uses (irecv: known once the header is read)
  size_t inlineBytes = 0;  // payload carried on the control socket
  size_t inlineDone = 0;
  bool tasksPosted = false;
  std::atomic<int> tasksLeft{0};
  bool done = false;
  // A profiled send (isendProfiled): its event, as NCCL's socket transport reports one.
  const NetProfileRef* profRef = nullptr;
  void* profEvent = nullptr;
  ncclProfilerNetSockDescr_v1_t profData{};
};

// A contiguous piece of a message for one data socket.
struct Task {
  int sock;  // index into Comm::data
  char* ptr;
  size_t len;
  bool send;
  Request* req;
};

// Where each piece of a `size`-byte message goes: NCCL's cut (tasks of at least kMinTaskBytes, at
// most one per socket), starting at socket `seq % nSocks` so consecutive messages share the load.
std::vector<Task> taskLayout(char* base, size_t size, int nSocks, uint64_t seq);

// A helper thread: runs the tasks of its sockets in the order they were posted (the peer's helper
// for the same sockets runs them in the same order, so they always meet).
class Helper {
 public:
  Helper(Comm* comm, int id);
  ~Helper();
  void push(const Task& t);

 private:
  void run();
  bool doTask(const Task& t);  // false: the comm failed (its error is set)
  Comm* comm_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> tasks_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Both kinds of connection: a send comm and a recv comm differ only in direction.
struct Comm {
  bool isSend = false;
  SocketAddress peer{};  // for messages: who is at the other end
  int ctrl = -1;
  std::vector<int> data;  // data sockets
  int nThreads = 0;
  std::vector<std::unique_ptr<Helper>> helpers;  // empty when there are no data sockets
  std::deque<Request*> queue;                    // posted and not yet handed back, in order
  uint64_t seq = 0;                              // messages whose tasks were cut so far
  // A receiving control socket in delayed-ACK mode (BATON_SOCKET_DELAYED_ACK, delayAcks).
  bool delayedAck = false;
  uint64_t delayedAckAt = 0;  // nowNs() when it was last set
  std::mutex errMu;
  std::atomic<bool> failed{false};
  ncclResult_t errCode = ncclSuccess;
  std::string error;  // the first failure, with the peer's address
  std::string peerName() const { return addressToString(peer); }
  // Records the first failure (thread-safe); later ones are dropped.
  void fail(ncclResult_t code, const std::string& msg);
  ~Comm();
};

// An accepted socket whose hello has not fully arrived.
struct PendingSocket {
  int fd = -1;
  SocketAddress from{};
  Hello hello{};
  size_t got = 0;
  uint64_t since = 0;
};

// The listener: accepts 1 + nSocks sockets from one peer.
struct ListenComm {
  int fd = -1;
  Handle handle{};
  std::vector<int> fds;  // by hello index; -1 until that socket arrived
  std::vector<PendingSocket> pending;
  SocketAddress peer{};
};

// A fresh back-end (tests; the library uses socketNetBackend()'s one instance).
NetBackend* makeSocketBackend();

// The data path (socket_data.cc): NetBackend's isend, irecv and test for this back-end.
ncclResult_t postSend(Comm* c, void* data, size_t size, uint64_t tag, Request** out);
ncclResult_t postRecv(Comm* c, int n, void** data, const size_t* sizes, const uint64_t* tags, Request** out);
ncclResult_t testRequest(Request* r, int* done, size_t* size, int* index, uint64_t* tag);
// A profiled request's event: started when posted, stopped when it completes or fails.
void profileRequestStart(Request* r, const NetProfileRef* ref, int fd);
void profileRequestStop(Request* r);
// The control socket, or -1 while the current receive waits only on helper threads (the next
// header may already be there, and polling it would never sleep).
int recvPollFd(Comm* c);

// Puts a receiving socket in the kernel's delayed-ACK ("ping-pong") mode (TCP_QUICKACK 0). A send
// comm and a recv comm are two TCP connections, so no answer carries the receiver's ACK, and in the
// default quick-ACK mode the receiver's recv() sends a bare ACK packet per small message before it
// returns: the critical path pays for a packet through the whole stack (docs/perf.md). In delayed
// mode the kernel acknowledges every second message, a full segment pair, or on its timer. It
// leaves the mode when that timer fires, so the receiver sets it again after a frame once a
// millisecond has passed (socket_data.cc recvCtrl).
void delayAcks(int fd);

// Text for errno `e` on a connection to `peer` (refused, reset, closed, ...).
std::string describeSocketError(int e);

}  // namespace netsock
}  // namespace baton

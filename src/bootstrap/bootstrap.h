// Bootstrap: how ranks that know only a unique id find each other, over TCP.
//
// ncclGetUniqueId starts a root thread and writes {magic, root address} into the id. Each rank
// checks in with the root (its rank, nranks and the address of its own listener); when all have,
// the root hands everyone the table of listener addresses and exits. After that, ranks talk
// directly: send/recv of tagged messages (one short TCP connection each, as NCCL does), and on top
// of them allGather and barrier. Every wait is bounded by BATON_BOOTSTRAP_TIMEOUT and the abort flag,
// and a peer that has exited is noticed sooner: its listener refuses connections.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "misc/socket.h"
#include "nccl.h"

namespace baton {

// What ncclUniqueId holds (the rest of the 128 bytes are zero).
struct BootstrapHandle {
  uint64_t magic;
  SocketAddress addr;
};
static_assert(sizeof(BootstrapHandle) <= sizeof(ncclUniqueId), "handle fits in ncclUniqueId");

// Fills `id`: with NCCL_COMM_ID, its address and NCCL's constant magic (rank 0 starts the root
// during init); otherwise a fresh random magic and the address of a root thread started now.
ncclResult_t bootstrapGetUniqueId(ncclUniqueId* id);
// Always a fresh random magic and a new root thread (CommSplit's children), ignoring NCCL_COMM_ID.
// `loopback`: every rank is in this process (ncclCommInitAll), so the root listens on loopback
// unless NCCL_SOCKET_IFNAME names an interface.
ncclResult_t bootstrapGetUniqueIdFresh(ncclUniqueId* id, bool loopback = false);
// Validates the bytes of an id a caller passed (family, port, zero padding).
ncclResult_t bootstrapParseId(const ncclUniqueId* id, BootstrapHandle* out);
// Where a root listens: the id's own address (NCCL_COMM_ID), the interface NCCL's order picks, or
// loopback.
enum class RootBind { kGivenAddress, kChosenInterface, kLoopback };
// Starts a root thread that serves one rendezvous of `nranks` ranks (0: learnt from the first).
ncclResult_t bootstrapStartRoot(BootstrapHandle* handle, RootBind bind);

class Bootstrap {
 public:
  static ncclResult_t create(const BootstrapHandle& handle, int rank, int nranks, const volatile int* abortFlag,
                             std::unique_ptr<Bootstrap>* out);
  ~Bootstrap();

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }

  ncclResult_t send(int peer, uint64_t tag, const void* data, size_t size);
  ncclResult_t recv(int peer, uint64_t tag, void* data, size_t size);
  // `all` holds nranks blocks of `size` bytes; this rank's block must be filled in.
  ncclResult_t allGather(void* all, size_t size);
  ncclResult_t barrier();
  // Called (on the thread of the send or recv) when a peer's listener refuses connections, or a
  // connection to it breaks before its handshake: the process exited or closed its communicator.
  // The watchdog learns of it this way (lesson 10).
  void onPeerGone(std::function<void(int peer, const std::string& why)> hook) { peerGone_ = std::move(hook); }
  // Tags for collective calls are derived from a sequence number all ranks advance in step.
  uint64_t nextCollTag() { return (++collSeq_) << 20; }

 private:
  Bootstrap() = default;
  static constexpr uint64_t kFirstProbeNs = 1000000000ull, kLastProbeNs = 8000000000ull;
  // Fails (ncclRemoteError, naming the rank) when `peer`'s listener refuses connections and no
  // connection waits on this rank's own listener.
  ncclResult_t checkPeerListening(int peer, uint64_t tag);
  struct Parked {
    int peer;
    uint64_t tag;
    std::vector<char> data;
  };
  int rank_ = 0, nranks_ = 0;
  uint64_t magic_ = 0;
  int listenFd_ = -1;
  std::vector<SocketAddress> peers_;
  std::vector<Parked> parked_;
  std::mutex recvMu_;
  uint64_t collSeq_ = 0;
  const volatile int* abortFlag_ = nullptr;
  std::function<void(int, const std::string&)> peerGone_;
};

}  // namespace baton

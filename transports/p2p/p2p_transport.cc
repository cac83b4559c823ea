// p2p transport: ranks that are threads of one process share a heap-allocated FIFO.
//
// The receiver allocates the FIFO and sends its address (with its pid, checked by the sender).
// The block is reference-counted: it is freed when both sides have let go, so either side may be
// destroyed first.
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

#include "misc/debug.h"
#include "transport.h"

namespace baton {
namespace {

struct P2pBlock {
  std::atomic<int> refs;
  ConnFifo* fifo;
  // Released after the counters are zeroed, acquired by the sender: the connect info travels by
  // TCP, an ordering ThreadSanitizer cannot see, so the hand-off is also made explicit here.
  std::atomic<int> ready{0};
};

struct P2pInfo {
  int32_t pid;
  P2pBlock* block;
  FifoLayout layout;
};
static_assert(sizeof(P2pInfo) <= sizeof(ConnectInfo::data), "fits in ConnectInfo");

class P2pConnection : public Connection {
 public:
  explicit P2pConnection(P2pBlock* b, const FifoLayout& l) : block_(b) {
    fifo = b->fifo;
    layout = l;
  }
  ~P2pConnection() override {
    if (block_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      free(block_->fifo);
      delete block_;
    }
  }

 private:
  P2pBlock* block_;
};

class P2pTransport : public Transport {
 public:
  const char* name() const override { return "P2P"; }
  bool canConnect(const PeerInfo& self, const PeerInfo& peer) const override { return self.pidHash == peer.pidHash; }

  ncclResult_t createRecv(const ConnSetup&, const FifoLayout& layout, ConnectInfo* info,
                          std::unique_ptr<Connection>* conn) override {
    const size_t bytes = fifoBytes(layout);
    void* mem = aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
    if (!mem) return batonError(ncclSystemError, "p2p: cannot allocate a %zu-byte FIFO", bytes);
    // Everything starts at zero (a zero LL/LL128 flag never matches a step's flag), and touching
    // every page now keeps first-use page faults out of the first timed operations.
    memset(mem, 0, bytes);
    // Two references: ours, and the one the sender takes over when it connects.
    P2pBlock* b = new P2pBlock{{2}, static_cast<ConnFifo*>(mem)};
    b->ready.store(1, std::memory_order_release);
    P2pInfo pi{getpid(), b, layout};
    memset(info, 0, sizeof *info);
    memcpy(info->data, &pi, sizeof pi);
    conn->reset(new P2pConnection(b, layout));
    return ncclSuccess;
  }

  ncclResult_t connectSend(const ConnSetup&, const ConnectInfo& info, std::unique_ptr<Connection>* conn) override {
    P2pInfo pi;
    memcpy(&pi, info.data, sizeof pi);
    if (pi.pid != getpid())
      return batonError(ncclInternalError, "p2p: connect info comes from pid %d, not this process (%d)", pi.pid,
                        getpid());
    if (pi.block->ready.load(std::memory_order_acquire) != 1)
      return batonError(ncclInternalError, "p2p: peer's FIFO is not initialised");
    conn->reset(new P2pConnection(pi.block, pi.layout));
    return ncclSuccess;
  }
};

}  // namespace

Transport* makeP2pTransport() {
  static P2pTransport transport;
  return &transport;
}

}  // namespace baton

// The NET transport (lesson 08): ranks on different hosts, or any two ranks when NCCL_P2P_DISABLE
// and NCCL_SHM_DISABLE leave nothing else. The receiver listens on a NIC (chosen by channel) and
// sends the handle; the sender connects; each side gets a FIFO in its own memory, and the
// communicator's proxy moves the steps between them (net_transport.h has the contract).
#include <strings.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "exec_model.h"
#include "misc/debug.h"
#include "misc/socket.h"
#include "net/net_transport.h"

namespace baton {

HostFifo::HostFifo(const FifoLayout& l) : layout(l), bytes(fifoBytes(l)) {
  void* mem = aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  if (mem) memset(mem, 0, bytes);
  fifo = static_cast<ConnFifo*>(mem);
}
HostFifo::~HostFifo() { free(fifo); }

uint64_t netWireBytes(int proto, uint64_t payloadBytes) {
  if (proto == kProtoLL) return (payloadBytes + 7) / 8 * 16;
  if (proto == kProtoLL128) return (payloadBytes + 119) / 120 * 128;
  return payloadBytes;
}

namespace {

class NetConnection : public Connection {
 public:
  NetConnection(std::shared_ptr<HostFifo> mem, std::shared_ptr<ProxyTask> task)
      : mem_(std::move(mem)), task_(std::move(task)) {
    fifo = mem_->fifo;
    layout = mem_->layout;
    viaNet = true;
  }
  bool watchProxyOp(std::shared_ptr<ProxyOpWatch> w) override {
    task_->watch(std::move(w));
    return true;
  }

 private:
  std::shared_ptr<HostFifo> mem_;
  std::shared_ptr<ProxyTask> task_;  // the proxy holds it too; whoever lets go last frees it
};

class NetTransport : public Transport {
 public:
  const char* name() const override { return "NET"; }
  bool canConnect(const PeerInfo&, const PeerInfo&) const override { return true; }

  ncclResult_t createRecv(const ConnSetup& setup, const FifoLayout& layout, ConnectInfo* info,
                          std::unique_ptr<Connection>* conn) override {
    if (!setup.proxy) return batonError(ncclInternalError, "NET: connection to rank %d has no proxy", setup.peer);
    NetBackend* net = nullptr;
    BATON_CHECK(selectNetBackend(&net));
    NetConnectInfo ni{};
    ni.layout = layout;
    ni.rank = setup.rank;
    ni.dev = setup.channel % net->devices();
    snprintf(ni.devName, sizeof ni.devName, "%s", net->name());
    auto fifo = std::make_shared<HostFifo>(layout);
    if (!fifo->fifo) return batonError(ncclSystemError, "NET: cannot allocate a %zu-byte FIFO", fifo->bytes);
    NetListenComm* listen = nullptr;
    BATON_CHECK(net->listen(ni.dev, &ni.handle, &listen));
    auto task = std::make_shared<NetRecvTask>(net, listen, fifo, setup.rank, setup.peer);
    setup.proxy->add(task);
    memset(info, 0, sizeof *info);
    memcpy(info->data, &ni, sizeof ni);
    conn->reset(new NetConnection(fifo, task));
    return ncclSuccess;
  }

  ncclResult_t connectSend(const ConnSetup& setup, const ConnectInfo& info,
                           std::unique_ptr<Connection>* conn) override {
    if (!setup.proxy) return batonError(ncclInternalError, "NET: connection to rank %d has no proxy", setup.peer);
    NetConnectInfo ni;
    memcpy(&ni, info.data, sizeof ni);
    ni.devName[sizeof ni.devName - 1] = 0;
    NetBackend* net = nullptr;
    BATON_CHECK(selectNetBackend(&net));
    if (strcasecmp(ni.devName, net->name()) != 0)
      return batonError(ncclInvalidUsage,
                        "NET: rank %d uses the %s network and rank %d the %s one; set NCCL_NET alike on every host",
                        ni.rank, ni.devName, setup.rank, net->name());
    auto fifo = std::make_shared<HostFifo>(ni.layout);
    if (!fifo->fifo) return batonError(ncclSystemError, "NET: cannot allocate a %zu-byte FIFO", fifo->bytes);
    NetSendComm* comm = nullptr;
    const uint64_t deadline = bootstrapDeadline();
    const int dev = net->devices() ? setup.channel % net->devices() : 0;
    while (!comm) {  // back-ends may take several calls (NCCL's contract)
      ncclResult_t res = net->connect(dev, ni.handle, setup.abortFlag, &comm);
      if (res != ncclSuccess)
        return batonError(res, "NET: rank %d cannot connect to rank %d: %s", setup.rank, ni.rank, lastError());
      if (comm) break;
      if (abortRequested(setup.abortFlag))
        return batonError(ncclInvalidUsage, "NET: connect to rank %d aborted", ni.rank);
      if (nowNs() > deadline)
        return batonError(ncclRemoteError, "NET: rank %d could not connect to rank %d within %llus", setup.rank,
                          ni.rank, (unsigned long long)bootstrapTimeoutSecUsed());
      usleep(1000);
    }
    std::string where = std::string("through ") + net->name();
    if (net->handleHoldsAddress()) {
      SocketAddress peerAddr;
      memcpy(&peerAddr, ni.handle.data, sizeof peerAddr);  // the built-in back-ends start their handle with it
      where = addressToString(peerAddr);
    }
    auto task = std::make_shared<NetSendTask>(net, comm, fifo, setup.rank, ni.rank, where, setup.abortFlag);
    BATON_CHECK(task->registerFifo());
    setup.proxy->add(task);
    conn->reset(new NetConnection(fifo, task));
    return ncclSuccess;
  }
};

}  // namespace

Transport* makeNetTransport() {
  static NetTransport transport;
  return &transport;
}

}  // namespace baton

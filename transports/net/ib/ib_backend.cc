// The InfiniBand verbs network back-end ("IB"), introduced in lesson 08
// (docs/lessons/08-network-and-proxy.md): NCCL's net_ib design, re-written. Each connection is one
// reliable-connected (RC) queue pair over InfiniBand (routed by LID) or RoCE (routed by GID), set
// up over an out-of-band TCP socket (ib_connect.cc). Data moves receiver-driven by RDMA writes:
//
//   receiver irecv:  post a receive WR, then RDMA-write a clear-to-send (CTS) entry into the
//                    sender's fifo slot: the n candidate buffers' addresses, sizes, rkeys and tags
//   sender isend:    wait for that entry ("try again later" = null request), pick the candidate
//                    whose tag matches, RDMA-write the payload into it, then RDMA-write-with-
//                    immediate {tag, size, index} into the receiver's record slot (imm = slot)
//   test():          the sender's request completes on its signaled CQE; the receiver's when the
//                    write-with-immediate consumes its receive WR; it reads size/tag/index from the
//                    record
//
// Memory-ordering contract:
//   - CTS: a receiver offers only buffers it has finished reading, so the sender's write cannot
//     clobber live data. The entry's seq word is last in address order; the sender acquire-loads
//     seq and only then reads the body. Like NCCL's fifo, this relies on the HCA placing one RDMA
//     write's bytes in address order (ConnectX does; the IB specification does not promise it).
//   - Payload: the payload write and the write-with-immediate go on the same RC QP, which the
//     responder executes in order; the receive completion is generated only after that message's
//     and every earlier write's data are placed, and ibv_poll_cq includes the provider's barrier,
//     so once test() sees the CQE the payload and the record are visible to the receiving CPU.
//   - Sender: the signaled write-with-immediate completes only when the responder acknowledged it
//     and everything before it, so the send buffer may be reused when test() reports done.
//   - Host memory only: there is no flush (NCCL's iflush), which GPUDirect RDMA into GPU memory
//     would need before a kernel reads the data; CUDA support is only reported (ptrSupport).
//
// Not done (NCCL does): several QPs per connection, multi-port merging, adaptive routing, dmabuf,
// NCCL_IB_ADDR_FAMILY/RANGE, inline CTS writes.
//
// Status, honestly: this compiles and links against rdma-core's libibverbs; the build machines have
// no RDMA device, so only the zero-device behaviour (init succeeds, devices() = 0, listen/connect
// name the reason) has been seen running. The data path has never run on hardware.
#include "ib_comm.h"
#include "misc/debug.h"

namespace baton {
namespace netib {

namespace {
Comm* commOf(NetSendComm* s, NetRecvComm* r) { return s ? reinterpret_cast<Comm*>(s) : reinterpret_cast<Comm*>(r); }
}  // namespace

class IbNetBackend final : public NetBackend {
 public:
  const char* name() const override { return "IB"; }
  ncclResult_t init() override { return ibInit(); }
  int devices() const override { return ibDevCount(); }
  ncclResult_t getProperties(int dev, NetProperties* props) const override { return ibProperties(dev, props); }

  ncclResult_t listen(int dev, NetHandle* handle, NetListenComm** listenComm) override {
    BATON_CHECK(ibInit());
    return ibListen(dev, handle, listenComm);
  }
  ncclResult_t connect(int dev, const NetHandle& handle, const volatile int*, NetSendComm** sendComm) override {
    *sendComm = nullptr;
    BATON_CHECK(ibInit());
    return ibConnect(dev, handle, sendComm);
  }
  ncclResult_t accept(NetListenComm* listenComm, NetRecvComm** recvComm) override {
    return ibAccept(listenComm, recvComm);
  }

  ncclResult_t regMr(NetSendComm* send, NetRecvComm* recv, void* data, size_t size, int type,
                     NetMemHandle** mhandle) override {
    if (!send == !recv) return batonError(ncclInvalidArgument, "IB regMr: pass exactly one of the send/recv comms");
    IbMr* m = nullptr;
    BATON_CHECK(mrRegister(commOf(send, recv)->dev, data, size, type, &m));
    *mhandle = reinterpret_cast<NetMemHandle*>(m);
    return ncclSuccess;
  }
  ncclResult_t deregMr(NetSendComm*, NetRecvComm*, NetMemHandle* mhandle) override {
    return mhandle ? mrDeregister(reinterpret_cast<IbMr*>(mhandle)) : ncclSuccess;
  }

  ncclResult_t isend(NetSendComm* comm, void* data, size_t size, uint64_t tag, NetMemHandle* mhandle,
                     NetRequest** request) override {
    return ibIsend(commOf(comm, nullptr), data, size, tag, reinterpret_cast<IbMr*>(mhandle), request);
  }
  ncclResult_t irecv(NetRecvComm* comm, int n, void** data, const size_t* sizes, const uint64_t* tags,
                     NetMemHandle** mhandles, NetRequest** request) override {
    return ibIrecv(commOf(nullptr, comm), n, data, sizes, tags, mhandles, request);
  }
  ncclResult_t test(NetRequest* request, int* done, size_t* size, int* index, uint64_t* tag) override {
    return ibTest(request, done, size, index, tag);
  }

  ncclResult_t closeSend(NetSendComm* comm) override { return ibCloseComm(commOf(comm, nullptr)); }
  ncclResult_t closeRecv(NetRecvComm* comm) override { return ibCloseComm(commOf(nullptr, comm)); }
  ncclResult_t closeListen(NetListenComm* comm) override { return ibCloseListen(comm); }
};

}  // namespace netib

NetBackend* ibNetBackend() {
  static netib::IbNetBackend instance;
  return &instance;
}

}  // namespace baton

// The NET transport between thread ranks (NCCL_P2P_DISABLE=1 and NCCL_SHM_DISABLE=1 leave it as
// the only transport, as in NCCL): a peer that aborts is noticed by the survivor's proxy between
// operations and becomes its async error, naming the peer; NCCL_NET picks a back-end by name; the
// InfiniBand back-end's own tests run where an RDMA device exists and say why they skip elsewhere.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "misc/debug.h"
#include "nccl.h"
#include "net/net_backend.h"
#include "unit/unit_helpers.h"

namespace {

using bt::ScopedEnv;

struct NetOnly {
  ScopedEnv p2p{"NCCL_P2P_DISABLE", "1"};
  ScopedEnv shm{"NCCL_SHM_DISABLE", "1"};
  ScopedEnv ifname{"NCCL_SOCKET_IFNAME", "lo"};
};

TEST(NetTransport, PeerAbortBecomesTheSurvivorsAsyncErrorNamingIt) {
  ncclComm_t comms[2];
  {
    NetOnly env;
    ASSERT_EQ(ncclCommInitAll(comms, 2, nullptr), ncclSuccess) << ncclGetLastError(nullptr);
  }
  std::vector<float> a(1024, 1.0f), b(1024, 2.0f);
  std::thread t([&] {
    EXPECT_EQ(ncclAllReduce(b.data(), b.data(), b.size(), ncclFloat, ncclSum, comms[1], nullptr), ncclSuccess);
  });
  ASSERT_EQ(ncclAllReduce(a.data(), a.data(), a.size(), ncclFloat, ncclSum, comms[0], nullptr), ncclSuccess);
  t.join();
  EXPECT_EQ(a[7], 3.0f);
  ASSERT_EQ(ncclCommAbort(comms[1]), ncclSuccess);  // no goodbye: the connections just end
  ncclResult_t async = ncclSuccess;
  const auto t0 = std::chrono::steady_clock::now();
  while (async == ncclSuccess && bt::secondsSince(t0) < 10) {
    ASSERT_EQ(ncclCommGetAsyncError(comms[0], &async), ncclSuccess);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(async, ncclRemoteError) << "the survivor's proxy should see the end of its peer's connection while idle";
  EXPECT_LT(bt::secondsSince(t0), 2.0);
  EXPECT_EQ(ncclAllReduce(a.data(), a.data(), a.size(), ncclFloat, ncclSum, comms[0], nullptr), ncclRemoteError);
  const std::string msg = ncclGetLastError(comms[0]);
  EXPECT_TRUE(bt::messageHas(msg, {"error state", "rank 1", "closed by the peer"})) << msg;
  EXPECT_EQ(ncclCommAbort(comms[0]), ncclSuccess);
}

TEST(NetTransport, OrderlyDestroyIsNotAnError) {
  ncclComm_t comms[2];
  {
    NetOnly env;
    ASSERT_EQ(ncclCommInitAll(comms, 2, nullptr), ncclSuccess) << ncclGetLastError(nullptr);
  }
  std::vector<float> a(1000, 1.0f), b(1000, 1.0f);
  std::thread t([&] { ncclAllReduce(b.data(), b.data(), b.size(), ncclFloat, ncclSum, comms[1], nullptr); });
  ASSERT_EQ(ncclAllReduce(a.data(), a.data(), a.size(), ncclFloat, ncclSum, comms[0], nullptr), ncclSuccess);
  t.join();
  ASSERT_EQ(ncclCommDestroy(comms[1]), ncclSuccess);  // says goodbye on each connection
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ncclResult_t async = ncclInternalError;
  ASSERT_EQ(ncclCommGetAsyncError(comms[0], &async), ncclSuccess);
  EXPECT_EQ(async, ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(comms[0]), ncclSuccess);
}

TEST(NetTransport, UnknownNcclNetIsNamed) {
  NetOnly env;
  ScopedEnv net("NCCL_NET", "Carrier-Pigeon");
  ncclComm_t comms[2] = {nullptr, nullptr};
  EXPECT_NE(ncclCommInitAll(comms, 2, nullptr), ncclSuccess);
  EXPECT_TRUE(bt::messageHas(ncclGetLastError(nullptr), {"NCCL_NET='Carrier-Pigeon'", "Socket", "IB"}))
      << ncclGetLastError(nullptr);
}

TEST(NetTransport, NcclNetIbWithoutADeviceSaysSo) {
  baton::NetBackend* ib = baton::ibNetBackend();
  ASSERT_EQ(ib->init(), ncclSuccess);
  if (ib->devices() > 0) GTEST_SKIP() << "this machine has an RDMA device: NetIb tests cover it";
  baton::NetBackend* chosen = nullptr;
  ScopedEnv net("NCCL_NET", "IB");
  EXPECT_EQ(baton::selectNetBackend(&chosen), ncclSystemError);
  EXPECT_TRUE(bt::messageHas(baton::lastError(), {"NCCL_NET='IB'", "no device"})) << baton::lastError();
}

// The InfiniBand back-end on its first device, talking to itself (a queue pair to the same port).
TEST(NetIb, LoopbackMessagesThroughTheFirstDevice) {
  baton::NetBackend* ib = baton::ibNetBackend();
  ASSERT_EQ(ib->init(), ncclSuccess);
  if (ib->devices() == 0) {
    baton::NetHandle h{};
    baton::NetListenComm* l = nullptr;
    ib->listen(0, &h, &l);  // fails, and says why
    GTEST_SKIP() << "no RDMA device on this machine: " << baton::lastError();
  }
  baton::NetProperties props;
  ASSERT_EQ(ib->getProperties(0, &props), ncclSuccess);
  baton::NetHandle h{};
  baton::NetListenComm* l = nullptr;
  ASSERT_EQ(ib->listen(0, &h, &l), ncclSuccess) << baton::lastError();
  baton::NetSendComm* s = nullptr;
  baton::NetRecvComm* r = nullptr;
  std::thread connector([&] {
    for (int i = 0; i < 100000 && !s; ++i) ASSERT_EQ(ib->connect(0, h, nullptr, &s), ncclSuccess) << baton::lastError();
  });
  for (int i = 0; i < 100000 && !r; ++i) ASSERT_EQ(ib->accept(l, &r), ncclSuccess) << baton::lastError();
  connector.join();
  ASSERT_TRUE(s && r);
  std::vector<char> out(1 << 20), in(1 << 20);
  for (size_t i = 0; i < out.size(); ++i) out[i] = (char)(i * 7);
  baton::NetMemHandle *ms = nullptr, *mr = nullptr;
  ASSERT_EQ(ib->regMr(s, nullptr, out.data(), out.size(), baton::kNetPtrHost, &ms), ncclSuccess) << baton::lastError();
  ASSERT_EQ(ib->regMr(nullptr, r, in.data(), in.size(), baton::kNetPtrHost, &mr), ncclSuccess) << baton::lastError();
  void* bufs[1] = {in.data()};
  const size_t sizes[1] = {in.size()};
  const uint64_t tags[1] = {2};
  baton::NetRequest *rq = nullptr, *sq = nullptr;
  ASSERT_EQ(ib->irecv(r, 1, bufs, sizes, tags, &mr, &rq), ncclSuccess) << baton::lastError();
  int rDone = 0, sDone = 0;
  size_t got = 0;
  uint64_t tag = 0;
  for (long i = 0; i < 100000000 && !(rDone && sDone); ++i) {
    if (!sq) {
      ASSERT_EQ(ib->isend(s, out.data(), out.size(), (12345ull << 8) | 2, ms, &sq), ncclSuccess);
    }
    if (sq && !sDone) {
      ASSERT_EQ(ib->test(sq, &sDone, nullptr, nullptr, nullptr), ncclSuccess) << baton::lastError();
    }
    if (!rDone) {
      ASSERT_EQ(ib->test(rq, &rDone, &got, nullptr, &tag), ncclSuccess) << baton::lastError();
    }
  }
  ASSERT_TRUE(rDone && sDone);
  EXPECT_EQ(got, out.size());
  EXPECT_EQ(tag, (12345ull << 8) | 2);
  EXPECT_EQ(memcmp(in.data(), out.data(), in.size()), 0);
  ib->deregMr(s, nullptr, ms);
  ib->deregMr(nullptr, r, mr);
  ib->closeSend(s);
  ib->closeRecv(r);
  ib->closeListen(l);
}

}  // namespace

// The socket network back-end (transports/net/socket/) on loopback: messages of every size with
// and without helper threads, candidate buffers chosen by tag, and what bad peers get: an
// oversized or truncated frame, a tag nobody posted, a stranger on the data port, a refused
// connection, a peer that goes away, an interface name that does not exist; IPv6; delayed ACKs.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "exec_model.h"
#include "misc/debug.h"
#include "net/socket/socket_comm.h"
#include "unit/unit_helpers.h"

namespace {

using baton::NetBackend;
using baton::NetHandle;
using baton::NetListenComm;
using baton::NetRecvComm;
using baton::NetRequest;
using baton::NetSendComm;
using bt::ScopedEnv;

struct Pair {
  NetSendComm* send = nullptr;
  NetRecvComm* recv = nullptr;
};

// A back-end on loopback (or on `ifname`).
std::unique_ptr<NetBackend> loopbackBackend(const char* ifname = "lo") {
  ScopedEnv env("NCCL_SOCKET_IFNAME", ifname);
  std::unique_ptr<NetBackend> b(baton::netsock::makeSocketBackend());
  EXPECT_EQ(b->init(), ncclSuccess) << baton::lastError();
  return b;
}

Pair connectPair(NetBackend* b) {
  NetHandle h{};
  NetListenComm* l = nullptr;
  Pair p;
  EXPECT_EQ(b->listen(0, &h, &l), ncclSuccess) << baton::lastError();
  EXPECT_EQ(b->connect(0, h, nullptr, &p.send), ncclSuccess) << baton::lastError();
  for (int i = 0; i < 10000 && !p.recv; ++i) {
    EXPECT_EQ(b->accept(l, &p.recv), ncclSuccess) << baton::lastError();
    if (!p.recv) usleep(100);
  }
  EXPECT_NE(p.recv, nullptr);
  b->closeListen(l);
  return p;
}

// Drives both requests until they finish; returns the receive's result.
ncclResult_t finish(NetBackend* b, NetRequest* s, NetRequest* r, size_t* got, int* index, uint64_t* tag) {
  int sDone = s ? 0 : 1, rDone = 0;
  for (long i = 0; i < 20000000 && !(sDone && rDone); ++i) {
    if (!sDone) {
      size_t n;
      if (b->test(s, &sDone, &n, nullptr, nullptr) != ncclSuccess) sDone = 1;
    }
    if (!rDone) {
      const ncclResult_t res = b->test(r, &rDone, got, index, tag);
      if (res != ncclSuccess) return res;
    }
  }
  return rDone ? ncclSuccess : ncclInternalError;
}

class NetSocket : public ::testing::TestWithParam<std::pair<const char*, const char*>> {};

TEST_P(NetSocket, MessagesOfEverySizeArriveWholeInTheBufferTheirTagPicks) {
  ScopedEnv threads("NCCL_SOCKET_NTHREADS", GetParam().first);
  ScopedEnv socks("NCCL_NSOCKS_PERTHREAD", GetParam().second);
  auto b = loopbackBackend();
  Pair p = connectPair(b.get());
  ASSERT_TRUE(p.send && p.recv);
  for (size_t size : {size_t(0), size_t(1), size_t(1000), size_t(65535), size_t(65536), size_t(1 << 20) + 3}) {
    for (uint64_t proto : {0, 2}) {
      std::vector<char> out(size), inA(size + 16, 0), inB(size + 16, 0);
      std::iota(out.begin(), out.end(), char(size + proto));
      const uint64_t tag = (size << 8) | proto;
      NetRequest *s = nullptr, *r = nullptr;
      void* bufs[2] = {inA.data(), inB.data()};
      const size_t sizes[2] = {inA.size(), inB.size()};
      const uint64_t tags[2] = {0, 2};
      ASSERT_EQ(b->irecv(p.recv, 2, bufs, sizes, tags, nullptr, &r), ncclSuccess);
      ASSERT_EQ(b->isend(p.send, out.data(), size, tag, nullptr, &s), ncclSuccess);
      ASSERT_TRUE(s && r);
      size_t got = 99;
      int index = -1;
      uint64_t gotTag = 0;
      ASSERT_EQ(finish(b.get(), s, r, &got, &index, &gotTag), ncclSuccess) << baton::lastError();
      EXPECT_EQ(got, size);
      EXPECT_EQ(index, proto == 0 ? 0 : 1);
      EXPECT_EQ(gotTag, tag);
      const std::vector<char>& in = proto == 0 ? inA : inB;
      EXPECT_TRUE(size == 0 || memcmp(in.data(), out.data(), size) == 0) << size << " bytes, tag " << tag;
      EXPECT_EQ(in[size], 0) << "wrote past the message";
    }
  }
  b->closeSend(p.send);
  b->closeRecv(p.recv);
}

INSTANTIATE_TEST_SUITE_P(
    Helpers, NetSocket, ::testing::Values(std::make_pair("0", "1"), std::make_pair("1", "1"), std::make_pair("2", "2")),
    [](const auto& info) { return std::string("threads") + info.param.first + "socks" + info.param.second; });

// BATON_SOCKET_DELAYED_ACK: the receiving control socket is in the kernel's delayed-ACK mode after
// each message (getsockopt TCP_QUICKACK reads 0 there), and stays in quick-ACK mode with it off: a
// connection that only receives never enters the mode by itself.
TEST(NetSocketAcks, ReceivingControlSocketDelaysItsAcksUnlessSwitchedOff) {
  for (const char* on : {"1", "0"}) {
    ScopedEnv env("BATON_SOCKET_DELAYED_ACK", on);
    auto b = loopbackBackend();
    Pair p = connectPair(b.get());
    const int fd = reinterpret_cast<baton::netsock::Comm*>(p.recv)->ctrl;
    auto quickAck = [&] {
      int quick = -1;
      socklen_t len = sizeof quick;
      EXPECT_EQ(getsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &quick, &len), 0);
      return quick;
    };
    // Rounds 0-2 back to back; round 3 after a pause long enough for the kernel's delayed-ACK
    // timer to fire and end the mode, which the back-end must then set again.
    for (int round = 0; round < 4; ++round) {
      if (round == 3) usleep(300000);
      char out[8] = {char(round)}, in[8] = {};
      NetRequest *s = nullptr, *r = nullptr;
      void* bufs[1] = {in};
      const size_t sizes[1] = {sizeof in};
      const uint64_t tags[1] = {1};
      ASSERT_EQ(b->irecv(p.recv, 1, bufs, sizes, tags, nullptr, &r), ncclSuccess);
      ASSERT_EQ(b->isend(p.send, out, sizeof out, 1, nullptr, &s), ncclSuccess);
      size_t got = 0;
      ASSERT_EQ(finish(b.get(), s, r, &got, nullptr, nullptr), ncclSuccess) << baton::lastError();
      EXPECT_EQ(got, sizeof out);
      EXPECT_EQ(in[0], char(round));
      EXPECT_EQ(quickAck(), std::string(on) == "1" ? 0 : 1) << "BATON_SOCKET_DELAYED_ACK=" << on << ", round " << round;
    }
    b->closeSend(p.send);
    b->closeRecv(p.recv);
  }
}

TEST(NetSocketErrors, OversizedFrameIsARemoteErrorNamingThePeer) {
  auto b = loopbackBackend();
  Pair p = connectPair(b.get());
  std::vector<char> out(2000), in(1000);
  NetRequest *s = nullptr, *r = nullptr;
  void* bufs[1] = {in.data()};
  const size_t sizes[1] = {in.size()};
  const uint64_t tags[1] = {2};
  ASSERT_EQ(b->irecv(p.recv, 1, bufs, sizes, tags, nullptr, &r), ncclSuccess);
  ASSERT_EQ(b->isend(p.send, out.data(), out.size(), 2, nullptr, &s), ncclSuccess);
  size_t got;
  EXPECT_EQ(finish(b.get(), s, r, &got, nullptr, nullptr), ncclRemoteError);
  EXPECT_NE(std::string(baton::lastError()).find("oversized frame from 127.0.0.1:"), std::string::npos)
      << baton::lastError();
  EXPECT_NE(std::string(baton::lastError()).find("2000 bytes for a 1000-byte buffer"), std::string::npos);
  b->closeSend(p.send);
  b->closeRecv(p.recv);
}

TEST(NetSocketErrors, TagThatMatchesNoPostedBufferIsARemoteError) {
  auto b = loopbackBackend();
  Pair p = connectPair(b.get());
  char out[8] = {}, in[8];
  NetRequest *s = nullptr, *r = nullptr;
  void* bufs[1] = {in};
  const size_t sizes[1] = {8};
  const uint64_t tags[1] = {1};
  ASSERT_EQ(b->irecv(p.recv, 1, bufs, sizes, tags, nullptr, &r), ncclSuccess);
  ASSERT_EQ(b->isend(p.send, out, 8, 5, nullptr, &s), ncclSuccess);
  EXPECT_EQ(finish(b.get(), s, r, nullptr, nullptr, nullptr), ncclRemoteError);
  EXPECT_NE(std::string(baton::lastError()).find("has tag 0x5, which matches none of the 1 posted buffers"),
            std::string::npos)
      << baton::lastError();
  b->closeSend(p.send);
  b->closeRecv(p.recv);
}

// A raw socket that passes the handshake of `h`'s listener, as a crashing peer would.
int rawPeer(const NetHandle& h, uint32_t index = 0, uint64_t magicXor = 0) {
  baton::netsock::Handle hd;
  memcpy(&hd, h.data, sizeof hd);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_EQ(connect(fd, &hd.addr.sa, sizeof(sockaddr_in)), 0);
  baton::netsock::Hello hello{hd.magic ^ magicXor, baton::kSocketNet, index};
  EXPECT_EQ(send(fd, &hello, sizeof hello, 0), (ssize_t)sizeof hello);
  return fd;
}

NetRecvComm* acceptOne(NetBackend* b, NetListenComm* l) {
  NetRecvComm* rc = nullptr;
  for (int i = 0; i < 20000 && !rc; ++i) {
    if (b->accept(l, &rc) != ncclSuccess) return nullptr;
    if (!rc) usleep(100);
  }
  return rc;
}

TEST(NetSocketErrors, TruncatedFrameNamesThePeerAndTheBytesThatArrived) {
  auto b = loopbackBackend();
  NetHandle h{};
  NetListenComm* l = nullptr;
  ASSERT_EQ(b->listen(0, &h, &l), ncclSuccess);
  int fd = rawPeer(h);
  NetRecvComm* rc = acceptOne(b.get(), l);
  ASSERT_NE(rc, nullptr) << baton::lastError();
  baton::netsock::FrameHeader hdr{2, 1000};
  ASSERT_EQ(send(fd, &hdr, sizeof hdr, 0), (ssize_t)sizeof hdr);
  ASSERT_EQ(send(fd, "0123456789", 10, 0), 10);
  close(fd);
  std::vector<char> in(4096);
  NetRequest* r = nullptr;
  void* bufs[1] = {in.data()};
  const size_t sizes[1] = {in.size()};
  const uint64_t tags[1] = {2};
  ASSERT_EQ(b->irecv(rc, 1, bufs, sizes, tags, nullptr, &r), ncclSuccess);
  EXPECT_EQ(finish(b.get(), nullptr, r, nullptr, nullptr, nullptr), ncclRemoteError);
  const std::string msg = baton::lastError();
  EXPECT_NE(msg.find("connection from 127.0.0.1:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("after 10 of 1000 bytes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated frame"), std::string::npos) << msg;
  b->closeRecv(rc);
  b->closeListen(l);
}

TEST(NetSocketErrors, PeerThatClosesBetweenFramesIsARemoteError) {
  auto b = loopbackBackend();
  Pair p = connectPair(b.get());
  b->closeSend(p.send);
  char in[8];
  NetRequest* r = nullptr;
  void* bufs[1] = {in};
  const size_t sizes[1] = {8};
  const uint64_t tags[1] = {2};
  ASSERT_EQ(b->irecv(p.recv, 1, bufs, sizes, tags, nullptr, &r), ncclSuccess);
  EXPECT_EQ(finish(b.get(), nullptr, r, nullptr, nullptr, nullptr), ncclRemoteError);
  EXPECT_NE(std::string(baton::lastError()).find("closed by the peer"), std::string::npos) << baton::lastError();
  // The failure sticks: the next request gets it at once.
  EXPECT_EQ(b->irecv(p.recv, 1, bufs, sizes, tags, nullptr, &r), ncclRemoteError);
  b->closeRecv(p.recv);
}

TEST(NetSocketErrors, StrangerOnTheDataPortIsDroppedAndThePeerStillConnects) {
  auto b = loopbackBackend();
  NetHandle h{};
  NetListenComm* l = nullptr;
  ASSERT_EQ(b->listen(0, &h, &l), ncclSuccess);
  int stranger = rawPeer(h, 0, /*magicXor=*/0x1234);  // right format, wrong magic
  NetRecvComm* rc = nullptr;
  for (int i = 0; i < 50; ++i) {
    ASSERT_EQ(b->accept(l, &rc), ncclSuccess);
    ASSERT_EQ(rc, nullptr);
    usleep(1000);
  }
  char probe;
  EXPECT_EQ(recv(stranger, &probe, 1, 0), 0) << "the stranger's connection is closed";
  close(stranger);
  NetSendComm* sc = nullptr;
  ASSERT_EQ(b->connect(0, h, nullptr, &sc), ncclSuccess);
  rc = acceptOne(b.get(), l);
  EXPECT_NE(rc, nullptr) << baton::lastError();
  b->closeSend(sc);
  if (rc) b->closeRecv(rc);
  b->closeListen(l);
}

TEST(NetSocketErrors, RefusedConnectionNamesTheAddress) {
  auto b = loopbackBackend();
  NetHandle h{};
  NetListenComm* l = nullptr;
  ASSERT_EQ(b->listen(0, &h, &l), ncclSuccess);
  b->closeListen(l);  // nobody listens there any more
  baton::netsock::Handle hd;
  memcpy(&hd, h.data, sizeof hd);
  NetSendComm* sc = nullptr;
  EXPECT_EQ(b->connect(0, h, nullptr, &sc), ncclRemoteError);
  EXPECT_EQ(sc, nullptr);
  const std::string msg = baton::lastError();
  EXPECT_NE(msg.find("cannot connect to peer " + baton::addressToString(hd.addr)), std::string::npos) << msg;
  EXPECT_NE(msg.find("connection refused"), std::string::npos) << msg;
}

TEST(NetSocketErrors, UnreachablePeerFailsWithinTheTimeoutNamingIt) {
  ScopedEnv timeout("BATON_BOOTSTRAP_TIMEOUT", "2");
  // Tests dial only loopback and the namespaced hosts they made (docs/testing.md), and no loopback
  // address is unreachable. tests/net/multihost_test.sh runs this inside a namespaced host with an
  // unused address of that host's own subnet (BATON_TEST_UNREACHABLE=10.77.0.99:9).
  const char* env = getenv("BATON_TEST_UNREACHABLE");
  if (!env || !*env)
    GTEST_SKIP()
        << "needs BATON_TEST_UNREACHABLE=<unused address in a namespaced test host's subnet>:<port>; "
           "tests/net/multihost_test.sh runs it in its namespaced hosts (tests never dial outside this machine)";
  const std::string target = env;
  auto b = loopbackBackend(nullptr);
  baton::netsock::Handle hd{};
  ASSERT_EQ(baton::parseAddress(target.c_str(), &hd.addr), ncclSuccess);
  hd.magic = 1;
  NetHandle h{};
  memcpy(h.data, &hd, sizeof hd);
  NetSendComm* sc = nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  const ncclResult_t res = b->connect(0, h, nullptr, &sc);
  if (res == ncclSuccess) {
    b->closeSend(sc);
    GTEST_SKIP() << "this machine's network accepted a connection to " << target
                 << " (a transparent proxy?); tests/net/multihost_test.sh checks an unreachable peer in its namespaces";
  }
  EXPECT_EQ(res, ncclRemoteError);
  EXPECT_LT(bt::secondsSince(t0), 5.0);
  EXPECT_NE(std::string(baton::lastError()).find("cannot connect to peer " + target), std::string::npos)
      << baton::lastError();
}

TEST(NetSocketErrors, InterfaceNameThatDoesNotExistIsNamed) {
  ScopedEnv env("NCCL_SOCKET_IFNAME", "nosuch0");
  std::unique_ptr<NetBackend> b(baton::netsock::makeSocketBackend());
  EXPECT_EQ(b->init(), ncclSystemError);
  EXPECT_NE(std::string(baton::lastError()).find("NCCL_SOCKET_IFNAME='nosuch0'"), std::string::npos)
      << baton::lastError();
  EXPECT_EQ(b->devices(), 0);
  NetHandle h{};
  NetListenComm* l = nullptr;
  EXPECT_EQ(b->listen(0, &h, &l), ncclInternalError);
}

TEST(NetSocketIpv6, LoopbackRoundTrip) {
  ScopedEnv fam("NCCL_SOCKET_FAMILY", "6");
  ScopedEnv env("NCCL_SOCKET_IFNAME", "lo");
  std::unique_ptr<NetBackend> b(baton::netsock::makeSocketBackend());
  ASSERT_EQ(b->init(), ncclSuccess);
  baton::NetProperties props;
  ASSERT_EQ(b->getProperties(0, &props), ncclSuccess);
  NetHandle h{};
  NetListenComm* l = nullptr;
  ASSERT_EQ(b->listen(0, &h, &l), ncclSuccess);
  baton::netsock::Handle hd;
  memcpy(&hd, h.data, sizeof hd);
  b->closeListen(l);
  if (hd.addr.sa.sa_family != AF_INET6) GTEST_SKIP() << "no IPv6 address on lo on this machine";
  Pair p = connectPair(b.get());
  ASSERT_TRUE(p.send && p.recv);
  char out[100], in[100] = {};
  memset(out, 7, sizeof out);
  NetRequest *s = nullptr, *r = nullptr;
  void* bufs[1] = {in};
  const size_t sizes[1] = {100};
  const uint64_t tags[1] = {2};
  ASSERT_EQ(b->irecv(p.recv, 1, bufs, sizes, tags, nullptr, &r), ncclSuccess);
  ASSERT_EQ(b->isend(p.send, out, 100, 2, nullptr, &s), ncclSuccess);
  EXPECT_EQ(finish(b.get(), s, r, nullptr, nullptr, nullptr), ncclSuccess) << baton::lastError();
  EXPECT_EQ(memcmp(in, out, 100), 0);
  b->closeSend(p.send);
  b->closeRecv(p.recv);
}

}  // namespace

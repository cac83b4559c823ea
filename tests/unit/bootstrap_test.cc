// The bootstrap root through the public API: it keeps serving after a stranger's bytes, ranks
// meet through NCCL_COMM_ID without passing an id, and a rendezvous that cannot complete fails in
// bounded time saying why. (Bootstrap driven directly: bootstrap_peer_test.cc.)
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/bootstrap_wire.h"
#include "bootstrap/rendezvous.h"
#include "nccl.h"
#include "unit/raw_socket.h"
#include "unit/unit_helpers.h"

namespace {

using baton::BootstrapHandle;
using baton::SocketAddress;
using bt::closedByPeer;
using bt::Handshake;
using bt::lastError;
using bt::rawConnect;
using bt::rawSend;
using bt::ScopedEnv;
using bt::secondsSince;
using Clock = std::chrono::steady_clock;

BootstrapHandle handleOf(const ncclUniqueId& id) {
  BootstrapHandle h;
  memcpy(&h, &id, sizeof h);
  return h;
}

// Two ranks as threads on `id`; each all-reduces {rank+1, ...} and checks the sum.
void twoRanksInitAndAllReduce(const ncclUniqueId& id) {
  ncclResult_t res[2], ar[2] = {ncclInternalError, ncclInternalError};
  ncclComm_t comms[2] = {nullptr, nullptr};
  float out[2][16];
  std::vector<std::thread> ts;
  for (int r = 0; r < 2; ++r)
    ts.emplace_back([&, r] {
      res[r] = ncclCommInitRank(&comms[r], 2, id, r);
      if (res[r] != ncclSuccess) return;
      float in[16];
      for (int i = 0; i < 16; ++i) in[i] = float((r + 1) * (i + 1));
      ar[r] = ncclAllReduce(in, out[r], 16, ncclFloat, ncclSum, comms[r], nullptr);
    });
  for (auto& t : ts) t.join();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(res[r], ncclSuccess) << "rank " << r << ": " << lastError();
    EXPECT_EQ(ar[r], ncclSuccess) << "rank " << r << ": " << lastError();
    for (int i = 0; ar[r] == ncclSuccess && i < 16; ++i) EXPECT_EQ(out[r][i], float(3 * (i + 1))) << "rank " << r;
  }
  for (ncclComm_t c : comms) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);  // NULL is fine
}

TEST(Bootstrap, RootKeepsServingAfterStrangers) {
  ScopedEnv timeout("BATON_BOOTSTRAP_TIMEOUT", "20");  // the root's deadline, read when it starts
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess) << lastError();
  const BootstrapHandle h = handleOf(id);
  const uint32_t checkInLen = sizeof(baton::CheckIn);

  // (a) garbage bytes.
  int fd = rawConnect(h.addr);
  ASSERT_GE(fd, 0);
  char garbage[64];
  for (size_t i = 0; i < sizeof garbage; ++i) garbage[i] = char(i * 37 + 11);
  rawSend(fd, garbage, sizeof garbage);
  EXPECT_TRUE(closedByPeer(fd, 3.0)) << "root kept a connection that sent garbage";
  close(fd);
  // (b) the right magic with a wrong socket type.
  fd = rawConnect(h.addr);
  Handshake wrongType{h.magic, 7};
  rawSend(fd, &wrongType, sizeof wrongType);
  EXPECT_TRUE(closedByPeer(fd, 3.0)) << "root kept a connection with socket type 7";
  close(fd);
  // (d) the right handshake and an oversized length field.
  const Handshake good{h.magic, baton::kSocketBootstrap};
  fd = rawConnect(h.addr);
  const uint32_t huge = 0xffffffffu;
  rawSend(fd, &good, sizeof good);
  rawSend(fd, &huge, sizeof huge);
  EXPECT_TRUE(closedByPeer(fd, 3.0)) << "root kept a connection with length 0xffffffff";
  close(fd);
  // A well-formed check-in that names an impossible nranks, one with a negative rank, and one whose
  // listener address nobody can dial (had the root taken it as rank 0, the real rank 0 below would
  // be a duplicate and the rendezvous would fail).
  for (baton::CheckIn ci :
       {baton::CheckIn{0, 0, h.addr}, baton::CheckIn{-1, 2, h.addr}, baton::CheckIn{0, 2, SocketAddress{}}}) {
    fd = rawConnect(h.addr);
    rawSend(fd, &good, sizeof good);
    rawSend(fd, &checkInLen, sizeof checkInLen);
    rawSend(fd, &ci, sizeof ci);
    EXPECT_TRUE(closedByPeer(fd, 3.0)) << "root kept a check-in with rank " << ci.rank << " nranks " << ci.nranks;
    close(fd);
  }
  // (c) the right handshake and length, half a check-in, then close.
  fd = rawConnect(h.addr);
  rawSend(fd, &good, sizeof good);
  rawSend(fd, &checkInLen, sizeof checkInLen);
  rawSend(fd, garbage, 5);
  close(fd);
  // (e) connect and say nothing: the root gives up on it after ~2 s.
  const int silent = rawConnect(h.addr);
  ASSERT_GE(silent, 0);

  const auto t0 = Clock::now();
  twoRanksInitAndAllReduce(id);
  EXPECT_LT(secondsSince(t0), 10.0);
  EXPECT_TRUE(closedByPeer(silent, 1.0)) << "root still holds the silent connection";
  close(silent);
}

TEST(Bootstrap, NcclCommIdLetsRanksMeetWithoutPassingAnId) {
  const int port = bt::freeLoopbackPort();
  ASSERT_GT(port, 0);
  ScopedEnv commId("NCCL_COMM_ID", ("127.0.0.1:" + std::to_string(port)).c_str());
  ScopedEnv timeout("BATON_BOOTSTRAP_TIMEOUT", "10");
  ncclUniqueId ids[2];
  std::thread a([&] { EXPECT_EQ(ncclGetUniqueId(&ids[0]), ncclSuccess); });
  std::thread b([&] { EXPECT_EQ(ncclGetUniqueId(&ids[1]), ncclSuccess); });
  a.join();
  b.join();
  EXPECT_EQ(memcmp(&ids[0], &ids[1], sizeof ids[0]), 0) << "both ranks derive the same id from NCCL_COMM_ID";
  EXPECT_EQ(handleOf(ids[0]).addr.sin.sin_port, htons((uint16_t)port));
  twoRanksInitAndAllReduce(ids[0]);
}

// Rank 1 never comes: rank 0 fails within BATON_BOOTSTRAP_TIMEOUT (2 s) + 2 s, saying why.
ncclResult_t initWithMissingRank(std::string* msg) {
  ScopedEnv timeout("BATON_BOOTSTRAP_TIMEOUT", "2");
  ncclUniqueId id;
  EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comm = nullptr;
  const auto t0 = Clock::now();
  const ncclResult_t res = ncclCommInitRank(&comm, 2, id, 0);
  *msg = lastError();
  EXPECT_LT(secondsSince(t0), 2.0 + 2.0);
  EXPECT_EQ(comm, nullptr);
  return res;
}

// The root's timeout names the ranks that never checked in: a rank that died before it did is
// known to nobody else.
TEST(Bootstrap, TimeoutNamesTheRanksThatNeverCheckedIn) {
  auto checkIn = [](baton::Rendezvous* rv, int rank, int nranks) {
    baton::CheckIn ci{rank, nranks, {}};
    ci.listen.sin.sin_family = AF_INET;
    ci.listen.sin.sin_port = htons(uint16_t(1000 + rank));
    return rv->checkIn(sizeof ci, ci);
  };
  baton::Rendezvous four;
  EXPECT_EQ(checkIn(&four, 0, 4), baton::Rendezvous::kTake);
  EXPECT_EQ(checkIn(&four, 2, 4), baton::Rendezvous::kTake);
  EXPECT_EQ(four.missing(), "1, 3");
  baton::Rendezvous many;
  EXPECT_EQ(checkIn(&many, 11, 12), baton::Rendezvous::kTake);
  EXPECT_EQ(many.missing(), "0, 1, 2, 3, 4, 5, 6, 7, ...");
}

TEST(Bootstrap, MissingRankFailsAfterTimeout) {
  std::string msg;
  const ncclResult_t res = initWithMissingRank(&msg);
  EXPECT_NE(res, ncclSuccess);
  // Either the root's verdict ("only 1 of 2 ranks checked in ...") or the rank's own recv timeout.
  EXPECT_TRUE(bt::messageHas(msg, {"BATON_BOOTSTRAP_TIMEOUT"}));
}

// A rendezvous that times out is ncclSystemError (the root's verdict) or ncclRemoteError (the
// rank's own recv deadline fires first: root and rank time out at about the same moment), as a
// dead root's is; never ncclInvalidUsage, which the root keeps for inconsistent ranks.
TEST(Bootstrap, MissingRankIsASystemOrRemoteError) {
  std::string msg;
  const ncclResult_t res = initWithMissingRank(&msg);
  EXPECT_TRUE(res == ncclSystemError || res == ncclRemoteError) << ncclGetErrorString(res) << ": " << msg;
}

}  // namespace

namespace {

// NCCL_SOCKET_IFNAME picks the interface: "=lo" puts the root (and every rank) on loopback; a
// name that matches nothing is a clear error from ncclGetUniqueId, not a hang.
TEST(BootstrapIfname, LoopbackByName) {
  ScopedEnv ifname("NCCL_SOCKET_IFNAME", "=lo");
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  const BootstrapHandle h = handleOf(id);
  ASSERT_EQ(h.addr.sa.sa_family, AF_INET);
  EXPECT_EQ(ntohl(h.addr.sin.sin_addr.s_addr) >> 24, 127u) << baton::addressToString(h.addr);
  twoRanksInitAndAllReduce(id);
}

TEST(BootstrapIfname, NoSuchInterface) {
  ScopedEnv ifname("NCCL_SOCKET_IFNAME", "=nosuchif0");
  ncclUniqueId id;
  EXPECT_EQ(ncclGetUniqueId(&id), ncclSystemError);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("NCCL_SOCKET_IFNAME='=nosuchif0'"), std::string::npos)
      << ncclGetLastError(nullptr);
}

}  // namespace

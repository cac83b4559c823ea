// baton::Bootstrap driven directly: a rank's own listener keeps serving after a stranger's bytes,
// and allGather, barrier and tagged send/recv (with out-of-order tags) work across four threads; the
// socket wait under them ends on data, an abort, a deadline or a give-up test.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/bootstrap_wire.h"
#include "exec_model.h"
#include "misc/socket.h"
#include "nccl.h"
#include "unit/raw_socket.h"
#include "unit/unit_helpers.h"

namespace {

using baton::Bootstrap;
using baton::BootstrapHandle;
using baton::SocketAddress;
using bt::Handshake;
using bt::lastError;
using bt::rawConnect;
using bt::rawSend;
using bt::ScopedEnv;

// Acts as the root for `nranks` ranks so the test learns each rank's own listener address.
void fakeRoot(int listenFd, int nranks, std::vector<SocketAddress>* table) {
  const uint64_t deadline = baton::nowNs() + 10000000000ull;
  std::vector<int> fds(nranks, -1);
  table->resize(nranks);
  for (int i = 0; i < nranks; ++i) {
    int fd = -1;
    Handshake hs;
    uint32_t len = 0;
    baton::CheckIn ci{};
    ASSERT_EQ(baton::socketAccept(listenFd, deadline, nullptr, &fd), ncclSuccess);
    ASSERT_EQ(baton::socketRecvAll(fd, &hs, sizeof hs, deadline, nullptr), ncclSuccess);
    ASSERT_EQ(baton::socketRecvAll(fd, &len, sizeof len, deadline, nullptr), ncclSuccess);
    ASSERT_EQ(baton::socketRecvAll(fd, &ci, sizeof ci, deadline, nullptr), ncclSuccess);
    ASSERT_TRUE(ci.rank >= 0 && ci.rank < nranks);
    fds[ci.rank] = fd;
    (*table)[ci.rank] = ci.listen;
  }
  baton::CheckInReply ok{};
  for (int fd : fds) {
    ASSERT_EQ(baton::socketSendAll(fd, &ok, sizeof ok, deadline), ncclSuccess);
    ASSERT_EQ(baton::socketSendAll(fd, table->data(), nranks * sizeof(SocketAddress), deadline), ncclSuccess);
    close(fd);
  }
}

// Creates `n` Bootstraps (one thread each). With `table`, a fake root records listener addresses.
std::vector<std::unique_ptr<Bootstrap>> makeBootstraps(int n, std::vector<SocketAddress>* table = nullptr) {
  BootstrapHandle h{};
  int rootFd = -1;
  std::thread root;
  if (table) {
    h.magic = 0x1122334455667788ull;
    EXPECT_EQ(baton::parseAddress("127.0.0.1:0", &h.addr), ncclSuccess);
    EXPECT_EQ(baton::socketListen(&h.addr, &rootFd), ncclSuccess);
    root = std::thread(fakeRoot, rootFd, n, table);
  } else {
    ncclUniqueId id;
    EXPECT_EQ(baton::bootstrapGetUniqueIdFresh(&id), ncclSuccess);
    EXPECT_EQ(baton::bootstrapParseId(&id, &h), ncclSuccess);
  }
  std::vector<std::unique_ptr<Bootstrap>> bs(n);
  std::vector<std::thread> ts;
  for (int r = 0; r < n; ++r)
    ts.emplace_back([&, r] { EXPECT_EQ(Bootstrap::create(h, r, n, nullptr, &bs[r]), ncclSuccess) << lastError(); });
  for (auto& t : ts) t.join();
  if (root.joinable()) root.join();
  if (rootFd >= 0) close(rootFd);
  return bs;
}

// Runs body(rank) on one thread per bootstrap.
template <typename F>
void onEachRank(std::vector<std::unique_ptr<Bootstrap>>& bs, F body) {
  std::vector<std::thread> ts;
  for (size_t r = 0; r < bs.size(); ++r) ts.emplace_back([&, r] { body((int)r, *bs[r]); });
  for (auto& t : ts) t.join();
}

TEST(BootstrapDirect, PeerListenerKeepsServingAfterStrangers) {
  ScopedEnv timeout("BATON_BOOTSTRAP_TIMEOUT", "10");
  std::vector<SocketAddress> table;
  auto bs = makeBootstraps(2, &table);
  ASSERT_TRUE(bs[0] && bs[1]);
  const SocketAddress& target = table[1];
  const Handshake good{0x1122334455667788ull, baton::kSocketBootstrap};
  auto stranger = [&](const void* a, size_t na, const void* b = nullptr, size_t nb = 0) {
    int fd = rawConnect(target);
    ASSERT_GE(fd, 0);
    rawSend(fd, a, na);
    if (b) rawSend(fd, b, nb);
    close(fd);
  };
  const char garbage[40] = "GET / HTTP/1.0\r\n\r\n";
  const Handshake wrongMagic{0x0280028002800280ull, baton::kSocketBootstrap};
  const baton::PeerHeader badSrc{99, 0, 5, 4}, oversized{0, 0, 5, 0xffffffffffffull}, truncated{0, 0, 5, 1000};
  stranger(garbage, sizeof garbage);
  stranger(&wrongMagic, sizeof wrongMagic);
  stranger(&good, sizeof good, &badSrc, 6);  // half a header
  stranger(&good, sizeof good, &badSrc, sizeof badSrc);
  stranger(&good, sizeof good, &oversized, sizeof oversized);
  stranger(&good, sizeof good, &truncated, sizeof truncated);  // the 1000 payload bytes never come

  onEachRank(bs, [](int r, Bootstrap& b) {
    const uint32_t value = 0xabc000 + r;
    uint32_t got = 0;
    const ncclResult_t res = r == 0 ? b.send(1, 5, &value, sizeof value) : b.recv(0, 5, &got, sizeof got);
    EXPECT_EQ(res, ncclSuccess) << "rank " << r << ": " << lastError();
    EXPECT_EQ(got, r == 1 ? 0xabc000u : 0u);
    uint64_t all[2] = {0, 0};
    all[r] = 100 + r;
    EXPECT_EQ(b.allGather(all, sizeof all[0]), ncclSuccess) << lastError();
    EXPECT_EQ(all[0], 100u);
    EXPECT_EQ(all[1], 101u);
    EXPECT_EQ(b.barrier(), ncclSuccess) << lastError();
  });
}

TEST(BootstrapDirect, AllGatherBarrierSendRecvFourRanks) {
  constexpr int kRanks = 4, kBlock = 1000, kRounds = 4;
  ScopedEnv timeout("BATON_BOOTSTRAP_TIMEOUT", "10");
  auto bs = makeBootstraps(kRanks);
  for (auto& b : bs) ASSERT_TRUE(b);
  std::atomic<int> arrived[kRounds] = {};
  onEachRank(bs, [&](int r, Bootstrap& b) {
    EXPECT_EQ(b.rank(), r);
    EXPECT_EQ(b.nranks(), kRanks);
    std::vector<unsigned char> all(kRanks * kBlock, 0);
    for (int i = 0; i < kBlock; ++i) all[r * kBlock + i] = (unsigned char)(r * 31 + i);
    ASSERT_EQ(b.allGather(all.data(), kBlock), ncclSuccess) << lastError();
    for (int p = 0; p < kRanks; ++p)
      for (int i = 0; i < kBlock; ++i) ASSERT_EQ(all[p * kBlock + i], (unsigned char)(p * 31 + i)) << "block " << p;
    // Barrier: nobody leaves before the slow rank of the round arrives.
    for (int round = 0; round < kRounds; ++round) {
      if (r == round % kRanks) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      arrived[round]++;
      ASSERT_EQ(b.barrier(), ncclSuccess) << lastError();
      EXPECT_EQ(arrived[round].load(), kRanks) << "rank " << r << " left barrier " << round << " early";
    }
    // Tagged messages received out of order are parked until asked for.
    const int next = (r + 1) % kRanks, prev = (r + kRanks - 1) % kRanks;
    const int first = r * 10 + 1, second = r * 10 + 2;
    ASSERT_EQ(b.send(next, 0x71, &first, sizeof first), ncclSuccess);
    ASSERT_EQ(b.send(next, 0x72, &second, sizeof second), ncclSuccess);
    int got2 = 0, got1 = 0;
    ASSERT_EQ(b.recv(prev, 0x72, &got2, sizeof got2), ncclSuccess) << lastError();
    ASSERT_EQ(b.recv(prev, 0x71, &got1, sizeof got1), ncclSuccess) << lastError();
    EXPECT_EQ(got1, prev * 10 + 1);
    EXPECT_EQ(got2, prev * 10 + 2);
    EXPECT_EQ(b.barrier(), ncclSuccess);
  });
}

// A peer whose process is gone (here: its Bootstrap destroyed, which closes its listener) is
// named within seconds, by a send (its listener refuses at once) and by a recv (the waiting rank's
// probe is refused), well before BATON_BOOTSTRAP_TIMEOUT.
TEST(BootstrapDirect, PeerThatExitedIsNamedWithinSeconds) {
  ScopedEnv timeout("BATON_BOOTSTRAP_TIMEOUT", "60");
  auto bs = makeBootstraps(2);
  ASSERT_TRUE(bs[0] && bs[1]);
  bs[1].reset();
  int value = 7;
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(bs[0]->send(1, 0x31, &value, sizeof value), ncclRemoteError);
  EXPECT_LT(bt::secondsSince(t0), 1.0);
  EXPECT_TRUE(bt::messageHas(lastError(), {"rank 0", "rank 1", "refused"})) << lastError();
  t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(bs[0]->recv(1, 0x32, &value, sizeof value), ncclRemoteError);
  EXPECT_LT(bt::secondsSince(t0), 1.0 + 2.0);  // the first probe comes after 1 s
  EXPECT_TRUE(bt::messageHas(lastError(), {"rank 0", "rank 1 is gone", "tag 0x32"})) << lastError();
}

// Probes reach a live peer that is busy elsewhere: it drops them unseen and takes the real
// message behind them.
TEST(BootstrapDirect, ProbesDoNotDisturbASlowPeer) {
  ScopedEnv timeout("BATON_BOOTSTRAP_TIMEOUT", "30");
  auto bs = makeBootstraps(2);
  ASSERT_TRUE(bs[0] && bs[1]);
  onEachRank(bs, [](int r, Bootstrap& b) {
    int got = 0;
    const int mine = 100 + r;
    if (r == 0) {
      EXPECT_EQ(b.recv(1, 0x41, &got, sizeof got), ncclSuccess) << lastError();  // probes rank 1 meanwhile
      EXPECT_EQ(got, 101);
      EXPECT_EQ(b.send(1, 0x42, &mine, sizeof mine), ncclSuccess) << lastError();
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(2500));
      EXPECT_EQ(b.send(0, 0x41, &mine, sizeof mine), ncclSuccess) << lastError();
      EXPECT_EQ(b.recv(0, 0x42, &got, sizeof got), ncclSuccess) << lastError();  // behind the probes
      EXPECT_EQ(got, 100);
    }
  });
}

// The one wait every bootstrap, watchdog and IPC socket wait is made of: each of its four ends.
TEST(SocketWait, EndsOnDataAbortDeadlineOrGiveUp) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  volatile int abortFlag = 0;
  const uint64_t t0 = baton::nowNs();
  EXPECT_EQ(baton::socketWaitReadable(p[0], t0 + 150000000ull, &abortFlag), baton::SocketWait::kDeadline);
  EXPECT_GE(baton::nowNs() - t0, 150000000ull);
  int looks = 0;
  EXPECT_EQ(baton::socketWaitReadable(p[0], 0, &abortFlag, [&] { return ++looks == 2; }), baton::SocketWait::kGaveUp);
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    __atomic_store_n(const_cast<int*>(&abortFlag), 1, __ATOMIC_RELEASE);
  });
  EXPECT_EQ(baton::socketWaitReadable(p[0], 0, &abortFlag), baton::SocketWait::kAborted);
  aborter.join();
  ASSERT_EQ(write(p[1], "x", 1), 1);
  EXPECT_EQ(baton::socketWaitReadable(p[0], 0, &abortFlag), baton::SocketWait::kReadable);  // data wins over abort
  close(p[0]);
  close(p[1]);
}

}  // namespace

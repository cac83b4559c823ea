// Point-to-point: AlltoAll (in place too), Gather and Scatter (roots 0 and n-1; in place per NCCL:
// Gather sendbuff = recvbuff + rank*count, Scatter recvbuff = sendbuff + rank*count) and a Send/Recv
// ring, every datatype x count {0,1,7,1023} x placement at 1..8 ranks (drives taking turns, see
// runSmall) and the large count at 2,3,5,8 ranks (runLarge); plus mutually dependent pairs, sends
// to self (and their mismatches), several messages to one peer, all pairs with distinct sizes, and blocking Send/Recv
// outside a group.
#include <thread>

#include "collectives/harness.h"

namespace bt {
namespace {

constexpr Coll kSendRecvColls[] = {Coll::AlltoAll, Coll::Gather, Coll::Scatter, Coll::SendRecv};

class SendRecv : public ::testing::TestWithParam<TypeRanks> {};
TEST_P(SendRecv, Small) {
  auto [type, n] = GetParam();
  for (Coll c : kSendRecvColls) runSmall(cachedComms(n), c, type);
}
INSTANTIATE_TEST_SUITE_P(, SendRecv, ::testing::Combine(::testing::ValuesIn(kAllTypes), ::testing::Range(1, 9)),
                         typeRanksName);

// The large count (the AlltoAll/Gather/Scatter buffer of n blocks >= 4 MiB; Send/Recv 4 MiB a rank).
class SendRecvLarge : public ::testing::TestWithParam<TypeRanks> {};
TEST_P(SendRecvLarge, Large) {
  auto [type, n] = GetParam();
  for (Coll c : kSendRecvColls) runLarge(cachedComms(n), c, type);
}
INSTANTIATE_TEST_SUITE_P(, SendRecvLarge,
                         ::testing::Combine(::testing::ValuesIn(kAllTypes), ::testing::Values(2, 3, 5, 8)),
                         typeRanksName);

// One message: rank `from` -> rank `to`, `count` elements of a payload unique to (tag, from, to), so
// a message delivered to the wrong receive shows.
struct Msg {
  int from, to;
  size_t count;
  uint64_t seed;
  GuardedBuffer send, recv;
  Msg(int f, int t, size_t c, uint64_t tag) : from(f), to(t), count(c), seed(tag * 1024 + t), send(c * 4), recv(c * 4) {
    fillPayload(4, seed, from, 0, count, send.data());
  }
  std::string check() const {
    std::vector<char> want(count * 4);
    fillPayload(4, seed, from, 0, count, want.data());
    std::string e = compareBits(recv.data(), want.data(), count, 4, "recvbuff");
    if (e.empty()) e = compareBits(send.data(), want.data(), count, 4, "sendbuff (modified)");
    if (e.empty()) e = send.checkGuards() + recv.checkGuards();
    return e.empty() ? e
                     : std::to_string(from) + "->" + std::to_string(to) + " count " + std::to_string(count) + ": " + e;
  }
};

// Each rank posts its messages' sends and receives (in `msgs` order) inside one group per rank.
void exchange(const Comms& comms, std::vector<std::unique_ptr<Msg>>& msgs, Drive d) {
  const int n = (int)comms.size();
  EXPECT_EQ(runRanks(n, d,
                     [&](int r) -> ncclResult_t {
                       ncclGroupStart();
                       ncclResult_t res = ncclSuccess;
                       for (auto& m : msgs) {
                         if (res == ncclSuccess && m->from == r)
                           res = ncclSend(m->send.data(), m->count, ncclFloat32, m->to, comms[r], nullptr);
                         if (res == ncclSuccess && m->to == r)
                           res = ncclRecv(m->recv.data(), m->count, ncclFloat32, m->from, comms[r], nullptr);
                       }
                       ncclResult_t end = ncclGroupEnd();
                       return res != ncclSuccess ? res : end;
                     }),
            "");
  for (auto& m : msgs) EXPECT_EQ(m->check(), "");
}

// Pairs that send to each other at once, more than the 8-slot FIFO holds: without a group that
// progresses sends and receives together this deadlocks.
TEST(SendRecvPatterns, MutuallyDependentPairs) {
  for (int n : {2, 4, 5}) {
    for (Drive d : {Drive::Threads, Drive::Group}) {
      std::vector<std::unique_ptr<Msg>> msgs;
      for (int r = 0; r + 1 < n; r += 2) {
        msgs.push_back(std::make_unique<Msg>(r, r + 1, (3u << 20) + 1, 11));
        msgs.push_back(std::make_unique<Msg>(r + 1, r, (3u << 20) + 3, 12));
      }
      exchange(cachedComms(n), msgs, d);
    }
  }
}

TEST(SendRecvPatterns, SendToSelf) {
  for (int n : {1, 3}) {
    for (Drive d : {Drive::Threads, Drive::Group}) {
      std::vector<std::unique_ptr<Msg>> msgs;
      for (int r = 0; r < n; ++r)
        for (size_t count : {size_t(0), size_t(1), size_t(1023), size_t(1) << 20})
          msgs.push_back(std::make_unique<Msg>(r, r, count, 20 + count));
      if (n > 1) msgs.push_back(std::make_unique<Msg>(0, 1, 999, 21));  // mixed with a real transfer
      exchange(cachedComms(n), msgs, d);
    }
  }
}

// A group's sends to self pair with its receives from self in order; unequal numbers or sizes are
// refused before anything moves, naming both (the CPU and GPU backends share the pairing). The
// failed group leaves the communicator in an error state, so each case gets its own.
TEST(SendRecvPatterns, SendToSelfMismatchIsInvalidUsage) {
  std::vector<float> a(16, 1.0f), b(16, 0.0f);
  struct Case {
    int sends, recvs;
    size_t recvCount;
    const char* says;
  };
  for (const Case& c : {Case{1, 1, 12, "send to self of 40 bytes but receive from self of 48 bytes"},
                        Case{2, 1, 10, "2 sends to itself but 1 receives from itself"}}) {
    Comms comms = initAll(1);
    NCCL_EXPECT(ncclGroupStart());
    for (int i = 0; i < c.sends; ++i) NCCL_EXPECT(ncclSend(a.data(), 10, ncclFloat32, 0, comms[0], nullptr));
    for (int i = 0; i < c.recvs; ++i) NCCL_EXPECT(ncclRecv(b.data(), c.recvCount, ncclFloat32, 0, comms[0], nullptr));
    EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
    EXPECT_NE(std::string(ncclGetLastError(comms[0])).find(c.says), std::string::npos) << ncclGetLastError(comms[0]);
    EXPECT_EQ(b[0], 0.0f);  // nothing was copied
    destroyComms(comms);
  }
}

// Several messages between the same two ranks in one group arrive in the order they were posted.
TEST(SendRecvPatterns, SeveralMessagesToOnePeerKeepOrder) {
  for (int n : {2, 3}) {
    std::vector<std::unique_ptr<Msg>> msgs;
    for (int r = 0; r < n; ++r)
      for (size_t count : {size_t(5), size_t(40000), size_t(0), size_t(1), size_t(300001)})
        msgs.push_back(std::make_unique<Msg>(r, (r + 1) % n, count, 30 + count));
    exchange(cachedComms(n), msgs, Drive::Threads);
  }
}

// Every ordered pair exchanges a message of its own size in one group.
TEST(SendRecvPatterns, AllPairsDistinctSizes) {
  for (int n : {3, 6, 8}) {
    for (Drive d : {Drive::Threads, Drive::Group}) {
      std::vector<std::unique_ptr<Msg>> msgs;
      for (int s = 0; s < n; ++s)
        for (int t = 0; t < n; ++t)
          msgs.push_back(std::make_unique<Msg>(s, t, (size_t)(s * 7 + t * 3) % 11 * 9001, 40));
      exchange(cachedComms(n), msgs, d);
    }
  }
}

// Blocking ncclSend / ncclRecv outside any group, the receiver posting first.
TEST(SendRecvPatterns, BlockingOutsideGroup) {
  const Comms& comms = cachedComms(2);
  Msg m(1, 0, 500000, 50);
  std::thread receiver([&] { NCCL_EXPECT(ncclRecv(m.recv.data(), m.count, ncclFloat32, 1, comms[0], nullptr)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  NCCL_EXPECT(ncclSend(m.send.data(), m.count, ncclFloat32, 0, comms[1], nullptr));
  receiver.join();
  EXPECT_EQ(m.check(), "");
}

// A ping-pong of lone sends and receives: the first transfer each way connects the peers on the
// general path; every later one takes the latency path on the calling thread (its P2P line must
// say so: a silent fallback fails), with exact data at sizes from one element to many FIFO steps.
TEST(SendRecvPatterns, PingPongTakesTheLatencyPath) {
  Comms c = initAll(2);
  for (size_t count : {size_t(1), size_t(16), size_t(300000)}) {
    std::vector<float> ping(count), pong(count), got0(count), got1(count);
    for (size_t i = 0; i < count; ++i) ping[i] = float(i % 1000), pong[i] = float(i % 1000 + 1);
    const std::string log = captureLog("P2P", [&] {
      std::thread peer([&] {
        for (int round = 0; round < 3; ++round) {
          NCCL_EXPECT(ncclRecv(got1.data(), count, ncclFloat32, 0, c[1], nullptr));
          NCCL_EXPECT(ncclSend(pong.data(), count, ncclFloat32, 0, c[1], nullptr));
        }
      });
      for (int round = 0; round < 3; ++round) {
        NCCL_EXPECT(ncclSend(ping.data(), count, ncclFloat32, 1, c[0], nullptr));
        NCCL_EXPECT(ncclRecv(got0.data(), count, ncclFloat32, 1, c[0], nullptr));
      }
      peer.join();
    });
    EXPECT_EQ(got1, ping) << count;
    EXPECT_EQ(got0, pong) << count;
    for (const char* line : {"Send: count ", "Recv: count "})
      EXPECT_NE(log.find(std::string(line) + std::to_string(count) + " datatype float peer"), std::string::npos)
          << line << count << ":\n"
          << log;
    EXPECT_NE(log.find("on the calling thread"), std::string::npos) << log;
  }
  destroyComms(c);
}

// Over NET (loopback TCP between thread ranks), a rank waiting in a small operation runs the proxy's
// progress pass itself (BATON_PROXY_ASSIST, proxy.h): the proxy's closing NET line counts the passes
// that moved data on rank threads, which must be some with it on and none with it off (0); the
// data is exact both ways.
TEST(SendRecvPatterns, RanksMoveTheirOwnNetSteps) {
  for (const char* assist : {"65536", "0"}) {
    ScopedEnv env(ScopedEnv::Vars{{"NCCL_P2P_DISABLE", "1"},
                                  {"NCCL_SHM_DISABLE", "1"},
                                  {"NCCL_SOCKET_IFNAME", "lo"},
                                  {"BATON_PROXY_ASSIST", assist}});
    std::vector<float> ping(1000), got0(1000), got1(1000);
    for (size_t i = 0; i < ping.size(); ++i) ping[i] = float(i);
    const std::string log = captureLog("NET", [&] {
      Comms c = initAll(2);
      for (int round = 0; round < 20; ++round) {
        std::thread peer([&] {
          NCCL_EXPECT(ncclRecv(got1.data(), got1.size(), ncclFloat32, 0, c[1], nullptr));
          NCCL_EXPECT(ncclSend(got1.data(), got1.size(), ncclFloat32, 0, c[1], nullptr));
        });
        NCCL_EXPECT(ncclSend(ping.data(), ping.size(), ncclFloat32, 1, c[0], nullptr));
        NCCL_EXPECT(ncclRecv(got0.data(), got0.size(), ncclFloat32, 1, c[0], nullptr));
        peer.join();
        ASSERT_EQ(got0, ping) << "round " << round;
      }
      destroyComms(c);
    });
    unsigned long long byRanks = 0, total = 0;
    for (size_t at = log.find("passes that moved data ran on rank threads"); at != std::string::npos;
         at = log.find("passes that moved data ran on rank threads", at + 1)) {
      const size_t colon = log.rfind(": ", at);
      byRanks += std::stoull(log.substr(colon + 2));
      ++total;
    }
    EXPECT_EQ(total, 2u) << "one line per rank's proxy:\n" << log;
    if (std::string(assist) != "0") EXPECT_GT(byRanks, 0u) << log;
    else EXPECT_EQ(byRanks, 0u) << log;
  }
}

}  // namespace
}  // namespace bt

// Protocol: the Simple protocol's FIFO primitives and the p2p step functions, driven directly on a
// heap-allocated ConnFifo by a producer and a consumer thread (no communicator): data through many
// wrap-arounds of the 8-slot FIFO at depth 8 and depth 1, reduce and copy chains over three
// threads, sendRecvTrySend / sendRecvTryRecv loops, waits that end on the abort flag or the timeout instead of
// hanging, and mismatched sizes reported as failures that name the size.
#include <thread>

#include "collectives/data.h"
#include "gtest/gtest.h"
#include "primitives_simple.h"
#include "sendrecv_progress.h"

namespace baton {
namespace {

// One connector: a ConnFifo followed by kSteps slots, in heap memory, and both sides' handles.
struct Fifo {
  Fifo(size_t stepBytes, int depth) : bytes(sizeof(ConnFifo) + kSteps * stepBytes) {
    FifoLayout layout;
    layout.stepBytes[kProtoSimple] = stepBytes;
    mem = static_cast<ConnFifo*>(::operator new(bytes, std::align_val_t(128)));
    memset(static_cast<void*>(mem), 0, bytes);
    send = makeConnDev(mem, layout, /*peer=*/1, depth);
    recv = makeConnDev(mem, layout, /*peer=*/0, depth);
  }
  ~Fifo() { ::operator delete(mem, std::align_val_t(128)); }
  size_t bytes;
  ConnFifo* mem;
  ConnDev send, recv;
};

ExecCtx ctxFor(int rank, const volatile int* abortFlag = nullptr) {
  ExecCtx ctx;
  ctx.rank = rank;
  ctx.abortFlag = abortFlag;
  return ctx;
}

std::vector<uint32_t> pattern(size_t n, uint64_t seed) {
  std::vector<uint32_t> v(n);
  bt::fillPayload(4, seed, 0, 0, n, v.data());
  return v;
}

// Sizes of the calls both sides make, in elements (the same on both sides).
const std::vector<size_t> kCalls = {1, 63, 64, 65, 1000, 0, 4096, 777, 64 * 8 * 40 + 5};

class ProtocolSimple : public ::testing::TestWithParam<int> {};  // FIFO depth
TEST_P(ProtocolSimple, SendRecvWrapsTheFifo) {
  Fifo f(256, GetParam());  // 64 uint32 per step: the last call alone wraps the FIFO 40 times
  size_t total = 0;
  for (size_t n : kCalls) total += n;
  const std::vector<uint32_t> src = pattern(total, 1);
  std::vector<uint32_t> dst(total, 0xdeadbeef);
  const OpSum<uint32_t> op{};
  std::thread producer([&] {
    ExecCtx ctx = ctxFor(0);
    PrimitivesSimple<uint32_t, OpSum<uint32_t>> p(ctx, nullptr, &f.send, op);
    size_t off = 0;
    for (size_t n : kCalls) p.send(src.data() + off, n), off += n;
    EXPECT_FALSE(ctx.failed);
  });
  ExecCtx ctx = ctxFor(1);
  PrimitivesSimple<uint32_t, OpSum<uint32_t>> p(ctx, &f.recv, nullptr, op);
  size_t off = 0;
  for (size_t n : kCalls) p.recv(dst.data() + off, n), off += n;
  producer.join();
  EXPECT_FALSE(ctx.failed);
  EXPECT_EQ(dst, src);
  EXPECT_EQ(f.send.step, f.recv.step);
  EXPECT_EQ(loadAcquire(&f.mem->tail), f.send.step);
  EXPECT_EQ(loadAcquire(&f.mem->head), f.recv.step);
}

// rank 0 sends, rank 1 adds its input and forwards, rank 2 adds its own and applies the post-op
// (avg: divide by 3); rank 1 also copies what passes through in a second, pure copy chain.
TEST_P(ProtocolSimple, ReduceAndCopyChains) {
  const size_t n = 64 * 8 * 25 + 3;
  Fifo a(512, GetParam()), b(512, GetParam());
  std::vector<std::vector<float>> in(3, std::vector<float>(n));
  for (int r = 0; r < 3; ++r) bt::fillInput(ncclFloat32, bt::Op::Avg, 3, 9, r, 0, n, in[r].data());
  std::vector<float> want(n), out(n, -1), mid(n, -1), last(n, -1);
  bt::fillExpected(ncclFloat32, bt::Op::Avg, 3, 9, 0, n, want.data());
  const OpSumPostDiv<float> avg{3.0f};
  std::thread r0([&] {
    ExecCtx ctx = ctxFor(0);
    PrimitivesSimple<float, OpSumPostDiv<float>> p(ctx, nullptr, &a.send, avg);
    p.send(in[0].data(), n);
    p.send(in[0].data(), n);  // the copy chain's source
  });
  std::thread r1([&] {
    ExecCtx ctx = ctxFor(1);
    PrimitivesSimple<float, OpSumPostDiv<float>> p(ctx, &a.recv, &b.send, avg);
    p.recvReduceSend(in[1].data(), n);
    p.recvCopySend(mid.data(), n);
  });
  ExecCtx ctx = ctxFor(2);
  PrimitivesSimple<float, OpSumPostDiv<float>> p(ctx, &b.recv, nullptr, avg);
  p.recvReduceCopy(in[2].data(), out.data(), n, /*postOp=*/true);
  p.recv(last.data(), n);
  r0.join();
  r1.join();
  EXPECT_FALSE(ctx.failed);
  EXPECT_EQ(bt::compareBits(out.data(), want.data(), n, 4, "reduced"), "");
  EXPECT_EQ(mid, in[0]);
  EXPECT_EQ(last, in[0]);
}
INSTANTIATE_TEST_SUITE_P(, ProtocolSimple, ::testing::Values(8, 1),
                         [](const ::testing::TestParamInfo<int>& i) { return "Depth" + std::to_string(i.param); });

// Transfers as non-blocking steps: both sides poll, backing off when they cannot progress.
TEST(Protocol, SendRecvTrySendTryRecvLoops) {
  for (int depth : {8, 1}) {
    Fifo f(256, depth);
    const std::vector<size_t> sizes = {100003, 0, 1, 256, 257, 4096};
    std::vector<std::vector<uint32_t>> src, dst;
    for (size_t s : sizes) src.push_back(pattern((s + 3) / 4, s)), dst.emplace_back((s + 3) / 4, 0);
    std::thread producer([&] {
      ExecCtx ctx = ctxFor(0);
      for (size_t i = 0; i < sizes.size(); ++i) {
        SendRecvTransfer t{reinterpret_cast<char*>(src[i].data()), sizes[i], 0, &f.send, 1};
        for (uint32_t it = 0; !t.complete() && !ctx.failed;)
          if (!sendRecvTrySend(ctx, t)) waitBackoff(it);
      }
      EXPECT_FALSE(ctx.failed);
    });
    ExecCtx ctx = ctxFor(1);
    for (size_t i = 0; i < sizes.size(); ++i) {
      SendRecvTransfer t{reinterpret_cast<char*>(dst[i].data()), sizes[i], 0, &f.recv, 0};
      for (uint32_t it = 0; !t.complete() && !ctx.failed;)
        if (!sendRecvTryRecv(ctx, t)) waitBackoff(it);
    }
    producer.join();
    EXPECT_FALSE(ctx.failed);
    for (size_t i = 0; i < sizes.size(); ++i)
      EXPECT_TRUE(sizes[i] == 0 || memcmp(dst[i].data(), src[i].data(), sizes[i]) == 0)  // empty: data() may be null
          << "transfer " << i << " depth " << depth;
  }
}

// With the abort flag already set, a receive with nothing to receive and a send with no credit
// both return, failed, naming the counter they waited for.
TEST(Protocol, AbortFlagEndsWaits) {
  Fifo f(256, 1);
  const int abortFlag = 1;
  std::vector<uint32_t> buf(200, 7);
  const OpSum<uint32_t> op{};
  ExecCtx rctx = ctxFor(1, &abortFlag);
  PrimitivesSimple<uint32_t, OpSum<uint32_t>>(rctx, &f.recv, nullptr, op).recv(buf.data(), 10);
  EXPECT_TRUE(rctx.failed);
  EXPECT_EQ(rctx.failure.result, kWaitAborted);
  EXPECT_STREQ(rctx.failure.what, "recv tail");
  EXPECT_EQ(rctx.failure.expected, 1u);
  EXPECT_EQ(rctx.failure.observed, 0u);
  ExecCtx sctx = ctxFor(0, &abortFlag);
  PrimitivesSimple<uint32_t, OpSum<uint32_t>>(sctx, nullptr, &f.send, op).send(buf.data(), 200);  // > depth 1 step
  EXPECT_TRUE(sctx.failed);
  EXPECT_EQ(sctx.failure.result, kWaitAborted);
  EXPECT_STREQ(sctx.failure.what, "send head (credit)");
  // Once failed, the rest drains as no-ops.
  sctx.failure = {};
  PrimitivesSimple<uint32_t, OpSum<uint32_t>>(sctx, nullptr, &f.send, op).send(buf.data(), 200);
  EXPECT_EQ(sctx.failure.result, kWaitOk);
}

// The abort flag raised by another thread while a receive is blocked ends the wait.
TEST(Protocol, AbortFlagRaisedDuringWait) {
  Fifo f(256, 8);
  int abortFlag = 0;
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    __atomic_store_n(&abortFlag, 1, __ATOMIC_RELEASE);
  });
  uint32_t x = 0;
  ExecCtx ctx = ctxFor(1, &abortFlag);
  PrimitivesSimple<uint32_t, OpSum<uint32_t>>(ctx, &f.recv, nullptr, OpSum<uint32_t>{}).recv(&x, 1);
  aborter.join();
  EXPECT_TRUE(ctx.failed);
  EXPECT_EQ(ctx.failure.result, kWaitAborted);
}

TEST(Protocol, TimeoutEndsWait) {
  Fifo f(256, 8);
  uint32_t x = 0;
  ExecCtx ctx = ctxFor(1);
  ctx.timeoutNs = 20'000'000;
  const uint64_t t0 = nowNs();
  PrimitivesSimple<uint32_t, OpSum<uint32_t>>(ctx, &f.recv, nullptr, OpSum<uint32_t>{}).recv(&x, 1);
  EXPECT_TRUE(ctx.failed);
  EXPECT_EQ(ctx.failure.result, kWaitTimeout);
  EXPECT_GE(nowNs() - t0, 20'000'000u);
}

// The producer posts 100 elements where the consumer expects 50: reported, naming the size.
TEST(Protocol, MismatchedSizeIsReported) {
  Fifo f(1024, 8);
  std::vector<uint32_t> src = pattern(100, 3), dst(100, 0);
  ExecCtx pctx = ctxFor(0);
  PrimitivesSimple<uint32_t, OpSum<uint32_t>>(pctx, nullptr, &f.send, OpSum<uint32_t>{}).send(src.data(), 100);
  ExecCtx ctx = ctxFor(1);
  PrimitivesSimple<uint32_t, OpSum<uint32_t>>(ctx, &f.recv, nullptr, OpSum<uint32_t>{}).recv(dst.data(), 50);
  EXPECT_FALSE(pctx.failed);
  ASSERT_TRUE(ctx.failed);
  ASSERT_NE(ctx.failure.what, nullptr);
  EXPECT_NE(std::string(ctx.failure.what).find("size"), std::string::npos) << ctx.failure.what;
  EXPECT_EQ(ctx.failure.expected, 200u);
  EXPECT_EQ(ctx.failure.observed, 400u);
  EXPECT_EQ(ctx.failure.peer, 0);

  // The same through sendRecvTryRecv: 300 bytes sent, 200 expected (both within one 1024-byte step).
  Fifo g(1024, 8);
  SendRecvTransfer s{reinterpret_cast<char*>(src.data()), 300, 0, &g.send, 1};
  ExecCtx sctx = ctxFor(0);
  ASSERT_TRUE(sendRecvTrySend(sctx, s));
  SendRecvTransfer r{reinterpret_cast<char*>(dst.data()), 200, 0, &g.recv, 0};
  ExecCtx rctx = ctxFor(1);
  EXPECT_FALSE(sendRecvTryRecv(rctx, r));
  ASSERT_TRUE(rctx.failed);
  EXPECT_NE(std::string(rctx.failure.what).find("size"), std::string::npos) << rctx.failure.what;
  EXPECT_EQ(rctx.failure.expected, 200u);
  EXPECT_EQ(rctx.failure.observed, 300u);
}

}  // namespace
}  // namespace baton

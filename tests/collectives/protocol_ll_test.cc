// Protocol LL / LL128: the line protocols' FIFO primitives (Primitives<T, Op, ProtoLL> and
// Primitives<T, Op, ProtoLL128>) driven directly on a ConnFifo laid out with FifoLayout, by a producer
// and a consumer (no communicator): 1-, 2-, 4- and 8-byte elements through many wrap-arounds of small
// steps at depth 8 and 1; a three-rank reduce chain; Simple, LL and LL128 calls alternating on one
// connector; producer and consumer in two processes over a MAP_SHARED mapping; flags across step 2^32
// (LL's 32-bit flags and its slot cleaning, LL128's 64-bit flags); mismatched sizes reported as
// "slot size" failures, and the abort flag ending a wait on a line, instead of hanging.
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <thread>

#include "collectives/data.h"
#include "gtest/gtest.h"
#include "primitives.h"

namespace baton {
namespace {

// Small steps, so a few KiB wrap the 8-slot FIFO many times: LL 256 bytes = 16 lines (128 payload
// bytes), LL128 1024 bytes = 8 lines (960 payload bytes), Simple 512 bytes.
constexpr uint64_t kStepBytes[kNumProtos] = {256, 1024, 512};
constexpr uint64_t kTimeoutNs = 10'000'000'000ull;  // a bug fails a wait instead of hanging the suite

// One connector in a MAP_SHARED | MAP_ANONYMOUS mapping (zero-filled, and still shared after fork()),
// with slot buffers for `protos` only, and both sides' handles. `step`: as if that many steps had
// already gone through (both sides' step, head and tail start there).
struct Fifo {
  Fifo(std::initializer_list<int> protos, int depth, uint64_t step = 0) {
    for (int p : protos) layout.stepBytes[p] = kStepBytes[p];
    bytes = sizeof(ConnFifo) + layout.totalSlotBytes();
    void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) perror("mmap"), abort();
    mem = static_cast<ConnFifo*>(m);
    mem->head = mem->tail = step;
    send = makeConnDev(mem, layout, /*peer=*/1, depth);
    recv = makeConnDev(mem, layout, /*peer=*/0, depth);
    send.step = recv.step = step;
  }
  ~Fifo() { munmap(mem, bytes); }
  FifoLayout layout;
  size_t bytes;
  ConnFifo* mem;
  ConnDev send, recv;
};

ExecCtx ctxFor(int rank, const volatile int* abortFlag = nullptr) {
  ExecCtx ctx;
  ctx.rank = rank;
  ctx.abortFlag = abortFlag;
  ctx.timeoutNs = kTimeoutNs;
  return ctx;
}

std::string describe(const ExecCtx& c) {
  if (!c.failed) return "ok";
  return std::string(c.failure.what ? c.failure.what : "?") + " result " + std::to_string(c.failure.result) +
         " expected " + std::to_string(c.failure.expected) + " observed " + std::to_string(c.failure.observed);
}

// Arbitrary bits, signaling NaNs included: a send or receive is a copy and must keep every bit
// (reduceElem passes copies through without the float conversion that would quiet a NaN).
template <typename T>
std::vector<T> payload(size_t n, uint64_t seed) {
  std::vector<T> v(n);
  bt::fillPayload(sizeof(T), seed, 0, 0, n, v.data());
  return v;
}

// One primitive call: its protocol and its element count. A side makes a list of them back to back,
// each continuing in the buffer where the previous one ended (and on the step where it ended).
struct Call {
  int proto;
  size_t n;
};
template <typename P>
std::vector<Call> callsOf(const std::vector<size_t>& ns) {
  std::vector<Call> v;
  for (size_t n : ns) v.push_back({P::id, n});
  return v;
}

// One side: sends (or receives) `calls` through c; sleepMs before each call (a late producer).
template <typename T>
ExecCtx runSide(bool sender, ConnDev& c, T* buf, const std::vector<Call>& calls, int sleepMs = 0) {
  ExecCtx ctx = ctxFor(sender ? 0 : 1);
  ConnDev *r = sender ? nullptr : &c, *s = sender ? &c : nullptr;
  Primitives<T, OpSum<T>, ProtoSimple> simple(ctx, r, s, {});
  Primitives<T, OpSum<T>, ProtoLL> ll(ctx, r, s, {});
  Primitives<T, OpSum<T>, ProtoLL128> ll128(ctx, r, s, {});
  auto go = [&](auto& p, size_t n) { sender ? p.send(buf, n) : p.recv(buf, n); };
  for (Call k : calls) {
    if (sleepMs) std::this_thread::sleep_for(std::chrono::milliseconds(sleepMs));
    if (k.proto == kProtoSimple) go(simple, k.n);
    else if (k.proto == kProtoLL) go(ll, k.n);
    else go(ll128, k.n);
    buf += k.n;
  }
  return ctx;
}

// A producer thread sends `calls`, this thread receives them: every element must arrive bit-exact,
// and both sides must end on the same step, the consumer's head included.
template <typename T>
void transfer(Fifo& f, const std::vector<Call>& calls, int producerSleepMs, const std::string& what) {
  size_t total = 0;
  for (Call k : calls) total += k.n;
  std::vector<T> src = payload<T>(total, total), dst(total);
  memset(static_cast<void*>(dst.data()), 0xcd, total * sizeof(T));
  ExecCtx pctx;
  std::thread producer([&] { pctx = runSide(true, f.send, src.data(), calls, producerSleepMs); });
  const ExecCtx ctx = runSide(false, f.recv, dst.data(), calls);
  producer.join();
  EXPECT_FALSE(pctx.failed) << what << ": " << describe(pctx);
  EXPECT_FALSE(ctx.failed) << what << ": " << describe(ctx);
  EXPECT_EQ(bt::compareBits(dst.data(), src.data(), total, sizeof(T), "received"), "") << what;
  EXPECT_EQ(f.send.step, f.recv.step) << what;
  EXPECT_EQ(loadAcquire(&f.mem->head), f.recv.step) << what;
}

// ---- 1. one producer, one consumer, every element size, depth 8 and 1 ----------------------------
template <typename P, typename T>
struct Case {
  using Proto = P;
  using Type = T;
};
struct CaseNames {  // LL_1B ... LL128_8B
  template <typename C>
  static std::string GetName(int) {
    return std::string(C::Proto::name) + "_" + std::to_string(sizeof(typename C::Type)) + "B";
  }
};
template <typename C>
class ProtocolLineTypes : public ::testing::Test {};
using Cases = ::testing::Types<Case<ProtoLL, uint8_t>, Case<ProtoLL, half_t>, Case<ProtoLL, uint32_t>,
                               Case<ProtoLL, double>, Case<ProtoLL128, uint8_t>, Case<ProtoLL128, half_t>,
                               Case<ProtoLL128, uint32_t>, Case<ProtoLL128, double>>;
TYPED_TEST_SUITE(ProtocolLineTypes, Cases, CaseNames);

// Partial lines (1, 7, 63 elements), many whole steps (4096), whole steps plus a remainder, and an
// empty call (no step at all); 4096 one-byte elements alone go 32 times through LL's 16-line slot.
TYPED_TEST(ProtocolLineTypes, SendRecvWrapsTheFifo) {
  using P = typename TypeParam::Proto;
  using T = typename TypeParam::Type;
  for (int depth : {8, 1}) {
    Fifo f({P::id}, depth);
    const size_t step = stepElems<P, T>(f.send);
    const std::vector<Call> calls = callsOf<P>({1, 7, 63, 4096, 5 * step + step / 3 + 1, 0, step, 1});
    transfer<T>(f, calls, 0, "depth " + std::to_string(depth));
    size_t steps = 0;
    for (Call k : calls) steps += divUp(k.n, step);  // the empty call takes no step
    EXPECT_EQ(f.recv.step, steps);
  }
}

// ---- 2, 3, 4, 5: per protocol --------------------------------------------------------------------
struct ProtoNames {
  template <typename P>
  static std::string GetName(int) {
    return P::name;
  }
};
template <typename P>
class ProtocolLine : public ::testing::Test {};
using LineProtos = ::testing::Types<ProtoLL, ProtoLL128>;
TYPED_TEST_SUITE(ProtocolLine, LineProtos, ProtoNames);

// rank 0 sends, rank 1 adds its input and forwards, rank 2 adds its own into the output: integer-
// valued floats whose every partial sum is exact, so the result is compared bit for bit.
TYPED_TEST(ProtocolLine, ReduceChainOfThreeRanks) {
  using P = TypeParam;
  using Prims = Primitives<float, OpSum<float>, P>;
  const size_t n = 5000;  // LL: 157 steps of 32 floats; LL128: 21 steps of 240
  std::vector<std::vector<float>> in(3, std::vector<float>(n));
  for (int r = 0; r < 3; ++r) bt::fillInput(ncclFloat32, bt::Op::Sum, 3, 11, r, 0, n, in[r].data());
  std::vector<float> want(n);
  bt::fillExpected(ncclFloat32, bt::Op::Sum, 3, 11, 0, n, want.data());
  for (int depth : {8, 1}) {
    Fifo a({P::id}, depth), b({P::id}, depth);
    std::vector<float> out(n, -1);
    ExecCtx c0 = ctxFor(0), c1 = ctxFor(1), c2 = ctxFor(2);
    std::thread r0([&] { Prims(c0, nullptr, &a.send, {}).send(in[0].data(), n); });
    std::thread r1([&] { Prims(c1, &a.recv, &b.send, {}).recvReduceSend(in[1].data(), n); });
    Prims(c2, &b.recv, nullptr, {}).recvReduceCopy(in[2].data(), out.data(), n, /*postOp=*/false);
    r0.join();
    r1.join();
    EXPECT_FALSE(c0.failed || c1.failed || c2.failed) << describe(c0) << "; " << describe(c1) << "; " << describe(c2);
    EXPECT_EQ(bt::compareBits(out.data(), want.data(), n, 4, "reduced"), "") << "depth " << depth;
  }
}

// The child process is one side and the parent the other, through a FIFO mapped before fork(). The
// child's exit status is its verdict (0: its side succeeded and, as consumer, got exact data).
TYPED_TEST(ProtocolLine, ProducerAndConsumerInTwoProcesses) {
  using P = TypeParam;
  const std::vector<Call> calls = callsOf<P>({1, 63, 4096, 0, 7, 20000});
  size_t total = 0;
  for (Call k : calls) total += k.n;
  std::vector<uint32_t> src = payload<uint32_t>(total, 5);
  for (bool childSends : {true, false}) {
    Fifo f({P::id}, kSteps);
    std::vector<uint32_t> dst(total, 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {  // no gtest in the child: _exit, so nothing of the parent's runs twice
      if (childSends) _exit(runSide(true, f.send, src.data(), calls).failed ? 2 : 0);
      const bool failed = runSide(false, f.recv, dst.data(), calls).failed;
      _exit(failed ? 2 : dst != src ? 1 : 0);
    }
    const ExecCtx ctx =
        childSends ? runSide(false, f.recv, dst.data(), calls) : runSide(true, f.send, src.data(), calls);
    int status = -1;
    EXPECT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << (childSends ? "child producer" : "child consumer") << ": status " << status;
    EXPECT_FALSE(ctx.failed) << describe(ctx);
    if (childSends) {
      EXPECT_EQ(dst, src);
    }
  }
}

// A deliberately slow producer of protocol P: each step's lines written one at a time, lineUs apart,
// as the real sender writes them (LL: both halves carry the flag; LL128: payload, then the flag with
// a release store), the slot size before line 0, credit as the real sender waits for it.
template <typename P>
void slowSend(ExecCtx& ctx, ConnDev& c, const uint32_t* src, size_t n, int lineUs) {
  const size_t step = stepElems<P, uint32_t>(c), perLine = (P::id == kProtoLL ? 8 : kLL128DataBytes) / 4;
  for (size_t off = 0; off < n; off += step, ++c.step) {
    const size_t cnt = std::min(step, n - off);
    waitSendCredit(ctx, c);
    if (ctx.failed) return;
    c.fifo->sizes[c.step % kSteps] = cnt * 4;
    for (size_t l = 0; l * perLine < cnt; ++l) {
      std::this_thread::sleep_for(std::chrono::microseconds(lineUs));
      uint64_t w[15] = {};
      memcpy(w, src + off + l * perLine, std::min(perLine, cnt - l * perLine) * 4);
      if constexpr (P::id == kProtoLL) {
        storeLL(reinterpret_cast<LLLine*>(slotPtr(c, P::id, c.step)) + l, w[0], uint32_t(c.step + 1));
      } else {
        LL128Line* line = reinterpret_cast<LL128Line*>(slotPtr(c, P::id, c.step)) + l;
        memcpy(line->data, w, sizeof w);
        storeRelease(&line->flag, c.step + 1);
      }
    }
  }
}

// Flags across step 2^32, on the connector from rank 1 to rank 2 of a chain 0 -> 1 -> 2 (rank 1
// forwards with recvCopySend; that connector's steps start at 2^32 - 32 for LL, 2^32 - 16 for LL128,
// over zero-filled slots). Rank 0 writes its lines slowly, so rank 1 writes each step's lines as they
// arrive, as a forwarding rank of a ring does: rank 2, already waiting (rank 0 also sleeps before each
// call), sees line 0 of a step while the rest of the slot still holds older lines. The early calls are
// one line, so those older lines are the zero fill; then whole steps, twice around the FIFO past 2^32.
// LL's flag is the low 32 bits of step + 1: step 0xFFFFFFFF (slot 7) carries flag 0, the flag of the
// zero fill, so rank 2 would take lines 1..15 of slot 7 before rank 1 wrote them. Only the clean stops
// that: on steps where (step & kLLCleanMask) == kLLCleanMask (0xFFFFFFF8..0xFFFFFFFF here) the sender
// first rewrites the whole slot with the slot's previous flag. (Checked with the clean removed from a
// copy of primitives_ll.h: this test then fails for LL with zeros at step 0xFFFFFFFF's lines.) The
// early calls keep line 0 of every slot fresh, and every step waits on line 0 first: a clean on the
// step itself cannot save a slot whose line 0 is stale too. LL128's flag is the 64-bit step + 1
// (0x100000000 at step 0xFFFFFFFF): nothing to clean, and it passes.
TYPED_TEST(ProtocolLine, FlagsCrossStep2To32) {
  using P = TypeParam;
  const uint64_t start = (1ull << 32) - (P::id == kProtoLL ? 32 : 16);
  Fifo ab({P::id}, kSteps), bc({P::id}, kSteps, start);
  const size_t step = stepElems<P, uint32_t>(bc.send), line = P::id == kProtoLL ? 2 : kLL128DataBytes / 4;
  std::vector<size_t> calls(0xFFFFFFFF - start, line);  // one line each, up to step 0xFFFFFFFE
  calls.insert(calls.end(), 18, step);                  // steps 0xFFFFFFFF .. 2^32 + 16: whole slots
  calls.push_back(3 * step + 5);
  size_t total = 0;
  for (size_t n : calls) total += n;
  std::vector<uint32_t> src = payload<uint32_t>(total, 9), mid(total, 0), dst(total, 0);
  ExecCtx c0 = ctxFor(0), c1 = ctxFor(1);
  std::thread r0([&] {
    for (size_t off = 0; size_t n : calls) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      slowSend<P>(c0, ab.send, src.data() + off, n, /*lineUs=*/500);
      off += n;
    }
  });
  std::thread r1([&] {
    Primitives<uint32_t, OpSum<uint32_t>, P> p(c1, &ab.recv, &bc.send, {});
    for (size_t off = 0; size_t n : calls) p.recvCopySend(mid.data() + off, n), off += n;
  });
  const ExecCtx c2 = runSide(false, bc.recv, dst.data(), callsOf<P>(calls));
  r0.join();
  r1.join();
  EXPECT_FALSE(c0.failed || c1.failed || c2.failed) << describe(c0) << "; " << describe(c1) << "; " << describe(c2);
  EXPECT_EQ(mid, src);
  EXPECT_EQ(bt::compareBits(dst.data(), src.data(), total, 4, "rank 2"), "");
  EXPECT_EQ(bc.recv.step, start + calls.size() + 3);
  EXPECT_EQ(loadAcquire(&bc.mem->head), bc.recv.step);
}

// What the clean leaves behind, read directly: a one-line send on a clean step rewrites the slot's
// other 15 lines with the slot's previous flag (step + 1 - kSteps); on other steps they are untouched.
TEST(ProtocolLines, LLCleanStepRewritesTheSlot) {
  for (uint64_t s : {0xFFFFFFF0ull, 0xFFFFFFF8ull, 0x17FFFFFF8ull, 0x100000000ull}) {  // all slot 0
    Fifo f({kProtoLL}, kSteps, s);
    uint32_t x = 42;
    ASSERT_FALSE(runSide(true, f.send, &x, {{kProtoLL, 1}}).failed);
    const bool clean = ((uint32_t)s & kLLCleanMask) == kLLCleanMask;
    const LLLine* lines = reinterpret_cast<const LLLine*>(slotPtr(f.send, kProtoLL, s));
    EXPECT_EQ(lines[0].half[0], 42 | uint64_t(uint32_t(s + 1)) << 32);
    for (int l = 1; l < 16; ++l)
      EXPECT_EQ(lines[l].half[1] >> 32, clean ? uint32_t(s + 1 - kSteps) : 0u) << std::hex << s << " line " << l;
  }
}

// The consumer expects 100 elements where the producer sends 50, and the reverse: the step where
// the sizes first differ is reported, naming the slot size, not waited on until the timeout.
TYPED_TEST(ProtocolLine, MismatchedSizesAreReported) {
  using P = TypeParam;
  for (auto [want, sent] : {std::pair<size_t, size_t>{100, 50}, {50, 100}}) {
    Fifo f({P::id}, kSteps);
    std::vector<uint32_t> src = payload<uint32_t>(sent, 3), dst(want);
    const uint64_t t0 = nowNs();
    ExecCtx pctx;
    std::thread producer([&] { pctx = runSide(true, f.send, src.data(), {{P::id, sent}}); });
    const ExecCtx ctx = runSide(false, f.recv, dst.data(), {{P::id, want}});
    producer.join();
    EXPECT_LT(nowNs() - t0, kTimeoutNs / 2);
    EXPECT_FALSE(pctx.failed) << describe(pctx);
    ASSERT_TRUE(ctx.failed) << want << " vs " << sent;
    ASSERT_NE(ctx.failure.what, nullptr);
    EXPECT_NE(std::string(ctx.failure.what).find("slot size"), std::string::npos) << ctx.failure.what;
    EXPECT_NE(ctx.failure.result, kWaitTimeout);
    EXPECT_EQ(ctx.failure.peer, 0);
    const size_t step = stepElems<P, uint32_t>(f.recv);
    auto bytesOf = [&](size_t n, size_t i) { return std::min(step, n - i * step) * sizeof(uint32_t); };
    size_t i = 0;
    while (bytesOf(want, i) == bytesOf(sent, i)) ++i;
    EXPECT_EQ(ctx.failure.expected, bytesOf(want, i));
    EXPECT_EQ(ctx.failure.observed, bytesOf(sent, i));
  }
}

// A consumer waiting on a line nobody writes returns soon after another thread raises the abort
// flag (well before its 10 s timeout), failed with kWaitAborted on the first line's flag (1).
TYPED_TEST(ProtocolLine, AbortFlagEndsAWaitOnALine) {
  using P = TypeParam;
  Fifo f({P::id}, kSteps);
  int abortFlag = 0;
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    __atomic_store_n(&abortFlag, 1, __ATOMIC_RELEASE);
  });
  std::vector<uint32_t> dst(1000);
  const uint64_t t0 = nowNs();
  ExecCtx ctx = ctxFor(1, &abortFlag);
  Primitives<uint32_t, OpSum<uint32_t>, P>(ctx, &f.recv, nullptr, {}).recv(dst.data(), dst.size());
  aborter.join();
  EXPECT_LT(nowNs() - t0, 2'000'000'000ull);
  ASSERT_TRUE(ctx.failed);
  EXPECT_EQ(ctx.failure.result, kWaitAborted);
  EXPECT_NE(std::string(ctx.failure.what).find("line flag"), std::string::npos) << ctx.failure.what;
  EXPECT_EQ(ctx.failure.expected, 1u);
  EXPECT_EQ(f.recv.step, 0u);  // nothing consumed
}

// ---- Simple, LL and LL128 alternating on one connector ------------------------------------------
// The three protocols share the step counter, head and tail: each call continues the step sequence
// where the previous one (of any protocol) ended; LL and LL128 do not move the tail, so Simple's
// next tail store must still cover its own step. Both sides make the same sequence of calls.
TEST(ProtocolLines, ProtocolsInterleaveOnOneConnector) {
  std::vector<Call> seq;
  for (int round = 0; round < 3; ++round)
    for (Call c : {Call{kProtoSimple, 300},
                   {kProtoLL, 100},
                   {kProtoLL128, 1000},
                   {kProtoSimple, 1},
                   {kProtoLL, 33},
                   {kProtoLL128, 241},
                   {kProtoLL, 1},
                   {kProtoSimple, 128 * 3 + 5},
                   {kProtoLL128, 7},
                   {kProtoLL, 4096}})
      seq.push_back(c);
  for (int depth : {8, 1}) {
    Fifo f({kProtoLL, kProtoLL128, kProtoSimple}, depth);
    transfer<uint32_t>(f, seq, 0, "depth " + std::to_string(depth));
    EXPECT_EQ(f.recv.step, 3 * (3 + 4 + 5 + 1 + 2 + 2 + 1 + 4 + 1 + 128u));  // steps of 128, 32, 240 elements
  }
}

}  // namespace
}  // namespace baton

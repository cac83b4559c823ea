// A connector whose step holds no element (its step sizes zeroed or never filled) must fail the
// body that would use it, on every path the CPU backend and the CUDA kernels share: the ring and
// tree bodies (coll_dispatch.h) and the send/recv steps (sendrecv_progress.h). Without the check
// each of them cuts its work into pieces of 0 elements and loops forever without entering a wait,
// so no timeout or abort ends it; each case here runs on a thread with a deadline, so a missing
// check fails the test (and ends the process) instead of hanging it. The CUDA kernels ask the same
// questions (step_check.h) from thread 0 (src/cuda/coll_kernels.cuh): compiled, not run here.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <thread>
#include <vector>

#include "coll_dispatch.h"
#include "reduce_ops.h"
#include "sendrecv_progress.h"

namespace {

using namespace baton;

// Runs fn on a thread; returns once it has, or ends the process if it is still running after 10 s
// (a thread spinning forever cannot be stopped, and the rest of the suite must not hang behind it).
void runWithDeadline(const char* what, const std::function<void()>& fn) {
  auto done = std::async(std::launch::async, fn);
  if (done.wait_for(std::chrono::seconds(10)) == std::future_status::ready) return done.get();
  fprintf(stderr, "%s: still running after 10 s: the body loops on a step of 0 elements\n", what);
  std::fflush(stderr);
  std::_Exit(1);
}

ExecCtx makeCtx() {
  ExecCtx ctx;
  ctx.rank = 1;
  ctx.channel = 2;
  return ctx;
}

// Connectors with the given step size for every protocol; no FIFO behind them, since a body that
// checks never reaches one.
struct TwoRanks {
  ConnDev send, recv;
  int userRanks[2] = {0, 1};
  std::vector<float> in = std::vector<float>(4096, 1.0f), out = std::vector<float>(4096, 0.0f);
  CollArgs args(CollFunc func, CollAlgo algo, uint64_t stepBytes) {
    for (ConnDev* c : {&send, &recv})
      for (int p = 0; p < kNumProtos; ++p) c->stepBytes[p] = stepBytes;
    send.peer = 0, recv.peer = 0;
    CollArgs a;
    a.func = func;
    a.algo = algo;
    a.sendbuff = in.data();
    a.recvbuff = out.data();
    a.count = func == kFuncAllGather ? in.size() / 2 : in.size();
    a.rank = 1;
    a.nRanks = 2;
    a.ring.nRanks = 2;
    a.ring.index = 1;
    a.ring.userRanks = userRanks;
    a.ring.send = &send;
    a.ring.recv = &recv;
    a.tree.up = 0;  // rank 1 is a leaf under rank 0
    a.tree.upSend = &send;
    a.tree.downRecv = &recv;
    return a;
  }
};

template <typename P>
void expectReducingFails(CollFunc func, CollAlgo algo, bool direct) {
  TwoRanks r;
  CollArgs a = r.args(func, algo, 0);
  a.direct = direct;
  ExecCtx ctx = makeCtx();
  runWithDeadline(P::name, [&] { runReducingColl<float, P>(ctx, a, OpSum<float>{}); });
  EXPECT_TRUE(ctx.failed) << P::name << " func " << func << " algo " << algo;
  EXPECT_EQ(ctx.failure.result, kWaitBadStep);
  EXPECT_EQ(ctx.failure.rank, 1);
  EXPECT_EQ(ctx.failure.peer, 0);
  EXPECT_EQ(ctx.failure.channel, 2);
  EXPECT_EQ(ctx.failure.expected, sizeof(float));  // one element
  EXPECT_EQ(ctx.failure.observed, 0u);
  for (float v : r.out) ASSERT_EQ(v, 0.0f) << "the output was written";
}

TEST(EmptyStep, RingAndTreeReductionsFailInsteadOfLooping) {
  for (CollFunc f : {kFuncAllReduce, kFuncReduce, kFuncReduceScatter}) {
    expectReducingFails<ProtoSimple>(f, kAlgoRing, false);
    expectReducingFails<ProtoSimple>(f, kAlgoRing, true);  // the direct bodies
    expectReducingFails<ProtoLL>(f, kAlgoRing, false);
    expectReducingFails<ProtoLL128>(f, kAlgoRing, false);
  }
  expectReducingFails<ProtoSimple>(kFuncAllReduce, kAlgoTree, false);
  expectReducingFails<ProtoLL>(kFuncAllReduce, kAlgoTree, false);
  expectReducingFails<ProtoLL128>(kFuncAllReduce, kAlgoTree, false);
}

TEST(EmptyStep, MovingCollectivesFailInsteadOfLooping) {
  for (CollFunc f : {kFuncAllGather, kFuncBroadcast})
    for (bool direct : {false, true}) {
      TwoRanks r;
      CollArgs a = r.args(f, kAlgoRing, 0);
      a.direct = direct;
      ExecCtx ctx = makeCtx();
      runWithDeadline("moving", [&] { runMovingColl<ProtoSimple>(ctx, a); });
      EXPECT_TRUE(ctx.failed) << "func " << f << " direct " << direct;
      EXPECT_EQ(ctx.failure.result, kWaitBadStep);
      EXPECT_EQ(ctx.failure.expected, 1u);  // moving collectives step in bytes
    }
}

// LL128 carries 120 payload bytes per 128-byte line: a step shorter than a line holds none, though
// its size is not 0. A float needs a step whose payload holds 4 bytes.
TEST(EmptyStep, AStepIsMeasuredInPayloadElements) {
  ConnDev c;
  c.peer = 5;
  c.stepBytes[kProtoLL128] = 64;
  ExecCtx ctx = makeCtx();
  EXPECT_FALSE((stepHoldsElement<ProtoLL128, float>(ctx, &c)));
  EXPECT_EQ(ctx.failure.peer, 5);
  EXPECT_STREQ(ctx.failure.what, "LL128");

  ExecCtx ok = makeCtx();
  c.stepBytes[kProtoLL128] = 128;
  EXPECT_TRUE((stepHoldsElement<ProtoLL128, double>(ok, &c)));
  c.stepBytes[kProtoSimple] = 4;
  EXPECT_TRUE((stepHoldsElement<ProtoSimple, float>(ok, &c)));
  EXPECT_FALSE((stepHoldsElement<ProtoSimple, double>(ok, &c)));
  ExecCtx unused = makeCtx();
  EXPECT_TRUE((stepHoldsElement<ProtoSimple, double>(unused, nullptr)));  // a connector the body does not use
  EXPECT_FALSE(unused.failed);
}

// A step of one element passes the ring's and the tree's checks, one of less fails them, and a
// ring of one rank exchanges nothing, so its connectors are not asked about.
TEST(EmptyStep, UsableConnectorsPass) {
  TwoRanks r;
  CollArgs a = r.args(kFuncAllReduce, kAlgoRing, 4);
  ExecCtx ctx = makeCtx();
  EXPECT_TRUE((ringStepsUsable<float, ProtoSimple>(ctx, a)));
  EXPECT_TRUE((treeStepsUsable<float, ProtoSimple>(ctx, a)));
  EXPECT_FALSE((ringStepsUsable<double, ProtoSimple>(ctx, a)));
  a.ring.nRanks = 1;
  ExecCtx one = makeCtx();
  EXPECT_TRUE((ringStepsUsable<double, ProtoSimple>(one, a)));  // one rank exchanges nothing
  EXPECT_FALSE(one.failed);
}

TEST(EmptyStep, SendAndRecvFailInsteadOfLooping) {
  for (bool isSend : {true, false}) {
    ConnFifo fifo{};
    ConnDev c;
    c.fifo = &fifo;
    c.peer = 3;
    std::vector<char> buf(1000, 7);
    SendRecvTransfer t;
    t.buf = buf.data();
    t.bytes = buf.size();
    t.conn = &c;
    t.peer = 3;
    t.isSend = isSend;
    ExecCtx ctx = makeCtx();
    const int after = -1;
    runWithDeadline(isSend ? "send" : "recv", [&] { sendRecvRunAll(ctx, &t, &after, 1); });
    EXPECT_TRUE(ctx.failed) << (isSend ? "send" : "recv");
    EXPECT_EQ(ctx.failure.result, kWaitBadStep);
    EXPECT_EQ(ctx.failure.peer, 3);
    EXPECT_EQ(t.done, 0u);
  }
}

}  // namespace

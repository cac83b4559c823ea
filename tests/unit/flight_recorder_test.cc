// The flight recorder's ring (src/misc/flight_recorder.h) and the waits' notes (WaitNote in
// algorithms/exec_model.h), lesson 14: the ring keeps the last N entries oldest first, an entry's
// end is stamped by its last part only, a handle the ring lapped writes nothing, and a stalled
// wait shows its peer and step while it waits, clears them when it ends well, and keeps them when
// it gives up.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "exec_model.h"
#include "misc/flight_recorder.h"

namespace {

using baton::FlightChannelView;
using baton::FlightOp;
using baton::FlightRecord;
using baton::FlightRecorder;

FlightOp opWithSeq(uint64_t seq) {
  FlightOp op;
  op.seq = seq;
  op.count = 100 + seq;
  op.func = 1, op.type = 7, op.redop = 0, op.algo = 1, op.proto = 2, op.channels = 2, op.root = 3;
  return op;
}

TEST(FlightRecorder, KeepsTheLastEntriesOldestFirst) {
  FlightRecorder rec(4, 1);
  for (uint64_t s = 0; s < 6; ++s) rec.record(opWithSeq(s), 1);
  std::vector<FlightRecord> r;
  std::vector<FlightChannelView> ch;
  rec.snapshot(&r, &ch);
  ASSERT_EQ(r.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(r[i].op.seq, i + 2);
    EXPECT_EQ(r[i].tag, i + 3);
    EXPECT_EQ(r[i].op.count, 102 + i);
    EXPECT_EQ(r[i].op.root, 3);
    EXPECT_EQ(r[i].op.channels, 2);
    EXPECT_GT(r[i].enqueueNs, 0u);
    EXPECT_EQ(r[i].startNs, 0u);  // nothing ran
    EXPECT_EQ(r[i].endNs, 0u);
  }
  EXPECT_EQ(rec.recorded(), 6u);
  ASSERT_EQ(ch.size(), 1u);
}

TEST(FlightRecorder, TheLastPartStampsTheEnd) {
  FlightRecorder rec(8, 2);
  const baton::FlightRef ref = rec.record(opWithSeq(7), 2);
  rec.partStart(ref, 0);
  rec.partStart(ref, 1);
  std::vector<FlightRecord> r;
  std::vector<FlightChannelView> ch;
  rec.snapshot(&r, &ch);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_GE(r[0].startNs, r[0].enqueueNs);
  EXPECT_EQ(ch[0].running, ref.tag);
  EXPECT_EQ(ch[1].running, ref.tag);
  rec.partEnd(ref, 0, 0);
  rec.snapshot(&r, &ch);
  EXPECT_EQ(r[0].endNs, 0u) << "one part of two is still running";
  EXPECT_FALSE(r[0].done);
  EXPECT_EQ(ch[0].running, 0u);
  EXPECT_EQ(ch[0].last, ref.tag);
  rec.partEnd(ref, 1, 5);  // the second fails
  rec.snapshot(&r, &ch);
  EXPECT_GE(r[0].endNs, r[0].startNs);
  EXPECT_TRUE(r[0].done);
  EXPECT_EQ(r[0].result, 5);
}

TEST(FlightRecorder, ALappedHandleWritesNothing) {
  FlightRecorder rec(2, 1);
  const baton::FlightRef old = rec.record(opWithSeq(0), 1);
  rec.record(opWithSeq(1), 1);
  rec.record(opWithSeq(2), 1);  // takes old's slot
  rec.partStart(old, 0);
  rec.partEnd(old, 0, 3);
  std::vector<FlightRecord> r;
  std::vector<FlightChannelView> ch;
  rec.snapshot(&r, &ch);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1].op.seq, 2u);
  EXPECT_EQ(r[1].startNs, 0u);
  EXPECT_EQ(r[1].result, 0);
}

TEST(FlightRecorder, OneShotStartsAtItsEnqueue) {
  FlightRecorder rec(4, 1);
  const baton::FlightRef ref = rec.record(opWithSeq(0), 1);
  rec.oneShotEnd(ref, 0);
  std::vector<FlightRecord> r;
  std::vector<FlightChannelView> ch;
  rec.snapshot(&r, &ch);
  EXPECT_EQ(r[0].startNs, r[0].enqueueNs);
  EXPECT_GE(r[0].endNs, r[0].startNs);
  EXPECT_EQ(ch[0].last, ref.tag);
}

// The 8-byte path: no time read at all, and still done.
TEST(FlightRecorder, AnUntimedEntryIsDoneWithoutTimes) {
  FlightRecorder rec(4, 1);
  const baton::FlightRef ref = rec.record(opWithSeq(0), 1, /*timed=*/false);
  std::vector<FlightRecord> r;
  std::vector<FlightChannelView> ch;
  rec.snapshot(&r, &ch);
  EXPECT_FALSE(r[0].done);
  rec.quickEnd(ref, 0);
  rec.snapshot(&r, &ch);
  EXPECT_TRUE(r[0].done);
  EXPECT_EQ(r[0].enqueueNs, 0u);
  EXPECT_EQ(r[0].startNs, 0u);
  EXPECT_EQ(r[0].endNs, 0u);
  EXPECT_EQ(r[0].result, 0);
}

TEST(FlightRecorder, TimesAreMonotonicNanoseconds) {
  FlightRecorder rec(4, 1);
  const uint64_t before = baton::nowNs();
  rec.record(opWithSeq(0), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const baton::FlightRef ref = rec.record(opWithSeq(1), 1);
  rec.oneShotEnd(ref, 0);
  const uint64_t after = baton::nowNs();
  std::vector<FlightRecord> r;
  std::vector<FlightChannelView> ch;
  rec.snapshot(&r, &ch);
  // The counter's conversion is measured over the run: allow 1 ms either side.
  EXPECT_GE(r[0].enqueueNs + 1000000, before);
  EXPECT_LE(r[1].endNs, after + 1000000);
  EXPECT_GE(r[1].enqueueNs - r[0].enqueueNs, 19000000u);
}

// A wait on a counter that another thread raises 100 ms later: the note shows it meanwhile.
TEST(WaitNote, ShowsAStalledWaitAndClearsItAfter) {
  FlightRecorder rec(4, 1);
  uint64_t word = 0;
  baton::ExecCtx ctx;
  ctx.note = rec.note(0);
  ctx.timeoutNs = 10ull * 1000000000;
  std::atomic<bool> done{false};
  std::thread waiter([&] {
    EXPECT_TRUE(baton::waitAtLeast(ctx, &word, 5, 3, "recv tail"));
    done = true;
  });
  std::vector<FlightRecord> r;
  std::vector<FlightChannelView> ch;
  bool seen = false;
  for (int i = 0; i < 200 && !seen; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    rec.snapshot(&r, &ch);
    seen = ch[0].note.state == 1;
  }
  ASSERT_TRUE(seen) << "the note never showed the stalled wait";
  EXPECT_EQ(ch[0].note.peer, 4u);  // peer + 1
  EXPECT_STREQ(reinterpret_cast<const char*>(ch[0].note.what), "recv tail");
  EXPECT_EQ(ch[0].note.expected, 5u);
  EXPECT_GT(ch[0].note.sinceNs, 0u);
  baton::storeRelease(&word, 5);
  waiter.join();
  EXPECT_TRUE(done);
  rec.snapshot(&r, &ch);
  EXPECT_EQ(ch[0].note.state, 0u) << "a wait that ended well leaves no note";
}

TEST(WaitNote, KeepsWhatATimedOutWaitWaitedFor) {
  FlightRecorder rec(4, 1);
  uint64_t word = 1;
  baton::ExecCtx ctx;
  ctx.note = rec.note(0);
  ctx.timeoutNs = 50ull * 1000000;
  EXPECT_FALSE(baton::waitAtLeast(ctx, &word, 9, 2, "send head"));
  EXPECT_EQ(ctx.failure.result, baton::kWaitTimeout);
  std::vector<FlightRecord> r;
  std::vector<FlightChannelView> ch;
  rec.snapshot(&r, &ch);
  EXPECT_EQ(ch[0].note.state, 1u + baton::kWaitTimeout);
  EXPECT_EQ(ch[0].note.peer, 3u);
  EXPECT_EQ(ch[0].note.expected, 9u);
  EXPECT_EQ(ch[0].note.observed, 1u);
  EXPECT_GE(ch[0].note.lastNs - ch[0].note.sinceNs, 40000000u);
}

}  // namespace

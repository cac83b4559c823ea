// How the NET proxy attributes its send steps to operations for the profiler (src/proxy_op_watch.h):
// a watch finishes exactly once, whichever of the rank's end() and the proxy's last step comes
// second, and a connection's queue hands each step to the watch whose range holds it.
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "proxy_op_watch.h"
#include "unit/unit_helpers.h"

namespace {

using namespace baton;

struct CountingWatch : ProxyOpWatch {
  explicit CountingWatch(uint64_t first, bool receive = false) : ProxyOpWatch(first, receive) {}
  void stepPosted(uint64_t s) override { posted.push_back(s); }
  void stepDone(uint64_t s, size_t) override { done.push_back(s); }
  void finished() override { finishes.fetch_add(1); }
  std::vector<uint64_t> posted, done;
  std::atomic<int> finishes{0};
};

TEST(ProxyOpWatch, FinishesOnceWhicheverSideIsLast) {
  CountingWatch a(10);  // the rank ends first, then the proxy sends the last step
  a.end(13);
  for (uint64_t s = 10; s < 13; ++s) {
    EXPECT_EQ(a.finishes.load(), 0) << s;
    a.proxyDone(s);
  }
  EXPECT_EQ(a.finishes.load(), 1);
  CountingWatch b(10);  // the proxy sent everything before the rank's part returned
  for (uint64_t s = 10; s < 13; ++s) b.proxyDone(s);
  EXPECT_EQ(b.finishes.load(), 0);
  b.end(13);
  EXPECT_EQ(b.finishes.load(), 1);
  CountingWatch none(7);  // a part that sent nothing on this connection
  none.end(7);
  EXPECT_EQ(none.finishes.load(), 1);
}

TEST(ProxyOpWatch, RacingEndAndLastStepFinishOnce) {
  for (int trial = 0; trial < 2000; ++trial) {
    CountingWatch w(0);
    std::thread proxy([&] {
      for (uint64_t s = 0; s < 4; ++s) w.proxyDone(s);
    });
    w.end(4);
    proxy.join();
    ASSERT_EQ(w.finishes.load(), 1) << "trial " << trial;
  }
}

TEST(ProxyOpWatches, EachStepGoesToTheWatchHoldingIt) {
  ProxyOpWatches q;
  EXPECT_EQ(q.covering(0), nullptr);  // none ever queued
  auto first = std::make_shared<CountingWatch>(0);
  q.add(first);
  EXPECT_EQ(q.covering(5).get(), first.get());  // its end is not known yet: every later step is its
  first->end(3);
  auto second = std::make_shared<CountingWatch>(3);
  q.add(second);
  EXPECT_EQ(q.covering(2).get(), first.get());
  EXPECT_EQ(q.covering(3).get(), second.get());
  for (uint64_t s = 0; s < 3; ++s) first->proxyDone(s);
  EXPECT_EQ(first->finishes.load(), 1);
  EXPECT_EQ(q.covering(2), nullptr);  // the finished one is dropped
  EXPECT_EQ(q.covering(4).get(), second.get());
}

// Receives: the sender numbers its watches as the receiver does, and each received step names its
// watch; a step that comes before its watch is queued waits for it.
TEST(ProxyOpWatches, ReceivedStepsGoToTheWatchTheSenderNamed) {
  ProxyOpWatches q;
  auto empty = std::make_shared<CountingWatch>(0, true);  // watch 0: a part that receives nothing here
  q.add(empty);
  EXPECT_EQ(empty->ordinal, 0u);
  q.received(0, 1, 64);  // watch 1's first step arrives while part 0 still runs: it waits
  q.received(1, 1, 64);
  EXPECT_TRUE(empty->done.empty());  // not given to watch 0, whose firstStep is the same
  empty->end(0);
  EXPECT_EQ(empty->finishes.load(), 1);
  auto next = std::make_shared<CountingWatch>(0, true);
  q.add(next);  // gets the two early steps now
  EXPECT_EQ(next->done, (std::vector<uint64_t>{0, 1}));
  q.received(2, 1, 64);  // and later ones as they arrive
  EXPECT_EQ(next->done, (std::vector<uint64_t>{0, 1, 2}));
  EXPECT_EQ(next->finishes.load(), 0);
  next->end(3);  // a receive watch finishes when the rank's part ends
  EXPECT_EQ(next->finishes.load(), 1);
  q.received(3, 7, 64);  // a step for a watch that never comes is kept, boundedly, and harms nothing
  for (uint64_t s = 4; s < 200; ++s) q.received(s, 9, 64);
  auto later = std::make_shared<CountingWatch>(3, true);
  q.add(later);  // watch 2: nothing of its own arrived yet
  EXPECT_TRUE(later->done.empty());
}

}  // namespace

// The execution model's bounded wait (algorithms/exec_model.h) on the CPU backend: it returns at
// once when the word is already there, gives up promptly on the abort flag or the timeout with a
// full report, and does not burn cores while many waiters share few of them.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <csignal>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "exec_model.h"
#include "unit/unit_helpers.h"

namespace {

using baton::ExecCtx;
using baton::waitAtLeast;
using bt::secondsSince;
using Clock = std::chrono::steady_clock;

ExecCtx makeCtx(const volatile int* abortFlag = nullptr, uint64_t timeoutNs = 0) {
  ExecCtx ctx;
  ctx.rank = 3;
  ctx.channel = 1;
  ctx.abortFlag = abortFlag;
  ctx.timeoutNs = timeoutNs;
  return ctx;
}

double cpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_utime.tv_usec * 1e-6 + u.ru_stime.tv_sec + u.ru_stime.tv_usec * 1e-6;
}

TEST(ExecModel, WaitReturnsAtOnceWhenReached) {
  uint64_t word = 7;
  ExecCtx ctx = makeCtx();
  const auto t0 = Clock::now();
  EXPECT_TRUE(waitAtLeast(ctx, &word, 7, 0, "tail"));
  EXPECT_TRUE(waitAtLeast(ctx, &word, 3, 0, "tail"));
  EXPECT_LT(secondsSince(t0), 0.01);
  EXPECT_FALSE(ctx.failed);
  EXPECT_EQ(ctx.failure.result, baton::kWaitOk);
}

TEST(ExecModel, WaitSeesAStoreFromAnotherThread) {
  uint64_t word = 0;
  ExecCtx ctx = makeCtx();
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    baton::storeRelease(&word, 5);
  });
  EXPECT_TRUE(waitAtLeast(ctx, &word, 5, 1, "head"));
  t.join();
  EXPECT_FALSE(ctx.failed);
}

TEST(ExecModel, AbortFlagEndsTheWaitPromptly) {
  uint64_t word = 1;
  int abortFlag = 0;
  ExecCtx ctx = makeCtx(&abortFlag);
  Clock::time_point setAt;
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    setAt = Clock::now();
    __atomic_store_n(&abortFlag, 1, __ATOMIC_RELEASE);
  });
  const bool ok = waitAtLeast(ctx, &word, 4, 2, "recv tail");
  const auto returnedAt = Clock::now();
  t.join();
  EXPECT_FALSE(ok);
  EXPECT_LT(std::chrono::duration<double>(returnedAt - setAt).count(), 0.1);
  EXPECT_TRUE(ctx.failed);
  EXPECT_EQ(ctx.failure.result, baton::kWaitAborted);
  EXPECT_EQ(ctx.failure.rank, 3);
  EXPECT_EQ(ctx.failure.peer, 2);
  EXPECT_EQ(ctx.failure.channel, 1);
  EXPECT_STREQ(ctx.failure.what, "recv tail");
  EXPECT_EQ(ctx.failure.expected, 4u);
  EXPECT_EQ(ctx.failure.observed, 1u);
  // A failed context drains: later waits give up at once, even on a word that is ready.
  word = 100;
  EXPECT_FALSE(waitAtLeast(ctx, &word, 4, 2, "recv tail"));
}

TEST(ExecModel, TimeoutEndsTheWait) {
  uint64_t word = 0;
  ExecCtx ctx = makeCtx(nullptr, 50'000'000);  // 50 ms
  const auto t0 = Clock::now();
  EXPECT_FALSE(waitAtLeast(ctx, &word, 1, 5, "send head"));
  const double s = secondsSince(t0);
  EXPECT_GE(s, 0.05);
  EXPECT_LT(s, 0.5);
  EXPECT_EQ(ctx.failure.result, baton::kWaitTimeout);
  EXPECT_EQ(ctx.failure.peer, 5);
  EXPECT_EQ(ctx.failure.expected, 1u);
  EXPECT_EQ(ctx.failure.observed, 0u);
}

TEST(ExecModel, AbortAlreadySetWinsOverNoTimeout) {
  uint64_t word = 0;
  int abortFlag = 1;
  ExecCtx ctx = makeCtx(&abortFlag);
  const auto t0 = Clock::now();
  EXPECT_FALSE(waitAtLeast(ctx, &word, 1, 0, "tail"));
  EXPECT_LT(secondsSince(t0), 0.1);
  EXPECT_EQ(ctx.failure.result, baton::kWaitAborted);
}

// 16 waiters on (typically) 2 cores: while they wait 300 ms, the whole process may use only a
// small fraction of the CPU that 16 spinning threads would (16 x 0.3 s, or all cores for 0.3 s).
TEST(ExecModel, WaitersDoNotBurnCoresWhenOversubscribed) {
  constexpr int kWaiters = 16;
  constexpr double kDelay = 0.3;
  uint64_t flag = 0;
  std::atomic<int> started{0};
  std::vector<double> wakeLatency(kWaiters, -1);
  Clock::time_point setAt;
  std::atomic<bool> isSet{false};
  std::vector<std::thread> ts;
  const double cpu0 = cpuSeconds();
  const auto t0 = Clock::now();
  for (int i = 0; i < kWaiters; ++i)
    ts.emplace_back([&, i] {
      ExecCtx ctx = makeCtx(nullptr, 10'000'000'000ull);
      started++;
      const bool ok = waitAtLeast(ctx, &flag, 1, i, "flag");
      const auto now = Clock::now();
      EXPECT_TRUE(ok) << "waiter " << i;
      if (isSet.load()) wakeLatency[i] = std::chrono::duration<double>(now - setAt).count();
    });
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::duration<double>(kDelay));
    setAt = Clock::now();
    isSet.store(true);
    baton::storeRelease(&flag, 1);
  });
  setter.join();
  for (auto& t : ts) t.join();
  const double cpu = cpuSeconds() - cpu0, wall = secondsSince(t0);
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const double budget = std::min<double>(kWaiters, cores) * wall;  // what spinning would cost
  RecordProperty("cpu_ms", std::to_string(int(cpu * 1000)));
  printf("[          ] %d waiters, %.0f ms wall, %.0f ms CPU (%.0f%% of %u cores)\n", kWaiters, wall * 1e3, cpu * 1e3,
         100 * cpu / (cores * wall), cores);
  EXPECT_EQ(started.load(), kWaiters);
  EXPECT_LT(cpu, 1.0) << "waits burn CPU";
  EXPECT_LT(cpu, 0.5 * budget) << "waits burn CPU: " << cpu << " s of " << budget << " s available";
  for (int i = 0; i < kWaiters; ++i) EXPECT_LT(wakeLatency[i], 0.05) << "waiter " << i << " woke late";
}

}  // namespace

// A killed peer stays a zombie until its parent reaps it, and kill(pid, 0) still succeeds then: the
// liveness test must call it gone, or a survivor names the wrong rank as the cause of a failure.
TEST(ExecModel, ZombieProcessCountsAsDead) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  EXPECT_TRUE(baton::processAlive(getpid()));
  const auto t0 = Clock::now();
  while (baton::processAlive(child) && secondsSince(t0) < 5) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_FALSE(baton::processAlive(child)) << "an exited, unreaped child (a zombie) still counts as alive";
  EXPECT_EQ(kill(child, 0), 0) << "the child should still be a zombie here, not reaped";
  waitpid(child, nullptr, 0);
  EXPECT_FALSE(baton::processAlive(child));
}

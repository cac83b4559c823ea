// The CPU side of the execution model (algorithms/exec_model.h): time, backoff and jitter.
#include <sched.h>
#include <time.h>

#include <cstdio>
#include <atomic>
#include <random>

#include "exec_model.h"
#include "trace.h"

namespace baton {

uint64_t nowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

// Spin a little (a hand-off between two running cores takes ~100 ns), then yield (another rank on
// this core may be the one we wait for), then sleep with a growing period so an oversubscribed
// machine spends its cycles on the ranks that have work.
// Pauses before the first yield: long enough to catch a peer on another core, short enough not to
// burn a time slice when more ranks than cores share the machine (setWaitSpin, set at init).
static std::atomic<uint32_t> gSpin{256};
void setWaitSpin(uint32_t pauses) { gSpin.store(pauses, std::memory_order_relaxed); }

void waitBackoff(uint32_t& it) {
  ++it;
  const uint32_t spin = gSpin.load(std::memory_order_relaxed);
  if (it < spin) {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
    return;
  }
  if (it < spin + 256) {
    sched_yield();
    return;
  }
  const uint32_t exp = (it - spin - 256) / 64;  // every 64 sleeps double the period: 2, 4, ... 64 us
  const long us = 2l << (exp < 5 ? exp : 5);
  timespec ts{0, us * 1000};
  nanosleep(&ts, nullptr);
}

void traceStep(const ExecCtx& ctx, const char* primitive, const char* proto, uint64_t step, uint64_t bytes,
               uint64_t startNs) {
  char args[96];
  snprintf(args, sizeof args, "\"protocol\":\"%s\",\"step\":%llu,\"bytes\":%llu", proto, (unsigned long long)step,
           (unsigned long long)bytes);
  traceComplete(ctx.rank, ctx.channel, primitive, "step", startNs, nowNs(), args);
}

void jitterSleep(ExecCtx& ctx) {
  // xorshift: cheap, per-context, no shared state for TSan to flag.
  uint32_t x = ctx.jitterState ? ctx.jitterState : 0x9e3779b9u;
  x ^= x << 13, x ^= x >> 17, x ^= x << 5;
  ctx.jitterState = x;
  if ((x & 3) == 0) {
    timespec ts{0, long(x % 50000)};  // up to 50 us, one time in four
    nanosleep(&ts, nullptr);
  }
}

}  // namespace baton

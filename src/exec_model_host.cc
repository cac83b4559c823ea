// The CPU side of the execution model (algorithms/exec_model.h): time, backoff and jitter.
#include <sched.h>
#include <signal.h>
#include <time.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "exec_model.h"
#include "misc/trace.h"

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
namespace {
std::atomic<uint32_t> gSpin{256};
}  // namespace

void setWaitSpin(uint32_t pauses) { gSpin.store(pauses, std::memory_order_relaxed); }

// Adaptive spin, per thread (as adaptive mutexes do): a wait that outlasts the spin phase means the
// peer was probably not running (the scheduler put both on one core), so the next waits yield
// sooner. Every 16th wait spins the full length again as a probe: answered while spinning, the
// peer has a core of its own and the spin goes back to full. Without this, two ranks sharing a core
// hand over once per full spin (18 us per 8-byte allreduce instead of 0.2), for as long as they
// share it; a short spin alone would stay short (a cross-core hand-off outlasts a few pauses too).
// In the static TLS block (initial-exec): every pause reads them, and the default model for a
// shared library costs a __tls_get_addr call per access.
namespace {
thread_local uint32_t tSpin __attribute__((tls_model("initial-exec"))) =
    0;  // this thread's current spin length (0: not set yet)
thread_local uint32_t tLastIt __attribute__((tls_model("initial-exec"))) = 0;  // pauses the previous wait took
thread_local uint32_t tWaits __attribute__((tls_model("initial-exec"))) = 0;   // waits that paused at least once
thread_local bool tProbe __attribute__((tls_model("initial-exec"))) = false;  // the current wait is a full-length probe
}  // namespace

void waitBackoff(uint32_t& it) {
  ++it;
  const uint32_t maxSpin = gSpin.load(std::memory_order_relaxed);
  if (it == 1) {  // a new wait: judge the previous one, then pick this one's spin
    const uint32_t floor = maxSpin < 4 ? maxSpin : 4;
    if (tSpin == 0 || tSpin > maxSpin) tSpin = maxSpin;
    else if (tLastIt < (tProbe ? maxSpin : tSpin))
      tSpin = tProbe ? maxSpin : (tSpin * 2 < maxSpin ? tSpin * 2 : maxSpin);
    else if (!tProbe) tSpin = tSpin / 2 > floor ? tSpin / 2 : floor;
    tProbe = tSpin < maxSpin && ++tWaits % 16 == 0;
  }
  tLastIt = it;
  const uint32_t spin = tProbe ? maxSpin : tSpin;
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

bool processAlive(int pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  // A killed process stays a zombie until its parent reaps it, and kill(pid, 0) still succeeds:
  // its state letter in /proc says it is gone.
  char path[32], buf[256];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE* f = fopen(path, "r");
  if (!f) return !(kill(pid, 0) != 0 && errno == ESRCH);  // reaped since the first look
  const size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  const char* paren = strrchr(buf, ')');  // the name may hold spaces and parentheses
  return !(paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X'));
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

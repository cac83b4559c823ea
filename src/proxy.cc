// The proxy thread (proxy.h): progresses every registered task in turn, hot while there is work,
// asleep in poll() otherwise.
#include "proxy.h"

#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "comm.h"
#include "comm_error.h"
#include "exec_model.h"
#include "misc/debug.h"
#include "profiler/profiler_events.h"

namespace baton {

Proxy::Proxy(ncclComm* comm) : comm_(comm), wakeFd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

Proxy::~Proxy() {
  stop();
  if (wakeFd_ >= 0) close(wakeFd_);
}

void Proxy::kick() {
  if (!sleeping_.load()) return;  // seq_cst, paired with the sleeper's re-check (run())
  const uint64_t one = 1;
  if (write(wakeFd_, &one, sizeof one) < 0) {}  // the counter is already nonzero: the sleeper wakes anyway
}

void Proxy::add(std::shared_ptr<ProxyTask> task) {
  std::lock_guard<std::mutex> lock(mu_);
  tasks_.push_back(std::move(task));
  assistOn_ = comm_->tun.proxyAssistBytes > 0;  // read by wantsAssist() after the version below (init has set it)
  version_.fetch_add(1, std::memory_order_release);
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  kick();  // a sleeping thread picks up the new connection's socket
}

bool Proxy::drain(uint64_t timeoutNs) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!thread_.joinable()) return true;
  }
  const uint64_t ticket = drainAsked_.fetch_add(1) + 1;
  kick();
  const uint64_t until = nowNs() + timeoutNs;
  while (drainDone_.load(std::memory_order_acquire) < ticket) {
    if (nowNs() > until || comm_->asyncError.load() != ncclSuccess) return false;
    timespec ts{0, 100000};
    nanosleep(&ts, nullptr);
  }
  return true;
}

void Proxy::stop() {
  std::thread t;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
    t = std::move(thread_);
  }
  kick();
  if (t.joinable()) t.join();
  {
    std::lock_guard<std::mutex> pass(passMu_);
    mine_.clear(), dead_.clear();
    seen_ = ~0ull;
  }
  const uint64_t ranks = movedByRanks_.exchange(0), thread = movedByThread_.exchange(0);
  if (ranks + thread)
    BATON_INFO(kSubNet, "proxy of rank %d: %llu passes that moved data ran on rank threads, %llu on the proxy thread",
               comm_->rank, (unsigned long long)ranks, (unsigned long long)thread);
  std::lock_guard<std::mutex> lock(mu_);
  tasks_.clear();
}

void Proxy::assist() {
  if (stop_.load(std::memory_order_relaxed)) return;
  std::unique_lock<std::mutex> pass(passMu_, std::try_to_lock);
  if (pass.owns_lock() && passLocked()) movedByRanks_.fetch_add(1, std::memory_order_relaxed);
}

bool Proxy::passLocked() {
  if (version_.load(std::memory_order_acquire) != seen_) {
    std::lock_guard<std::mutex> lock(mu_);
    seen_ = version_.load();
    dead_.resize(tasks_.size(), false);
    mine_ = tasks_;
  }
  bool any = false;
  for (size_t i = 0; i < mine_.size(); ++i) {
    if (dead_[i]) continue;
    bool did = false;
    std::string msg;
    const ncclResult_t res = mine_[i]->progress(&did, &msg);
    any |= did;
    if (res == ncclSuccess) continue;
    dead_[i] = true;
    BATON_WARN("proxy of rank %d: %s", comm_->rank, msg.c_str());
    commSetError(comm_, res, msg.c_str());  // raises the abort flag: every wait of this rank ends now
  }
  return any;
}

bool Proxy::pendingLocked() {
  for (size_t i = 0; i < mine_.size(); ++i)
    if (!dead_[i] && mine_[i]->pending()) return true;
  return false;
}

// Idle with work about to come (an operation in flight, steps staged): a step usually follows
// within microseconds, so pause, then yield (a rank sharing this core gets it), then, after ~4096
// idle passes (milliseconds with nothing moving while an operation is in flight, as during a fused
// operation's GEMM), nap 50 us at a time: a proxy that yields in a loop still takes a share of a
// core a rank computes on. Measured on lesson 11's
// slowed link: AllGather+GEMM 0.59-0.61 of naive with the nap against 0.59-0.75 without; 8 B to
// 32 KiB AllReduce across the two hosts unchanged (156-292 us against 166-292).
namespace {
void hotWait(uint32_t idle) {
  if (idle < 64) {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  } else if (idle < 4096) {
    sched_yield();
  } else {
    usleep(50);
  }
}
}  // namespace

void Proxy::run() {
  uint64_t launchesSeen = 0;
  uint32_t idle = 0;
  bool wasActive = false;
  uint64_t appendedSeen = 0;
  while (!stop_.load(std::memory_order_relaxed)) {
    bool any, pendingWork = false;
    uint64_t seen;
    std::vector<pollfd> fds;
    {
      std::lock_guard<std::mutex> pass(passMu_);
      any = passLocked();
      // A drain request is answered by a pass in which nothing moved and nothing waits to.
      const uint64_t asked = drainAsked_.load(std::memory_order_acquire);
      if (!any && asked != drainDone_.load(std::memory_order_relaxed) && !pendingLocked())
        drainDone_.store(asked, std::memory_order_release);
      // The communicator failed (here or in a rank's wait): end every connection, so peers on
      // other hosts fail at once instead of at BATON_WAIT_TIMEOUT.
      if (!severed_ && comm_->asyncError.load() != ncclSuccess) {
        severed_ = true;
        for (size_t i = 0; i < mine_.size(); ++i) mine_[i]->sever(), dead_[i] = true;
      }
      if (!any) {
        pendingWork = pendingLocked();
        for (size_t i = 0; i < mine_.size(); ++i)
          if (!dead_[i] && mine_[i]->pollFd() >= 0) fds.push_back({mine_[i]->pollFd(), POLLIN, 0});
      }
      seen = seen_;
    }
    if (any) movedByThread_.fetch_add(1, std::memory_order_relaxed);
    const uint64_t launches = kernelLaunches_.load(std::memory_order_relaxed);
    if (ProfilerPlugin* prof =
            profiler_.load(std::memory_order_acquire)) {  // NCCL's ProxyCtrl events (profiler_events.h)
      const uint64_t appended = appended_.load(std::memory_order_relaxed);
      if (appended != appendedSeen)
        profileProxyCtrl(prof, ncclProfilerProxyCtrlAppendEnd, (int)(appended - appendedSeen));
      appendedSeen = appended;
      if (any != wasActive) profileProxyCtrl(prof, any ? ncclProfilerProxyCtrlActive : ncclProfilerProxyCtrlIdle);
    }
    wasActive = any;
    idle = any || launches != launchesSeen ? 0 : idle + 1;
    launchesSeen = launches;
    if (any) continue;
    if (idle < 2048 || comm_->inflight.load() > 0 || awakeHolds_.load() > 0 ||
        drainAsked_.load() != drainDone_.load() || pendingWork) {
      hotWait(idle);
      continue;
    }
    // Nothing in flight: sleep until kicked, or until a connection's socket has news (data, a
    // goodbye, a crash). Announce the sleep first, then look again, so a kick is never lost.
    sleeping_.store(true);
    if (comm_->inflight.load() == 0 && awakeHolds_.load() == 0 && drainAsked_.load() == drainDone_.load() &&
        !stop_.load() && version_.load() == seen) {  // a connection added meanwhile: re-read the list first
      fds.insert(fds.begin(), pollfd{wakeFd_, POLLIN, 0});
      ProfilerPlugin* prof = profiler_.load(std::memory_order_acquire);
      void* sleep = profileProxySleep(prof);
      poll(fds.data(), fds.size(), 100);  // the timeout bounds how late a new connection is seen
      profileProxyWake(prof, sleep);
      uint64_t drained;
      if (read(wakeFd_, &drained, sizeof drained) < 0) {}  // nothing was written: woken by a socket or the timeout
    }
    sleeping_.store(false);
    idle = 0;
  }
}

}  // namespace baton

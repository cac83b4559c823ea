#include "proxy.h"

#include <sched.h>
#include <time.h>

#include "comm.h"
#include "debug.h"
#include "exec_model.h"

namespace baton {

void Proxy::add(std::shared_ptr<ProxyTask> task) {
  std::lock_guard<std::mutex> lock(mu_);
  tasks_.push_back(std::move(task));
  version_.fetch_add(1, std::memory_order_release);
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
}

bool Proxy::drain(uint64_t timeoutNs) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!thread_.joinable()) return true;
  }
  const uint64_t ticket = drainAsked_.fetch_add(1) + 1;
  const uint64_t until = nowNs() + timeoutNs;
  while (drainDone_.load(std::memory_order_acquire) < ticket) {
    if (nowNs() > until || error(nullptr) != ncclSuccess) return false;
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
  if (t.joinable()) t.join();
  std::lock_guard<std::mutex> lock(mu_);
  tasks_.clear();
}

ncclResult_t Proxy::error(std::string* message) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (message) *message = message_;
  return error_;
}

const volatile int* Proxy::abortFlag() const { return &comm_->abortFlag; }

// Idle backoff: a step usually follows within microseconds during an operation, so spin first;
// between operations give the cores to the ranks (pause, yield, then sleeps of at most 50 us).
static void idleWait(uint32_t idle) {
  if (idle < 64) {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  } else if (idle < 1024) {
    sched_yield();
  } else {
    const uint32_t exp = (idle - 1024) / 256;
    timespec ts{0, (long)(1000u << (exp < 5 ? exp : 5)) + 18000};  // 19 .. 50 us
    if (ts.tv_nsec > 50000) ts.tv_nsec = 50000;
    nanosleep(&ts, nullptr);
  }
}

void Proxy::run() {
  std::vector<std::shared_ptr<ProxyTask>> mine;
  std::vector<bool> dead;
  uint64_t seen = ~0ull;
  uint32_t idle = 0;
  while (!stop_.load(std::memory_order_relaxed)) {
    if (version_.load(std::memory_order_acquire) != seen) {
      std::lock_guard<std::mutex> lock(mu_);
      seen = version_.load();
      dead.resize(tasks_.size(), false);
      mine = tasks_;
    }
    bool any = false;
    for (size_t i = 0; i < mine.size(); ++i) {
      if (dead[i]) continue;
      bool did = false;
      std::string msg;
      const ncclResult_t res = mine[i]->progress(&did, &msg);
      any |= did;
      if (res == ncclSuccess) continue;
      dead[i] = true;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (error_ == ncclSuccess) error_ = res, message_ = msg;
      }
      BATON_WARN("proxy of rank %d: %s", comm_->rank, msg.c_str());
      commSetError(comm_, res, msg.c_str());  // raises the abort flag: every wait of this rank ends now
    }
    // A drain request is answered by a pass in which nothing moved and nothing waits to.
    const uint64_t asked = drainAsked_.load(std::memory_order_acquire);
    if (!any && asked != drainDone_.load(std::memory_order_relaxed)) {
      bool quiet = true;
      for (size_t i = 0; i < mine.size() && quiet; ++i) quiet = dead[i] || !mine[i]->pending();
      if (quiet) drainDone_.store(asked, std::memory_order_release);
    }
    idle = any ? 0 : idle + 1;
    if (!any) idleWait(idle);
  }
}

}  // namespace baton

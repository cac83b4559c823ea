// One operation's steps on one NET connection, as the proxy moves them: what NCCL's ProxyOp and
// ProxyStep profiler events report (src/profiler/profiler_events.cc implements the watch; lesson 13).
//
// NCCL's proxy is handed each operation with its step count; baton's proxy streams a connection's
// FIFO steps without knowing which operation wrote them. So the rank's part says which steps are
// its own: before it runs, a watch with firstStep (the connector's step counter then) is queued on
// the connection; when it ends, end() gives the counter after its last step. The proxy thread
// reports the steps of [firstStep, endStep) to the front watch, in order, and the watch finishes
// once its last step is done, on whichever thread sees that second (the rank's end() or the
// proxy's last stepDone): endStep and doneSteps are sequentially consistent, so one of the two
// sees both.
//
// Send connections only. A send step is written by the part it belongs to, after that part's
// watch is queued, so it cannot be mistaken for another's. A receive proxy posts receives up to
// kSteps ahead of the rank, and the peer may already send the next operation's steps while this
// rank finishes its part: which operation a received step belongs to is known only once the part
// ends, too late for the step's start time. Receive steps need the operation's step count up front
// (as NCCL's proxy has it) or a mark in the stream; neither exists yet.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>

namespace baton {

class ProxyOpWatch {
 public:
  explicit ProxyOpWatch(uint64_t first) : firstStep(first), doneSteps(first) {}
  virtual ~ProxyOpWatch() = default;
  // The proxy thread, in step order. Posted: a send handed to the network, a receive posted.
  // Done: the network took the send, or the received step was delivered to the FIFO.
  virtual void stepPosted(uint64_t s) = 0;
  virtual void stepDone(uint64_t s, size_t bytes) = 0;
  // Once, when every step is done (or there were none).
  virtual void finished() = 0;

  // The rank's part ended with its connector's counter at `end`.
  void end(uint64_t end) {
    endStep.store(end);
    if (doneSteps.load() >= end) finishOnce();
  }
  // The proxy finished step s (after stepDone).
  void proxyDone(uint64_t s) {
    doneSteps.store(s + 1);
    if (s + 1 >= endStep.load()) finishOnce();
  }
  bool covers(uint64_t s) const { return s >= firstStep && s < endStep.load(); }
  bool isFinished() const { return finished_.load(); }

  const uint64_t firstStep;

 private:
  void finishOnce() {
    if (!finished_.exchange(true)) finished();
  }
  std::atomic<uint64_t> endStep{~0ull};
  std::atomic<uint64_t> doneSteps;  // the step after the last one the proxy finished
  std::atomic<bool> finished_{false};
};

// A connection's watches, oldest first. Cheap while none was ever queued (one relaxed load).
class ProxyOpWatches {
 public:
  void add(std::shared_ptr<ProxyOpWatch> w) {
    std::lock_guard<std::mutex> lock(mu_);
    q_.push_back(std::move(w));
    any_.store(true, std::memory_order_release);
  }
  // The watch whose steps include s (proxy thread), dropping finished ones before it; or nullptr.
  std::shared_ptr<ProxyOpWatch> covering(uint64_t s) {
    if (!any_.load(std::memory_order_acquire)) return nullptr;
    std::lock_guard<std::mutex> lock(mu_);
    while (!q_.empty() && q_.front()->isFinished()) q_.pop_front();
    for (auto& w : q_)
      if (w->covers(s)) return w;
    return nullptr;
  }

 private:
  std::atomic<bool> any_{false};
  std::mutex mu_;
  std::deque<std::shared_ptr<ProxyOpWatch>> q_;
};

}  // namespace baton

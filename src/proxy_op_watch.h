// One operation's steps on one NET connection, as the proxy moves them: what NCCL's ProxyOp and
// ProxyStep profiler events report (src/profiler/profiler_events.cc implements the watch; lesson 13).
//
// NCCL's proxy is handed each operation with its step count; baton's proxy streams a connection's
// FIFO steps without knowing which operation wrote them. So the rank's part says which steps are
// its own: before it runs, a watch with firstStep (the connector's step counter then) is queued on
// the connection; when it ends, end() gives the counter after its last step.
//
// Sends. A send step is written by the part it belongs to, after that part's watch is queued, so
// the proxy reports the steps of [firstStep, endStep) to it, in order. The watch finishes once its
// last step is done, on whichever thread sees that second (the rank's end() or the proxy's last
// stepDone): endStep and doneSteps are sequentially consistent, so one of the two sees both.
//
// Receives. A receive proxy posts receives ahead of the rank, and the peer may already send the
// next operation's steps while this rank finishes its part, so a received step cannot be told by
// its number alone. The sender tells: each connection's watches are numbered as they are queued
// (both ends queue one for the same parts: every ring part while a plugin wants proxy events), and
// a send step of a watched operation carries its watch's number in its NET tag (net_transport.h,
// kNetTagWatched). The receive proxy reports the step to the receive watch of that number; a step
// that arrives before the rank queued that watch (the peer ran ahead) waits in the queue and is
// reported by add(). A receive watch finishes at end(): the rank consumed every step of its part,
// so the proxy delivered (and reported) them all before.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

namespace baton {

class ProxyOpWatch {
 public:
  explicit ProxyOpWatch(uint64_t first, bool receive = false) : firstStep(first), receive(receive), doneSteps(first) {}
  virtual ~ProxyOpWatch() = default;
  // The proxy thread, in step order. Posted: a send handed to the network, a receive posted.
  // Done: the network took the send, or the received step was delivered to the FIFO.
  virtual void stepPosted(uint64_t s) = 0;
  virtual void stepDone(uint64_t s, size_t bytes) = 0;
  // Once, when every step is done (or there were none).
  virtual void finished() = 0;
  // What a network plugin is handed with step s's send (its profiler callback's pHandle): null
  // when nobody records the plugin's events.
  virtual void* netPluginParent(uint64_t) { return nullptr; }

  // The rank's part ended with its connector's counter at `end`.
  void end(uint64_t end) {
    endStep.store(end);
    if (receive || doneSteps.load() >= end) finishOnce();
  }
  // The proxy finished step s (after stepDone).
  void proxyDone(uint64_t s) {
    doneSteps.store(s + 1);
    if (s + 1 >= endStep.load()) finishOnce();
  }
  bool covers(uint64_t s) const { return s >= firstStep && s < endStep.load(); }
  bool isFinished() const { return finished_.load(); }

  const uint64_t firstStep;
  const bool receive;
  uint64_t ordinal = 0;  // its place among the connection's watches (ProxyOpWatches::add)

 private:
  void finishOnce() {
    if (!finished_.exchange(true)) finished();
  }
  std::atomic<uint64_t> endStep{~0ull};
  std::atomic<uint64_t> doneSteps;  // the step after the last one the proxy finished
  std::atomic<bool> finished_{false};
};

// A connection's watches, oldest first. covering() is cheap while none was ever queued (one
// relaxed load); received() runs only for steps a watching sender marked.
class ProxyOpWatches {
 public:
  // The rank queues its part's watch; a receive watch gets, now, the steps that arrived before it.
  void add(std::shared_ptr<ProxyOpWatch> w) {
    std::vector<Early> mine;
    {
      std::lock_guard<std::mutex> lock(mu_);
      w->ordinal = nextOrdinal_++;
      for (auto it = early_.begin(); it != early_.end();) {
        if (it->ordinal == (w->ordinal & kOrdinalMask)) mine.push_back(*it), it = early_.erase(it);
        else ++it;
      }
      q_.push_back(w);
      any_.store(true, std::memory_order_release);
    }
    for (const Early& e : mine) w->stepPosted(e.step), w->stepDone(e.step, e.bytes);
  }
  // The receive proxy delivered step s, which the sender marked as its watch number `ordinal`'s
  // (only its low bits travel); called before the FIFO release that lets the rank consume it.
  void received(uint64_t s, uint64_t ordinal, size_t bytes) {
    std::shared_ptr<ProxyOpWatch> w;
    {
      std::lock_guard<std::mutex> lock(mu_);
      while (!q_.empty() && q_.front()->isFinished()) q_.pop_front();
      for (auto& x : q_)
        if ((x->ordinal & kOrdinalMask) == ordinal && x->receive && !x->isFinished()) w = x;
      if (!w) {
        if (early_.size() == kMaxEarly) early_.erase(early_.begin());  // a watch that never comes
        early_.push_back({ordinal, s, bytes});
        return;
      }
    }
    w->stepPosted(s);
    w->stepDone(s, bytes);
  }
  static constexpr uint64_t kOrdinalMask = 0xffff;  // the bits a NET tag carries

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
  struct Early {
    uint64_t ordinal, step;
    size_t bytes;
  };
  uint64_t nextOrdinal_ = 0;
  static constexpr size_t kMaxEarly = 64;  // more than a connection's steps in flight (kSteps)
  std::atomic<bool> any_{false};
  std::mutex mu_;
  std::deque<std::shared_ptr<ProxyOpWatch>> q_;
  std::vector<Early> early_;  // received steps whose watch is not queued yet
};

}  // namespace baton

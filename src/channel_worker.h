// A channel's worker: the CPU thread that plays the role of the channel's CUDA block. It runs the
// work items handed to it in order, which is what keeps every rank's FIFO steps in the same order.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace baton {

class ChannelWorker {
 public:
  ChannelWorker() = default;
  ChannelWorker(const ChannelWorker&) = delete;
  ~ChannelWorker() { stop(); }
  void start(const char* name);
  void submit(std::function<void()> work);
  // Runs what is queued, then joins the thread.
  void stop();

 private:
  void loop();
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  char name_[16] = "";
};

}  // namespace baton

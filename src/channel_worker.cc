// A channel's worker thread (channel_worker.h): runs its work items in order, sleeping while idle.
#include "channel_worker.h"

#include <pthread.h>

#include <cstdio>

namespace baton {

void ChannelWorker::start(const char* name) {
  snprintf(name_, sizeof name_, "%s", name);
  thread_ = std::thread([this] { loop(); });
}

void ChannelWorker::submit(std::function<void()> work) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    queue_.push_back(std::move(work));
  }
  cv_.notify_one();
}

void ChannelWorker::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lk(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void ChannelWorker::loop() {
  pthread_setname_np(pthread_self(), name_);
  while (true) {
    std::function<void()> work;
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      work = std::move(queue_.front());
      queue_.pop_front();
    }
    work();
  }
}

}  // namespace baton

// A countdown that the submitting thread waits on while channel workers finish their parts.
#pragma once

#include <atomic>

#include "nccl.h"

namespace baton {

class Completion {
 public:
  explicit Completion(int parts) : pending_(parts) {}
  // Called once per part; the first error wins.
  void done(ncclResult_t res) {
    if (res != ncclSuccess) {
      int expected = ncclSuccess;
      error_.compare_exchange_strong(expected, res);
    }
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_all();
  }
  bool finished() const { return pending_.load(std::memory_order_acquire) == 0; }
  // Spin briefly (a small collective finishes in microseconds), then sleep in the kernel.
  ncclResult_t wait() {
    for (int i = 0; i < 2000 && !finished(); ++i) {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
    }
    int v;
    while ((v = pending_.load(std::memory_order_acquire)) != 0) pending_.wait(v, std::memory_order_acquire);
    return (ncclResult_t)error_.load();
  }
  ncclResult_t error() const { return (ncclResult_t)error_.load(); }

 private:
  std::atomic<int> pending_;
  std::atomic<int> error_{ncclSuccess};
};

}  // namespace baton

// The proxy: one progress thread per communicator that moves data for connections the ranks'
// own loads and stores cannot reach (the NET transport, lesson 08). NCCL runs one per GPU process
// for the same reason: the GPU cannot call a network API, so a CPU thread watches the staging
// FIFOs and drives the network for it. baton's CPU ranks could call it themselves, but the proxy
// keeps the collective code transport-blind and shows the real design.
//
// A connection registers a ProxyTask; the thread calls progress() on every task in turn, spinning
// while any made progress and backing off (pause, yield, then short sleeps) while all are idle.
// A task that fails is dropped; the first failure becomes the communicator's async error and
// raises its abort flag, so the ranks' waits end at once instead of at BATON_WAIT_TIMEOUT.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nccl.h"

struct ncclComm;

namespace baton {

class ProxyTask {
 public:
  virtual ~ProxyTask() = default;
  // Moves what can move now; *didWork: something moved (the proxy stays hot). A failure returns
  // its code and sets *message (naming the peer rank and its address).
  virtual ncclResult_t progress(bool* didWork, std::string* message) = 0;
};

class Proxy {
 public:
  explicit Proxy(ncclComm* comm) : comm_(comm) {}
  ~Proxy() { stop(); }
  // Registers a task; the thread starts with the first one.
  void add(std::shared_ptr<ProxyTask> task);
  // Stops and joins the thread; tasks are released (a connection still holds its own).
  void stop();
  // The first failure seen (ncclSuccess and "" if none).
  ncclResult_t error(std::string* message) const;
  const volatile int* abortFlag() const;

 private:
  void run();
  ncclComm* comm_;
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<ProxyTask>> tasks_;
  std::atomic<uint64_t> version_{0};  // bumped by add(): the thread re-reads the list
  std::atomic<bool> stop_{false};
  std::thread thread_;
  ncclResult_t error_ = ncclSuccess;
  std::string message_;
};

}  // namespace baton

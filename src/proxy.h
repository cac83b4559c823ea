// The proxy: one progress thread per communicator that moves data for connections the ranks'
// own loads and stores cannot reach (the NET transport, lesson 08). NCCL runs one per GPU process
// for the same reason: the GPU cannot call a network API, so a CPU thread watches the staging
// FIFOs and drives the network for it. baton's CPU ranks could call it themselves, but the proxy
// keeps the collective code transport-blind and shows the real design.
//
// A connection registers a ProxyTask; the thread calls progress() on every task in turn. Like
// NCCL's progress thread it is hot only while there is work: while an operation of its
// communicator is in flight (kick() at launch wakes it), or a task has staged steps to send, it
// spins (pause, then yield, so a rank sharing its core runs); otherwise it sleeps in poll() on an
// eventfd and on its connections' sockets, so a peer's data or its death still wakes it at once.
// A task that fails is dropped; the first failure becomes the communicator's async error and
// raises its abort flag, so the ranks' waits end at once instead of at BATON_WAIT_TIMEOUT.
//
// The rank's hand (issue 45): a rank thread that spins waiting on its FIFOs, in an operation of up
// to BATON_PROXY_ASSIST bytes (makeCtx), runs the same progress pass itself when no other thread is
// in one (assist()), so a small step
// leaves or lands without waking the proxy thread: that hand-off costs two thread switches per step,
// and on a host where the rank and its proxy share a core it is most of a small message's time. The
// tasks stay the proxy's: one pass at a time (passMu_), and a failure is handled as the thread
// handles it. A GPU's kernels cannot call it; there the thread does all the work, as in NCCL.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nccl.h"
#include "proxy_op_watch.h"

struct ncclComm;

namespace baton {

class ProfilerPlugin;  // profiler/profiler_plugin.h

class ProxyTask {
 public:
  virtual ~ProxyTask() = default;
  // Moves what can move now; *didWork: something moved (the proxy stays hot). A failure returns
  // its code and sets *message (naming the peer rank and its address).
  virtual ncclResult_t progress(bool* didWork, std::string* message) = 0;
  // Work the ranks handed over that has not left yet (a send task's steps still to send).
  virtual bool pending() { return false; }
  // A descriptor that becomes readable when the task has something to do (-1: none).
  virtual int pollFd() { return -1; }
  // The communicator failed: end the connection so the peer learns it now (lesson 10).
  virtual void sever() {}
  // Report one operation's steps on this connection (NCCL's ProxyOp/ProxyStep events, lesson 13).
  void watch(std::shared_ptr<ProxyOpWatch> w) { watches_.add(std::move(w)); }

 protected:
  ProxyOpWatches watches_;
};

class Proxy {
 public:
  explicit Proxy(ncclComm* comm);
  ~Proxy();
  // An operation was launched: wake the thread if it sleeps. Cheap when it is awake.
  void kick();
  // A GPU communicator's kernels stage NET steps without telling the host (src/gpu/gpu_fifo.cc):
  // while such a hold exists (+1 / -1) the thread never sleeps, only naps between idle passes, and
  // each eager launch of such a kernel ends the naps (kernelLaunched; a CUDA graph's replays do not).
  void holdAwake(int delta) {
    awakeHolds_.fetch_add(delta);
    kick();  // a thread that went to sleep just before would otherwise wait out its poll (100 ms)
  }
  void kernelLaunched() { kernelLaunches_.fetch_add(1, std::memory_order_relaxed); }
  // The communicator's profiler plugin, once init has one (the thread may run before): it gets
  // the thread's ProxyCtrl events. Unset before the plugin goes (commFree stops the thread first).
  void setProfiler(ProfilerPlugin* p) { profiler_.store(p, std::memory_order_release); }
  // A profiled launch handed `n` parts to the channels (NCCL's proxy appends the ops it is
  // posted; baton's learns of the steps from the FIFOs, so the parts stand in for them).
  void partsAppended(int n) { appended_.fetch_add((uint64_t)n, std::memory_order_relaxed); }
  // Registers a task; the thread starts with the first one.
  void add(std::shared_ptr<ProxyTask> task);
  // Waits (at most `timeoutNs`) until no task has pending work: a rank's send completes once
  // its data is in the staging FIFO, so before a communicator goes away its proxy must have sent
  // it. False on timeout. Returns at once when the thread never started.
  bool drain(uint64_t timeoutNs);
  // Stops and joins the thread; tasks are released (a connection still holds its own).
  void stop();
  // One progress pass on the calling rank thread, unless a pass is running or nothing is registered.
  void assist();
  static void assistHook(void* proxy) { static_cast<Proxy*>(proxy)->assist(); }
  // Whether ranks should call assist(): BATON_PROXY_ASSIST is not 0 and some task is registered.
  bool wantsAssist() const { return version_.load(std::memory_order_acquire) != 0 && assistOn_; }

 private:
  void run();
  bool passLocked();     // one pass over the tasks (passMu_ held); true: something moved
  bool pendingLocked();  // a live task has work handed over (passMu_ held)
  ncclComm* comm_;
  bool assistOn_ = false;  // BATON_PROXY_ASSIST, as of the first add()
  std::mutex passMu_;      // one progress pass at a time, the thread's or a rank's; guards the three below
  std::vector<std::shared_ptr<ProxyTask>> mine_;
  std::vector<bool> dead_;
  uint64_t seen_ = ~0ull;                                     // the version mine_ was copied at
  std::atomic<uint64_t> movedByRanks_{0}, movedByThread_{0};  // passes that moved something, per side
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<ProxyTask>> tasks_;
  std::atomic<uint64_t> version_{0};  // bumped by add(): the thread re-reads the list
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> drainAsked_{0}, drainDone_{0};  // drain() requests, and the last one seen quiet
  std::atomic<bool> sleeping_{false};
  std::atomic<int> awakeHolds_{0};
  std::atomic<uint64_t> kernelLaunches_{0};  // a change restarts the thread's idle backoff
  std::atomic<ProfilerPlugin*> profiler_{nullptr};
  std::atomic<uint64_t> appended_{0};  // partsAppended's sum
  bool severed_ = false;               // the proxy thread's: connections ended after the communicator failed
  int wakeFd_ = -1;                    // eventfd: kick(), drain() and stop() write it
  std::thread thread_;
};

}  // namespace baton

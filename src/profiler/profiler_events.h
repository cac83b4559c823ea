// Where baton emits NCCL's profiler events, and with which parents (NCCL 2.28.9's event tree, its
// ext-profiler/README.md). Lesson 13 (docs/lessons/13-profiling.md).
//
//   GroupApi       the calling thread's outermost group: from its first operation call to the end of
//                  ncclGroupEnd; states GroupStartApiStop (the first call) and GroupEndApiStart
//     CollApi      one collective call (ncclAllReduce, ...); P2pApi: one ncclSend / ncclRecv. Inside
//                  a group the call itself; alone, the call with its implicit group's run
//     KernelLaunch handing a launch's parts to the channel workers (NCCL: cudaLaunchKernel)
//   Group          one communicator's launch of a group's operations, until its last part ends
//     Coll / P2p   one operation as launched (parentObj: its CollApi / P2pApi; coll.parentGroup and
//                  p2p.parentGroup: the Group), until its last channel part ends
//       KernelCh   one channel's part of it, on the worker that runs it (stopped with the state
//                  KernelChStop carrying the end time, as NCCL's kernel timestamps)
//       ProxyOp    a ring or tree part's steps on one of its channel's NET connections, send or
//                  receive, from the part's start until the proxy has sent its last step (a
//                  send) or the part has ended (a receive: proxy_op_watch.h)
//         ProxyStep  one of those steps. A send: from the proxy posting it to the network until the
//                    network took it, state SendWait with transSize. A receive: from its arrival to
//                    its delivery into the ranks' FIFO, state RecvWait with transSize
//   ProxyCtrl      no parent: the proxy thread's own life, each an event of one state (Idle when a
//                  pass moved nothing after one that did, Active the reverse; Append / AppendEnd
//                  when it sees new launches, with their count) or of two (Sleep .. Wakeup around
//                  its poll())
// Times are CLOCK_MONOTONIC nanoseconds (kernelCh.pTimer); a plugin takes its own at each call.
// With no plugin, every hook is one test of a null pointer, and the calling thread's one-operation
// fast paths (runCollectiveNow) are kept; with one that asks for events, operations take the
// general path so every event above has a place to happen.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "profiler/profiler_plugin.h"
#include "proxy_op_watch.h"

struct ncclComm;

namespace baton {

struct Task;

// ---- API events (the calling thread's) -------------------------------------------------------
// An operation call is queued for `comm` (group.cc's groupAddTask): opens the thread's GroupApi
// if none is open, and the call's CollApi / P2pApi, whose handles go into *t.
void profileApiCall(ncclComm* comm, Task* t, int groupDepth);
// The entry point returns (api/submit.h): its CollApi / P2pApi events stop.
void profileApiCallsEnd();
// The outermost ncclGroupEnd begins, and ends: GroupEndApiStart, then the GroupApi stops.
void profileGroupEndStart();
void profileGroupEnd();

// ---- Proxy thread events (ProxyCtrl) ---------------------------------------------------------
// One event holding one state: Idle, Active, or Append then AppendEnd with `appended` launches.
void profileProxyCtrl(ProfilerPlugin* p, ncclProfilerEventState_t state, int appended = 0);
// Sleep: returns the open event (or nullptr); wake records Wakeup and stops it.
void* profileProxySleep(ProfilerPlugin* p);
void profileProxyWake(ProfilerPlugin* p, void* sleep);

// ---- Launch events (one communicator's launch of a group's operations) -----------------------
// What one part opened (partStart) and closes (partEnd).
struct PartEvents {
  std::vector<void*> kernelCh;
  std::vector<std::pair<std::shared_ptr<ProxyOpWatch>, const uint64_t*>> watches;  // and the connector's step counter
};

class LaunchProfile : public std::enable_shared_from_this<LaunchProfile> {
 public:
  // nullptr when `comm` has no profiler that wants launch events; else the Group event is open.
  static std::shared_ptr<LaunchProfile> begin(ncclComm* comm);
  ~LaunchProfile();

  // Which connectors an operation's parts run over (ProxyOp events on those that are NET).
  enum ProxyConns { kNoProxyConns, kRingConns, kTreeConns };
  // Adds one operation with the number of parts it will run; returns its index (for the parts).
  int addColl(const Task& t, uint64_t seq, const char* algo, const char* proto, int nChannels, int parts,
              ProxyConns conns);
  int addP2p(const Task& t);
  // The hand-off to the channel workers (KernelLaunch, under the tasks' GroupApi).
  void launchStart(void* groupApi);
  void launchEnd();

  // One part, on `channel`, of the operations [first, first + n): a KernelCh each, and a ProxyOp
  // per NET connection a ring part uses, opened by partStart and closed by partEnd (the ProxyOps
  // by the proxy, once their last step is done). An operation closes after its last part and
  // ProxyOp, and the Group after the launch's last operation.
  void partStart(int first, int n, int channel, PartEvents* ev);
  void partEnd(int first, int n, PartEvents* ev);
  // A ProxyOp of operation `op` finished (NetOpWatch, on the proxy's or the rank's thread).
  void proxyOpDone(int op) { opPartDone(ops_[op]); }
  ProfilerPlugin* plugin() const { return prof_; }
  // Closes what no part will close (a launch that queued no part).
  void finishIfIdle();

 private:
  struct Op {
    void* handle = nullptr;
    std::atomic<int> partsLeft{0};
    ProxyConns conns = kNoProxyConns;
  };
  LaunchProfile(ncclComm* comm, ProfilerPlugin* p) : comm_(comm), prof_(p) {}
  void opPartDone(Op& op);
  ncclComm* comm_;
  ProfilerPlugin* prof_;
  void* group_ = nullptr;
  void* launch_ = nullptr;
  std::deque<Op> ops_;
  std::atomic<int> opsLeft_{0};
  std::atomic<bool> groupStopped_{false};
};

}  // namespace baton

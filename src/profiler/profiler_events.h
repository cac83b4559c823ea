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
// Times are CLOCK_MONOTONIC nanoseconds (kernelCh.pTimer); a plugin takes its own at each call.
// With no plugin, every hook is one test of a null pointer, and the calling thread's one-operation
// fast paths (runCollectiveNow) are kept; with one, operations take the general path so every
// event above has a place to happen.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "profiler/profiler_plugin.h"

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

// ---- Launch events (one communicator's launch of a group's operations) -----------------------
class LaunchProfile {
 public:
  // nullptr when `comm` has no profiler that wants launch events; else the Group event is open.
  static std::shared_ptr<LaunchProfile> begin(ncclComm* comm);
  ~LaunchProfile();

  // Adds one operation with the number of parts it will run; returns its index (for the parts).
  int addColl(const Task& t, uint64_t seq, const char* algo, const char* proto, int nChannels, int parts);
  int addP2p(const Task& t);
  // The hand-off to the channel workers (KernelLaunch, under the tasks' GroupApi).
  void launchStart(void* groupApi);
  void launchEnd();

  // One part, on `channel`, of the operations [first, first + n): a KernelCh each, opened by
  // partStart (handles in *open) and closed by partEnd, which also closes each operation whose last
  // part this was, and the Group after the launch's last part.
  void partStart(int first, int n, int channel, std::vector<void*>* open);
  void partEnd(int first, int n, std::vector<void*>* open);
  // Closes what no part will close (a launch that queued no part).
  void finishIfIdle();

 private:
  struct Op {
    void* handle = nullptr;
    std::atomic<int> partsLeft{0};
  };
  explicit LaunchProfile(ProfilerPlugin* p) : prof_(p) {}
  void opPartDone(Op& op);
  ProfilerPlugin* prof_;
  void* group_ = nullptr;
  void* launch_ = nullptr;
  std::deque<Op> ops_;
  std::atomic<int> opsLeft_{0};
  std::atomic<bool> groupStopped_{false};
};

}  // namespace baton

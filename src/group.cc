// ncclGroupStart/End's machinery (group.h): the calling thread's queued tasks, deferred inits, and
// handing every communicator's tasks to the planner at the outermost end.
#include "group.h"

#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "completion.h"
#include "enqueue.h"
#include "misc/debug.h"
#include "profiler/profiler_events.h"

namespace baton {
namespace {

struct InitJob {
  ncclComm* comm;
  std::function<ncclResult_t()> job;
  bool init = true;  // a communicator's init (its outcome is the comm's state); else a collective call (windows)
};

struct GroupState {
  ncclResult_t error = ncclSuccess;
  std::vector<InitJob> initJobs;
  std::vector<ncclComm*> comms;  // in first-use order
  std::vector<std::vector<Task>> tasks;
};

thread_local GroupState tGroup;
// The nesting depth apart from the state: a plain int in the static TLS block is one load on every
// call's latency path, where the state (vectors, so constructed on first use) goes through a guard.
namespace {
thread_local int tGroupDepth __attribute__((tls_model("initial-exec"))) = 0;
}  // namespace

void resetGroup() {
  tGroup.error = ncclSuccess;
  tGroup.initJobs.clear();
  tGroup.comms.clear();
  tGroup.tasks.clear();
}

}  // namespace

bool inGroup() { return tGroupDepth > 0; }

ncclResult_t groupStart() {
  ++tGroupDepth;
  return ncclSuccess;
}

void groupAddTask(ncclComm* comm, const Task& task) {
  std::vector<Task>* queue = nullptr;
  for (size_t i = 0; i < tGroup.comms.size() && !queue; ++i)
    if (tGroup.comms[i] == comm) queue = &tGroup.tasks[i];
  if (!queue) {
    tGroup.comms.push_back(comm);
    queue = &tGroup.tasks.emplace_back();
  }
  queue->push_back(task);
  if (comm->profiler) profileApiCall(comm, &queue->back(), tGroupDepth);
}

void groupAddInitJob(ncclComm* comm, std::function<ncclResult_t()> job) {
  tGroup.initJobs.push_back({comm, std::move(job), true});
}

void groupAddCollectiveCall(ncclComm* comm, std::function<ncclResult_t()> job) {
  tGroup.initJobs.push_back({comm, std::move(job), false});
}

ncclResult_t groupRecordError(ncclResult_t err) {
  if (inGroup() && tGroup.error == ncclSuccess) tGroup.error = err;
  return err;
}

ncclResult_t groupEnd() {
  if (tGroupDepth == 0)
    return batonError(ncclInvalidUsage, "ncclGroupEnd: not inside a group (ncclGroupStart was not called)");
  if (--tGroupDepth > 0) return ncclSuccess;
  profileGroupEndStart();
  struct ApiEnd {  // the thread's GroupApi event ends with the outermost ncclGroupEnd, however it returns
    ~ApiEnd() { profileGroupEnd(); }
  } apiEnd;
  if (tGroup.error != ncclSuccess) {
    ncclResult_t err = tGroup.error;
    resetGroup();
    return err;
  }
  std::vector<InitJob> jobs = std::move(tGroup.initJobs);
  std::vector<ncclComm*> comms = std::move(tGroup.comms);
  std::vector<std::vector<Task>> tasks = std::move(tGroup.tasks);
  resetGroup();

  ncclResult_t result = ncclSuccess;
  bool inProgress = false;
  // Init jobs of one group rendezvous with each other, so they must run at the same time.
  if (!jobs.empty()) {
    std::vector<ncclResult_t> res(jobs.size(), ncclSuccess);
    std::vector<std::thread> threads;
    // A communicator's collective calls (window registrations) run on one thread, in call order, as
    // its peers' do: two of them at once would pair one rank's first call with a peer's second.
    std::map<ncclComm*, std::vector<size_t>> callsOf;
    for (size_t i = 0; i < jobs.size(); ++i)
      if (!jobs[i].init) callsOf[jobs[i].comm].push_back(i);
    for (auto& [comm, calls] : callsOf)
      threads.emplace_back([&, calls = calls] {
        for (size_t i : calls) res[i] = jobs[i].job();
      });
    for (size_t i = 0; i < jobs.size(); ++i) {
      if (!jobs[i].init) continue;
      if (!jobs[i].comm->blocking) {
        res[i] = runInitJob(jobs[i].comm, jobs[i].job);
        continue;
      }
      threads.emplace_back([&, i] { res[i] = runInitJob(jobs[i].comm, jobs[i].job); });
    }
    for (auto& t : threads) t.join();
    for (ncclResult_t r : res) {
      if (r == ncclInProgress) inProgress = true;
      else if (r != ncclSuccess && result == ncclSuccess) result = r;
    }
  }
  std::vector<std::shared_ptr<Completion>> waits;
  for (size_t i = 0; i < comms.size(); ++i) {
    std::shared_ptr<Completion> done;
    // One blocking communicator in the group: this thread has nothing else to drive, so it can be
    // channel 0's block itself instead of waking a worker and sleeping until it is done.
    const bool callerRuns = comms.size() == 1 && comms[i]->blocking;
    ncclResult_t r = launchTasks(comms[i], tasks[i], &done, callerRuns);
    if (r != ncclSuccess && result == ncclSuccess) result = r;
    if (!done) continue;
    if (comms[i]->blocking) waits.push_back(done);
    else inProgress = true;
  }
  for (auto& w : waits) {
    ncclResult_t r = w->wait();
    if (r != ncclSuccess && result == ncclSuccess) result = r;
  }
  if (result != ncclSuccess) return result;
  return inProgress ? ncclInProgress : ncclSuccess;
}

}  // namespace baton

// One rank of a fault-injection trial (tests/fault/fault_injection.sh), a process per rank:
//
//   fault_worker --victim V --fault kill|stop|exit-in-shrink --at S --delay-us D --count C
//                --stamp FILE [--second W] [--after 10] [--nonblocking 1]
//
// Every rank runs the six collectives in turn (AllReduce, AllGather, ReduceScatter, Broadcast,
// Reduce, a Send/Recv ring), each on exact integer data and each result checked element by
// element. At step S rank V starts a thread that, D microseconds later (so inside the collective
// or around it), writes the monotonic time to FILE and then SIGKILLs or SIGSTOPs its own process.
// The survivors must see an operation fail (never a wrong result), then follow lesson 10: revoke,
// agree on the failed ranks (batonCommGetFailedRanks, which must name exactly the faulty ranks),
// shrink, and run `after` more collectives exactly. With --fault exit-in-shrink rank W also leaves
// (exits without a word) between agreeing and shrinking: the survivors' shrink must fail or be
// cut short, and a second agreement and shrink must succeed.
//
// Output lines the script reads:
//   "rank R: failed at step S (<collective>) at T ns: <error>"   (T: CLOCK_MONOTONIC)
//   "rank R: WRONG ..."                                            (a success with a wrong result)
//   "rank R: recovered: N ranks, A collectives exact"
// With BATON_ATOMIC_COLLECTIVES=1 a failed AllReduce must also have restored its input. With
// --nonblocking 1 every communicator is non-blocking: calls return ncclInProgress and the failure
// arrives as the communicator's async error (ncclCommGetAsyncError).
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "baton/launch.h"
#include "baton/membership.h"
#include "nccl.h"

namespace {

uint64_t monoNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

// Element i of the rank with identity `who` (its first rank) at step s: small integers, exact in float.
float value(int who, size_t i, int s) { return float((who + 1) * 16 + int(i % 13) + s % 50); }

const char* kNames[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce", "SendRecv"};

// A non-blocking communicator's call returns ncclInProgress; its outcome, a failure included, is
// the communicator's async error (NCCL's semantics).
ncclResult_t finish(ncclComm_t comm, ncclResult_t res) {
  while (res == ncclInProgress)
    if (ncclCommGetAsyncError(comm, &res) != ncclSuccess) return ncclInvalidUsage;
  return res;
}

struct Job {
  ncclComm_t comm = nullptr;
  std::vector<int> ids;  // identity (first rank) of each rank of comm
  int rank = 0;          // this process's rank in comm
  size_t count = 0;
  std::vector<float> in, out;
  // --memory registered (lesson 09): the buffers are ncclMemAlloc memory registered with the
  // communicator (and again with the shrunk child), so the zero-copy paths run into the fault.
  float* regIn = nullptr;
  float* regOut = nullptr;
};

// ncclMemAlloc buffers for every step's largest input and output, registered with `comm`.
bool registerBuffers(Job& j, int n) {
  const size_t bytes = j.count * n * sizeof(float);
  void *a = j.regIn, *b = j.regOut, *h = nullptr;
  if (!a && (ncclMemAlloc(&a, bytes) != ncclSuccess || ncclMemAlloc(&b, bytes) != ncclSuccess)) return false;
  j.regIn = static_cast<float*>(a), j.regOut = static_cast<float*>(b);
  return ncclCommRegister(j.comm, a, bytes, &h) == ncclSuccess && ncclCommRegister(j.comm, b, bytes, &h) == ncclSuccess;
}

// One collective of step s; returns its result and sets *wrong when it succeeded with a wrong value.
ncclResult_t runStep(Job& j, int s, std::string* wrong) {
  const int n = (int)j.ids.size(), me = j.ids[j.rank], kind = s % 6, root = s % n;
  const size_t c = j.count;
  const size_t inCount = kind == 2 ? c * n : c, outCount = kind == 1 ? c * n : c;
  float* send = j.regIn;
  float* recv = j.regOut;
  if (!send) {
    j.in.resize(inCount);
    j.out.resize(outCount);
    send = j.in.data(), recv = j.out.data();
  }
  for (size_t i = 0; i < outCount; ++i) recv[i] = -1.0f;
  for (size_t i = 0; i < inCount; ++i) send[i] = value(me, i, s);
  const bool atomic = getenv("BATON_ATOMIC_COLLECTIVES") && atoi(getenv("BATON_ATOMIC_COLLECTIVES"));
  if (kind == 0 && atomic && s % 12 == 0) recv = send;  // in place: the rollback must restore it
  ncclResult_t res = ncclSuccess;
  switch (kind) {
    case 0: res = ncclAllReduce(send, recv, c, ncclFloat, ncclSum, j.comm, nullptr); break;
    case 1: res = ncclAllGather(send, recv, c, ncclFloat, j.comm, nullptr); break;
    case 2: res = ncclReduceScatter(send, recv, c, ncclFloat, ncclSum, j.comm, nullptr); break;
    case 3: res = ncclBroadcast(send, recv, c, ncclFloat, root, j.comm, nullptr); break;
    case 4: res = ncclReduce(send, recv, c, ncclFloat, ncclSum, root, j.comm, nullptr); break;
    default: {
      ncclGroupStart();
      ncclSend(send, c, ncclFloat, (j.rank + 1) % n, j.comm, nullptr);
      ncclRecv(recv, c, ncclFloat, (j.rank + n - 1) % n, j.comm, nullptr);
      res = ncclGroupEnd();
    }
  }
  res = finish(j.comm, res);
  if (res != ncclSuccess) {
    if (kind == 0 && atomic) {  // all-or-nothing: recvbuff holds this rank's input again
      for (size_t i = 0; i < c && wrong->empty(); ++i)
        if (recv[i] != value(me, i, s))
          *wrong = "AllReduce failed but element " + std::to_string(i) + " is " + std::to_string(recv[i]) +
                   ", not this rank's input " + std::to_string(value(me, i, s));
      if (wrong->empty())
        printf("rank %d: AllReduce rolled back, input restored%s\n", me, recv == send ? " (in place)" : "");
    }
    return res;
  }
  if (kind == 4 && j.rank != root) return res;
  for (size_t i = 0; i < outCount; ++i) {
    float want = 0;
    switch (kind) {
      case 0:
      case 4:
        for (int id : j.ids) want += value(id, i, s);
        break;
      case 1: want = value(j.ids[i / c], i % c, s); break;
      case 2:
        for (int id : j.ids) want += value(id, j.rank * c + i, s);
        break;
      case 3: want = value(j.ids[root], i, s); break;
      default: want = value(j.ids[(j.rank + n - 1) % n], i, s);
    }
    if (recv[i] != want) {
      *wrong = std::string(kNames[kind]) + " step " + std::to_string(s) + " element " + std::to_string(i) + ": " +
               std::to_string(recv[i]) + " != " + std::to_string(want);
      return res;
    }
  }
  return res;
}

}  // namespace

int main(int argc, char** argv) {
  int victim = -1, at = 5, delayUs = 0, after = 10, second = -1, nonBlocking = 0;
  bool registered = false;
  size_t count = 4096;
  std::string fault = "kill", stamp = "/dev/null";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--victim") victim = atoi(argv[i + 1]);
    else if (a == "--fault") fault = argv[i + 1];
    else if (a == "--at") at = atoi(argv[i + 1]);
    else if (a == "--delay-us") delayUs = atoi(argv[i + 1]);
    else if (a == "--count") count = strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--stamp") stamp = argv[i + 1];
    else if (a == "--second") second = atoi(argv[i + 1]);
    else if (a == "--after") after = atoi(argv[i + 1]);
    else if (a == "--nonblocking") nonBlocking = atoi(argv[i + 1]);
    else if (a == "--memory") registered = std::string(argv[i + 1]) == "registered";
  }
  printf("pid %d\n", (int)getpid());  // the script tells a killed rank's leftovers from a leak
  fflush(stdout);
  Job job;
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = nonBlocking ? 0 : 1;
  if (finish(job.comm, batonCommInitFromEnv(&job.comm, &cfg)) != ncclSuccess) {
    printf("init failed: %s\n", ncclGetLastError(nullptr));
    return 1;
  }
  int n = 0;
  ncclCommUserRank(job.comm, &job.rank);
  ncclCommCount(job.comm, &n);
  const int me = job.rank;
  for (int r = 0; r < n; ++r) job.ids.push_back(r);
  job.count = count;
  std::string wrong;
  int s = 0;
  ncclResult_t res = ncclSuccess;
  const char* failedIn = nullptr;
  // A victim killed at step 0 can die while a slower rank still registers; that rank's communicator
  // is then in error and refuses the registration. It is the trial's fault seen before step 0, so
  // it recovers like a failed step (a registration that fails without a fault still fails the
  // trial: the agreement would name no failed rank).
  if (registered && !registerBuffers(job, n)) res = ncclRemoteError, failedIn = "Registration";
  printf("rank %d: initialized\n", me);  // scripts that cut a link wait for every rank's line
  fflush(stdout);
  for (; res == ncclSuccess && s < 100000; ++s) {
    if (me == victim && s == at) {
      std::thread([&] {
        if (delayUs) usleep(delayUs);
        if (FILE* f = fopen(stamp.c_str(), "w")) fprintf(f, "%llu\n", (unsigned long long)monoNs()), fclose(f);
        kill(getpid(), fault == "stop" ? SIGSTOP : SIGKILL);
      }).detach();
    }
    wrong.clear();  // each step's own verdict, not an earlier one's
    res = runStep(job, s, &wrong);
    if (!wrong.empty()) printf("rank %d: WRONG %s\n", me, wrong.c_str()), fflush(stdout);
    if (res != ncclSuccess) break;
  }
  printf("rank %d: failed at step %d (%s) at %llu ns: %s\n", me, s, failedIn ? failedIn : kNames[s % 6],
         (unsigned long long)monoNs(), ncclGetLastError(job.comm));
  fflush(stdout);
  if (me == victim) return 3;  // a stopped victim that is let go again (it should not be)

  ncclComm_t parent = job.comm;
  ncclCommRevoke(parent, NCCL_REVOKE_DEFAULT);
  ncclComm_t child = nullptr;
  for (int attempt = 0; attempt < 3 && !child; ++attempt) {
    int failed[64], nFailed = 0;
    if (batonCommGetFailedRanks(parent, failed, 64, &nFailed) != ncclSuccess) {
      printf("rank %d: agreement failed: %s\n", me, ncclGetLastError(parent));
      return 1;
    }
    std::string list;
    for (int i = 0; i < nFailed; ++i) list += (i ? "," : "") + std::to_string(failed[i]);
    printf("rank %d: attempt %d: agreed failed ranks [%s]\n", me, attempt, list.c_str());
    fflush(stdout);
    if (me == second && fault == "exit-in-shrink") _exit(0);  // leaves without a word, mid-recovery
    const ncclResult_t shrunk = ncclCommShrink(parent, failed, nFailed, &child, &cfg, NCCL_SHRINK_ABORT);
    if (finish(child, shrunk) != ncclSuccess) {
      if (child) ncclCommAbort(child);
      printf("rank %d: shrink attempt %d failed: %s\n", me, attempt, ncclGetLastError(parent));
      child = nullptr;
      continue;
    }
    job.ids.clear();
    for (int r = 0; r < n; ++r) {
      bool out = false;
      for (int i = 0; i < nFailed; ++i) out |= failed[i] == r;
      if (!out) job.ids.push_back(r);
    }
  }
  if (!child) {
    printf("rank %d: no shrink succeeded\n", me);
    return 1;
  }
  job.comm = child;
  ncclCommUserRank(child, &job.rank);
  if (registered && !registerBuffers(job, n)) {
    printf("rank %d: registration on the shrunk communicator failed: %s\n", me, ncclGetLastError(child));
    return 1;
  }
  for (int k = 0; k < after; ++k) {
    wrong.clear();
    res = runStep(job, 1000 + k, &wrong);
    if (res != ncclSuccess || !wrong.empty()) {
      printf("rank %d: WRONG after shrink, collective %d: %s\n", me, k,
             wrong.empty() ? ncclGetLastError(child) : wrong.c_str());
      return 1;
    }
  }
  printf("rank %d: recovered: %zu ranks, %d collectives exact\n", me, job.ids.size(), after);
  ncclCommDestroy(child);
  ncclCommAbort(parent);
  return 0;
}

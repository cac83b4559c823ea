// One rank of a scripted hang (tests/fault/hang_scenarios.sh, lesson 14), a process per rank:
//
//   hang_worker --scenario NAME --culprit R --at S [--steps N] [--count C] [--tag T]
//
// Every rank runs N steps (8), step s being collective s % 4 of AllReduce, AllGather, Broadcast
// (root s % nranks) and ReduceScatter on C floats (100000: large enough for the ring), each result
// checked exactly. At step S the culprit rank R does the scenario's mistake:
//   clean        none (the doctor must find no fault)
//   skip         does not call step S's collective: it sleeps in "user code" until killed
//   order        calls step S+1's collective before step S's
//   count        step S's AllReduce with C - 1 elements
//   zero         step S's AllReduce with 0 elements (BATON_CHECK_MODE=debug only: without it, a no-op)
//   type         step S's AllReduce on bfloat16 (the same count: half the bytes)
//   redop        step S's AllReduce with ncclMax (the same bytes: it completes, with wrong results)
//   root         step S's Broadcast (S % 4 == 2) with root (S + 1) % nranks
//   stop         SIGSTOPs itself before step S (a rank stopped in a debugger, or swapped out)
//   group-order  steps S and S+1 inside one group, the culprit queueing them the other way round
//   cut          none, but N becomes unbounded: every rank prints "rank R: running" after step S and
//                goes on until the script cuts the link between two namespaced hosts
// A rank whose collective fails prints "rank R: step S failed: <error>", aborts its communicator
// (which dumps it, with BATON_DUMP_DIR set) and exits 1. A rank that completes every step dumps
// its communicator (batonCommDumpState, as a program might at the end of a run) and exits 0.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "baton/dump.h"
#include "baton/launch.h"
#include "nccl.h"

namespace {

struct Args {
  std::string scenario = "clean";
  int culprit = 0, at = 3, steps = 8;
  size_t count = 100000;
};

float value(int rank, size_t i, int s) { return float((rank + 1) * 8 + int(i % 11) + s % 7); }

// Queues step s's collective (the culprit's mistakes included); checks nothing.
ncclResult_t issue(const Args& a, int s, bool culprit, ncclComm_t comm, int rank, int n, std::vector<float>& in,
                   std::vector<float>& out) {
  const int kind = s % 4;
  size_t c = a.count;
  ncclDataType_t type = ncclFloat;
  ncclRedOp_t redop = ncclSum;
  int root = s % n;
  if (culprit && s == a.at) {
    if (a.scenario == "count") c -= 1;
    if (a.scenario == "zero") c = 0;
    if (a.scenario == "type") type = ncclBfloat16;
    if (a.scenario == "root") root = (s + 1) % n;
    if (a.scenario == "redop") redop = ncclMax;
  }
  in.assign(kind == 3 ? c * n : c, 0.0f);
  for (size_t i = 0; i < in.size(); ++i) in[i] = value(rank, i, s);
  out.assign(kind == 1 ? c * n : c, -1.0f);
  switch (kind) {
    case 0: return ncclAllReduce(in.data(), out.data(), c, type, redop, comm, nullptr);
    case 1: return ncclAllGather(in.data(), out.data(), c, type, comm, nullptr);
    case 2: return ncclBroadcast(in.data(), out.data(), c, type, root, comm, nullptr);
    default: return ncclReduceScatter(in.data(), out.data(), c, type, ncclSum, comm, nullptr);
  }
}

// Step s's result on this rank is exact (only AllReduce and AllGather are checked: enough to tell
// a clean run from a corrupt one).
bool exact(const Args& a, int s, int rank, int n, const std::vector<float>& out) {
  if (s % 4 == 0)
    for (size_t i = 0; i < a.count; ++i) {
      float want = 0;
      for (int r = 0; r < n; ++r) want += value(r, i, s);
      if (out[i] != want) return false;
    }
  if (s % 4 == 1)
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < a.count; ++i)
        if (out[r * a.count + i] != value(r, i, s)) return false;
  (void)rank;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--scenario") a.scenario = argv[i + 1];
    else if (k == "--culprit") a.culprit = atoi(argv[i + 1]);
    else if (k == "--at") a.at = atoi(argv[i + 1]);
    else if (k == "--steps") a.steps = atoi(argv[i + 1]);
    else if (k == "--count") a.count = strtoull(argv[i + 1], nullptr, 10);
    else if (k == "--tag") continue;  // the script's mark, to find its processes
    else {
      fprintf(stderr, "hang_worker: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);
  ncclComm_t comm = nullptr;
  if (batonCommInitFromEnv(&comm, nullptr) != ncclSuccess) {
    fprintf(stderr, "init failed: %s\n", ncclGetLastError(nullptr));
    return 2;
  }
  int rank = 0, n = 1;
  ncclCommUserRank(comm, &rank);
  ncclCommCount(comm, &n);
  const bool culprit = rank == a.culprit && a.scenario != "clean" && a.scenario != "cut";
  std::vector<float> in, out, in2, out2;
  const bool endless = a.scenario == "cut";
  for (int s = 0; endless || s < a.steps; ++s) {
    ncclResult_t res = ncclSuccess;
    if (endless && s == a.at) printf("rank %d: running\n", rank);
    if (culprit && s == a.at && a.scenario == "skip") {
      printf("rank %d: skips step %d and stays in user code\n", rank, s);
      for (;;) pause();  // the dump signal is served by baton's own thread; the script kills us
    }
    if (culprit && s == a.at && a.scenario == "stop") {
      printf("rank %d: stops itself before step %d\n", rank, s);
      raise(SIGSTOP);
    }
    const bool pair = s == a.at && (a.scenario == "order" || a.scenario == "group-order");
    if (pair) {  // steps s and s+1 together; the culprit swaps them
      const bool group = a.scenario == "group-order";
      if (group) ncclGroupStart();
      const int first = culprit ? s + 1 : s, second = culprit ? s : s + 1;
      res = issue(a, first, culprit, comm, rank, n, first == s ? in : in2, first == s ? out : out2);
      if (res == ncclSuccess || group) {
        const ncclResult_t r2 =
            issue(a, second, culprit, comm, rank, n, second == s ? in : in2, second == s ? out : out2);
        if (res == ncclSuccess) res = r2;
      }
      if (group) {
        const ncclResult_t r3 = ncclGroupEnd();
        if (res == ncclSuccess) res = r3;
      }
    } else {
      res = issue(a, s, culprit, comm, rank, n, in, out);
    }
    if (res != ncclSuccess) {
      printf("rank %d: step %d failed: %s\n", rank, s, ncclGetLastError(comm));
      ncclCommAbort(comm);
      return 1;
    }
    if (!culprit && !exact(a, s, rank, n, out)) printf("rank %d: step %d WRONG result\n", rank, s);
    if (pair) ++s;
  }
  char path[512];
  if (batonCommDumpState(comm, nullptr, path, sizeof path) != ncclSuccess)
    printf("rank %d: dump failed: %s\n", rank, ncclGetLastError(comm));
  printf("rank %d: completed %d steps\n", rank, a.steps);
  ncclCommDestroy(comm);
  return 0;
}

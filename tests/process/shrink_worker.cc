// One rank of a failure-and-shrink run, started as a process per rank (tests/net/multihost_test.sh):
//
//   shrink_worker --victim V --die-after S [--steps N]
//
// Every rank allreduces exact integer data step after step. Rank V kills itself (SIGKILL) after
// step S, as a crashed process would. The others see their operation fail (the watchdog sees V's
// connection close and revokes the communicator on every survivor), then follow the recipe of
// lesson 10: ncclCommRevoke, batonCommGetFailedRanks (the survivors agree on who failed; it must
// be V), ncclCommShrink excluding that list with NCCL_SHRINK_ABORT, and N more steps on the
// child, each checked exactly. Prints "rank R: ... exact" and exits 0 on success.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "baton/launch.h"
#include "baton/membership.h"
#include "nccl.h"

namespace {

// Element i of parent rank r's input at step s: small integers, exact in float.
float value(int r, size_t i, int s) { return float((r + 1) * 16 + int(i % 13) + s); }

// One allreduce over `members` (parent ranks, in the communicator's order); false on error.
bool step(ncclComm_t comm, int me, const std::vector<int>& members, int s, std::vector<float>& buf, std::string* err) {
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = value(me, i, s);
  const ncclResult_t res = ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat, ncclSum, comm, nullptr);
  if (res != ncclSuccess) {
    *err = std::string(ncclGetErrorString(res)) + ": " + ncclGetLastError(comm);
    return false;
  }
  for (size_t i = 0; i < buf.size(); i += 997) {
    float want = 0;
    for (int r : members) want += value(r, i, s);
    if (buf[i] != want) {
      *err = "wrong result at element " + std::to_string(i) + ": " + std::to_string(buf[i]) +
             " != " + std::to_string(want);
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int victim = -1, dieAfter = 3, steps = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--victim")) victim = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--die-after")) dieAfter = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
  }
  ncclComm_t comm = nullptr;
  if (batonCommInitFromEnv(&comm, nullptr) != ncclSuccess) {
    fprintf(stderr, "init failed: %s\n", ncclGetLastError(nullptr));
    return 1;
  }
  int me = 0, n = 0;
  ncclCommUserRank(comm, &me);
  ncclCommCount(comm, &n);
  std::vector<int> members;
  for (int r = 0; r < n; ++r) members.push_back(r);
  std::vector<float> buf(1 << 20);
  std::string err;
  int s = 0;
  for (; s < 1000; ++s) {
    if (me == victim && s == dieAfter) kill(getpid(), SIGKILL);
    if (!step(comm, me, members, s, buf, &err)) break;
  }
  if (s == 1000) {
    printf("rank %d: no failure seen\n", me);
    return 1;
  }
  const auto t0 = std::chrono::steady_clock::now();
  printf("rank %d: step %d failed (%s)\n", me, s, err.c_str());
  if (ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT) != ncclSuccess) {
    printf("rank %d: revoke failed: %s\n", me, ncclGetLastError(comm));
    return 1;
  }
  // Who failed: the survivors agree (the watchdog saw it; batonCommGetFailedRanks returns the
  // same list on every survivor), and it must be exactly the victim.
  int exclude[8] = {}, nFailed = 0;
  if (batonCommGetFailedRanks(comm, exclude, 8, &nFailed) != ncclSuccess) {
    printf("rank %d: agreement failed: %s\n", me, ncclGetLastError(comm));
    return 1;
  }
  printf("rank %d: agreed failed ranks: %s\n", me, nFailed == 1 ? std::to_string(exclude[0]).c_str() : "(not one)");
  if (nFailed != 1 || exclude[0] != victim) return 1;
  ncclComm_t child = nullptr;
  if (ncclCommShrink(comm, exclude, nFailed, &child, nullptr, NCCL_SHRINK_ABORT) != ncclSuccess) {
    printf("rank %d: shrink failed: %s\n", me, ncclGetLastError(comm));
    return 1;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  int childRank = -1, childN = 0;
  ncclCommUserRank(child, &childRank);
  ncclCommCount(child, &childN);
  std::vector<int> survivors;
  for (int r : members)
    if (r != victim) survivors.push_back(r);
  for (int k = 0; k < steps; ++k) {
    // Survivors may have failed at different steps (a rank's step completes once its data is
    // staged), so they restart from a step number they agree on without talking: 1000 + k.
    if (!step(child, me, survivors, 1000 + k, buf, &err)) {
      printf("rank %d: step %d after shrink failed: %s\n", me, k, err.c_str());
      return 1;
    }
  }
  printf("rank %d: shrank from %d to %d ranks (now rank %d) in %.2f s; %d steps after shrink exact\n", me, n, childN,
         childRank, secs, steps);
  ncclCommDestroy(child);
  ncclCommAbort(comm);
  return 0;
}

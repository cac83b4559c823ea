/* Lesson 14: a job that gets stuck, on purpose. Each process runs eight collectives (AllReduce and
 * AllGather in turn, 65536 floats); one rank makes one mistake at step 5:
 *
 *   stuck_job none          no mistake: every rank dumps its flight recorder at the end
 *   stuck_job skip  RANK    RANK skips step 5 and stays in its own code (the others wait for it)
 *   stuck_job count RANK    RANK calls step 5 with one element fewer
 *   stuck_job order RANK    RANK calls step 6's collective before step 5's
 *   stuck_job stop  RANK    RANK stops itself (SIGSTOP) before step 5, as a debugger would
 *
 * Run it under baton-run with dumps on, then ask baton-doctor:
 *   BATON_WAIT_TIMEOUT=3 BATON_DUMP_DIR=/tmp/stuck BATON_DUMP_SIGNAL=SIGUSR1 \
 *     build/bin/baton-run -n 4 build/bin/examples/14-debugging-hangs/stuck_job skip 2
 *   build/bin/baton-doctor /tmp/stuck
 * docs/lessons/14-debugging-hangs.md shows what each prints. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "baton/dump.h"
#include "baton/launch.h"
#include "nccl.h"

#define COUNT 65536
#define STEPS 8
#define AT    5

static float in[COUNT], out[COUNT * 16];

static ncclResult_t step(ncclComm_t comm, int s, size_t count) {
  if (s % 2 == 0) return ncclAllReduce(in, out, count, ncclFloat, ncclSum, comm, NULL);
  return ncclAllGather(in, out, count, ncclFloat, comm, NULL);
}

int main(int argc, char** argv) {
  const char* mistake = argc > 1 ? argv[1] : "none";
  const int culprit = argc > 2 ? atoi(argv[2]) : 1;
  ncclComm_t comm;
  if (batonCommInitFromEnv(&comm, NULL) != ncclSuccess) {
    fprintf(stderr, "init: %s\n", ncclGetLastError(NULL));
    return 2;
  }
  int rank, n;
  ncclCommUserRank(comm, &rank);
  ncclCommCount(comm, &n);
  if (n > 16) return 2;
  for (int i = 0; i < COUNT; ++i) in[i] = (float)(rank + i % 7);
  const int mine = rank == culprit && strcmp(mistake, "none") != 0;
  for (int s = 0; s < STEPS; ++s) {
    ncclResult_t res;
    if (mine && s == AT && strcmp(mistake, "skip") == 0) {
      printf("rank %d: skipping step %d\n", rank, s);
      fflush(stdout);
      for (;;) pause(); /* busy with something else, forever */
    }
    if (mine && s == AT && strcmp(mistake, "stop") == 0) raise(SIGSTOP);
    if (mine && s == AT && strcmp(mistake, "order") == 0) {
      res = step(comm, s + 1, COUNT); /* the later collective first */
      if (res == ncclSuccess) res = step(comm, s, COUNT);
      ++s;
    } else {
      res = step(comm, s, mine && s == AT && strcmp(mistake, "count") == 0 ? COUNT - 1 : COUNT);
    }
    if (res != ncclSuccess) {
      printf("rank %d: step %d failed: %s\n", rank, s, ncclGetLastError(comm));
      ncclCommAbort(comm); /* with BATON_DUMP_DIR set, this rank's dump is written here */
      return 1;
    }
  }
  char path[512];
  if (batonCommDumpState(comm, NULL, path, sizeof path) == ncclSuccess) printf("rank %d: dumped %s\n", rank, path);
  printf("rank %d: all %d steps done\n", rank, STEPS);
  ncclCommDestroy(comm);
  return 0;
}

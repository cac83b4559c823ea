/* Lesson 10: an elastic training-like loop. Each step every rank contributes a "gradient" of ones,
 * AllReduces it and adds the sum to its "weights", so after a step w[i] grows by the number of
 * ranks that took part. Ranks may die (the launcher kills one) and a new process may join:
 *
 *   detect    the step's AllReduce fails (baton's watchdog saw the death and revoked the
 *             communicator on every survivor)
 *   agree     batonCommGetFailedRanks: every survivor gets the same list
 *   rebuild   ncclCommShrink(..., NCCL_SHRINK_ABORT) without them
 *   restore   BATON_ATOMIC_COLLECTIVES=1: the failed AllReduce left every survivor's buffer holding
 *             its own gradient again, and no survivor added a partial sum to its weights
 *   retry     the same step on the smaller communicator
 *   grow      at --grow-at, the current rank 0 asks for an id (ncclCommGetUniqueId), hands it to
 *             the waiting process through a file, and every rank calls ncclCommGrow; the newcomer
 *             gets the weights by a broadcast from rank 0
 *
 * Every rank tracks the weights it expects (the sum of the world sizes of the steps it saw) and
 * checks them at the end. Run it with examples/10-fault-tolerance/elastic.sh.
 *
 *   elastic --steps N --step-ms MS [--grow-at S --join-file F]   (ranks from the launcher)
 *   elastic --join F                                            (the newcomer)             */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common.h"
#include "baton/launch.h"
#include "baton/membership.h"

#define COUNT (1 << 16)

/* What the newcomer needs, written by the current rank 0 (rename makes it appear whole). */
typedef struct {
  ncclUniqueId id;
  int nRanks, rank, step;
  double expected;
} JoinTicket;

static float w[COUNT], g[COUNT];

static void sleepMs(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static void fillGradient(void) {
  for (int i = 0; i < COUNT; ++i) g[i] = 1.0f;
}

/* Survivors of a failed step: agree, shrink, drop the old communicator. Exits if this rank was
 * itself declared failed. */
static ncclComm_t recover(ncclComm_t comm, int me) {
  double t0 = nowSec();
  ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT);
  int failed[64], nFailed = 0;
  if (batonCommGetFailedRanks(comm, failed, 64, &nFailed) != ncclSuccess) {
    printf("rank %d: cannot go on: %s\n", me, ncclGetLastError(comm));
    exit(2);
  }
  ncclComm_t child = NULL;
  CHECK(ncclCommShrink(comm, failed, nFailed, &child, NULL, NCCL_SHRINK_ABORT));
  ncclCommAbort(comm);
  int n = 0, r = 0;
  ncclCommCount(child, &n);
  ncclCommUserRank(child, &r);
  printf("rank %d: ranks [", me);
  for (int i = 0; i < nFailed; ++i) printf("%s%d", i ? "," : "", failed[i]);
  printf("] failed; survivors agreed and shrank to %d ranks (now rank %d) in %.2f s\n", n, r, nowSec() - t0);
  return child;
}

static ncclComm_t grow(ncclComm_t comm, const char* joinFile, int step, double expected) {
  int n = 0, r = 0;
  ncclCommCount(comm, &n);
  ncclCommUserRank(comm, &r);
  ncclUniqueId id;
  if (r == 0) {
    CHECK(ncclCommGetUniqueId(comm, &id));
    JoinTicket t = {id, n + 1, n, step, expected};
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", joinFile);
    FILE* f = fopen(tmp, "wb");
    if (!f || fwrite(&t, sizeof t, 1, f) != 1 || fclose(f) != 0 || rename(tmp, joinFile) != 0) {
      perror(joinFile);
      exit(1);
    }
  }
  ncclComm_t grown = NULL;
  CHECK(ncclCommGrow(comm, n + 1, r == 0 ? &id : NULL, -1, &grown, NULL));
  CHECK(ncclBroadcast(w, w, COUNT, ncclFloat, 0, grown, NULL)); /* the newcomer's weights */
  ncclCommDestroy(comm);
  if (r == 0) printf("step %d: admitted a new rank: %d ranks\n", step, n + 1);
  return grown;
}

int main(int argc, char** argv) {
  int steps = 20, stepMs = 100, growAt = -1;
  const char *joinFile = NULL, *join = NULL;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--step-ms")) stepMs = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--grow-at")) growAt = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--join-file")) joinFile = argv[i + 1];
    else if (!strcmp(argv[i], "--join")) join = argv[i + 1];
  }
  ncclComm_t comm = NULL;
  int me = 0, step = 0;
  double expected = 0; /* w[i] after the steps this rank saw */
  if (join) {
    JoinTicket t;
    FILE* f = NULL;
    for (double t0 = nowSec(); !(f = fopen(join, "rb")); sleepMs(20))
      if (nowSec() - t0 > 120) {
        fprintf(stderr, "no ticket in %s\n", join);
        return 1;
      }
    if (fread(&t, sizeof t, 1, f) != 1) {
      fprintf(stderr, "short ticket\n");
      return 1;
    }
    fclose(f);
    CHECK(ncclCommGrow(NULL, t.nRanks, &t.id, t.rank, &comm, NULL));
    CHECK(ncclBroadcast(w, w, COUNT, ncclFloat, 0, comm, NULL));
    me = 100 + t.rank; /* a name for its lines: not one of the launcher's ranks */
    step = t.step, expected = t.expected;
    printf("rank %d: joined as rank %d of %d at step %d with w[0] = %g\n", me, t.rank, t.nRanks, step, w[0]);
  } else {
    CHECK(batonCommInitFromEnv(&comm, NULL));
    ncclCommUserRank(comm, &me);
  }
  int grown = join != NULL;
  fillGradient();
  while (step < steps) {
    int n = 0, r = 0;
    ncclCommCount(comm, &n);
    ncclCommUserRank(comm, &r);
    ncclResult_t res = ncclAllReduce(g, g, COUNT, ncclFloat, ncclSum, comm, NULL);
    if (res != ncclSuccess) {
      /* All or nothing: g holds this rank's own gradient again, w is untouched. */
      int restored = 1;
      for (int i = 0; i < COUNT; ++i) restored &= g[i] == 1.0f;
      printf("rank %d: step %d failed (%s); gradient %s\n", me, step, ncclGetErrorString(res),
             restored ? "restored" : "NOT restored");
      if (!restored) return 1;
      comm = recover(comm, me);
      continue; /* retry the same step */
    }
    for (int i = 0; i < COUNT; ++i) w[i] += g[i];
    expected += n;
    if (r == 0) printf("step %d: %d ranks, w[0] = %g\n", step, n, w[0]);
    fflush(stdout);
    fillGradient();
    ++step;
    if (step == growAt && !grown && joinFile) {
      comm = grow(comm, joinFile, step, expected);
      grown = 1;
    }
    sleepMs(stepMs);
  }
  int ok = 1;
  for (int i = 0; i < COUNT; ++i) ok &= w[i] == (float)expected;
  printf("rank %d: done after %d steps: w[0] = %g, expected %g: %s\n", me, steps, w[0], expected, ok ? "OK" : "WRONG");
  ncclCommDestroy(comm);
  return ok ? 0 : 1;
}

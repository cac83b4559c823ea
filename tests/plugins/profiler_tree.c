/* A profiler plugin for the profiler host's tests (tests/tools/profiler_plugin_test.sh): a third
 * party's plugin in C, using only the interface header. It keeps every event it is given, with its
 * parent, its times (CLOCK_MONOTONIC at startEvent and stopEvent), the states recorded on it and
 * its descriptor, and at finalize writes one line per event of that communicator to
 *   $BATON_TEST_PROFILE_DIR/<commId in hex>.<rank>.<pid>
 * (event ids are the process's: a thread's GroupApi lives in the first communicator it calls)
 * which tests/tools/profiler_tree_check.py reads. NCCL_PROFILE_EVENT_MASK (as NCCL's example
 * plugin reads it) sets the mask; all types by default. Built as several libraries:
 *   (default) ncclProfiler_v5        -DPROF_V4: ncclProfiler_v4 only
 *   -DPROF_FAIL_INIT: init fails     -DPROF_FAIL_START: the 5th startEvent fails
 *   -DPROF_NULL: every handle NULL   -DPROF_SLOW: each startEvent sleeps 200 us */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "baton/plugin_profiler.h"

#define MAX_EVENTS (1 << 20)

struct ctx {
  uint64_t commId;
  int rank;
};

struct event {
  struct ctx* ctx;
  uint64_t type;
  long parent, group; /* event ids: 0 none, -1 not one of ours */
  int rank;
  uint64_t start, stop, pTimerStart, pTimerStop;
  unsigned states; /* bit per state recorded (state numbers < 32) */
  const char* func;
  const char* algo;
  const char* proto;
  int nChannels, channel, depth, peer, isSend;
  uint64_t seq;
  size_t count;
};

static struct event events[MAX_EVENTS];
static long nEvents; /* claimed with an atomic add: NCCL calls a plugin from several threads */
static long nStarts;

static uint64_t now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static long idOf(void* handle) {
  if (!handle) return 0;
  struct event* e = (struct event*)handle;
  if (e < events || e >= events + MAX_EVENTS) return -1;
  return (long)(e - events) + 1;
}

static ncclResult_t init(void** context, uint64_t commId, int* mask, const char* commName, int nNodes, int nRanks,
                         int rank, ncclDebugLogger_t log) {
  (void)commName;
#ifdef PROF_FAIL_INIT
  (void)context, (void)commId, (void)mask, (void)nNodes, (void)nRanks, (void)rank, (void)log;
  return ncclInternalError;
#endif
  struct ctx* c = calloc(1, sizeof *c);
  if (!c) return ncclSystemError;
  c->commId = commId;
  c->rank = rank;
  *context = c;
  const char* m = getenv("NCCL_PROFILE_EVENT_MASK");
  *mask = m ? (int)strtol(m, NULL, 0) : 0xfff;
  log(NCCL_LOG_INFO, NCCL_INIT, __FILE__, __LINE__, "tree profiler: init rank %d of %d, %d nodes, mask 0x%x", rank,
      nRanks, nNodes, *mask);
  return ncclSuccess;
}

static struct event* newEvent(struct ctx* c, uint64_t type, void* parent, int rank) {
  long i = __atomic_fetch_add(&nEvents, 1, __ATOMIC_RELAXED);
  if (i >= MAX_EVENTS) return NULL;
  struct event* e = &events[i];
  e->ctx = c, e->type = type, e->parent = idOf(parent), e->rank = rank;
  e->channel = -1, e->peer = -1;
  e->start = now();
  return e;
}

#ifdef PROF_V4
typedef ncclProfilerEventDescr_v4_t descr_t;
#else
typedef ncclProfilerEventDescr_v5_t descr_t;
#endif

static ncclResult_t startEvent(void* context, void** handle, descr_t* d) {
  *handle = NULL;
  long n = __atomic_add_fetch(&nStarts, 1, __ATOMIC_RELAXED);
#ifdef PROF_FAIL_START
  if (n == 5) return ncclInternalError;
#endif
  (void)n;
#ifdef PROF_SLOW
  usleep(200);
#endif
  struct event* e = newEvent((struct ctx*)context, d->type, d->parentObj, d->rank);
  if (!e) return ncclSuccess;
  switch (d->type) {
#ifndef PROF_V4
    case ncclProfileGroupApi: e->depth = d->groupApi.groupDepth; break;
    case ncclProfileCollApi: e->func = d->collApi.func, e->count = d->collApi.count; break;
    case ncclProfileP2pApi: e->func = d->p2pApi.func, e->count = d->p2pApi.count; break;
#endif
    case ncclProfileColl:
      e->func = d->coll.func, e->algo = d->coll.algo, e->proto = d->coll.proto;
      e->nChannels = d->coll.nChannels, e->seq = d->coll.seqNumber, e->count = d->coll.count;
#ifndef PROF_V4
      e->group = idOf(d->coll.parentGroup);
#endif
      break;
    case ncclProfileP2p:
      e->func = d->p2p.func, e->nChannels = d->p2p.nChannels, e->count = d->p2p.count, e->peer = d->p2p.peer;
#ifndef PROF_V4
      e->group = idOf(d->p2p.parentGroup);
#endif
      break;
    case ncclProfileKernelCh: e->channel = d->kernelCh.channelId, e->pTimerStart = d->kernelCh.pTimer; break;
    case ncclProfileProxyOp:
      e->channel = d->proxyOp.channelId, e->peer = d->proxyOp.peer, e->isSend = d->proxyOp.isSend;
      break;
    case ncclProfileProxyStep: e->seq = (uint64_t)d->proxyStep.step; break;
    case ncclProfileNetPlugin: /* a socket plugin's request: its length; seq says whether the id named one */
      e->seq = (uint64_t)((d->netPlugin.id & NCCL_PROFILER_NET_TYPE_MASK) == NCCL_PROFILER_NET_TYPE_SOCK);
      if (e->seq && d->netPlugin.data)
        e->count = ((const ncclProfilerNetSockDescr_v1_t*)d->netPlugin.data)->sock.length;
      break;
    default: break;
  }
#ifdef PROF_NULL
  return ncclSuccess;
#endif
  *handle = e;
  return ncclSuccess;
}

static ncclResult_t stopEvent(void* handle) {
  if (handle) ((struct event*)handle)->stop = now();
  return ncclSuccess;
}

static ncclResult_t recordEventState(void* handle, ncclProfilerEventState_t state,
                                     ncclProfilerEventStateArgs_v5_t* args) {
  struct event* e = (struct event*)handle;
  if (!e) return ncclSuccess;
  if ((unsigned)state < 32) e->states |= 1u << state;
  if (state == ncclProfilerKernelChStop && args) e->pTimerStop = args->kernelCh.pTimer;
  if (e->type == ncclProfileProxyStep && args) e->count = args->proxyStep.transSize;
  if (e->type == ncclProfileProxyCtrl && args) e->count = args->proxyCtrl.appendedProxyOps;
  return ncclSuccess;
}

static const char* typeName(uint64_t t) {
  switch (t) {
    case ncclProfileGroup: return "Group";
    case ncclProfileColl: return "Coll";
    case ncclProfileP2p: return "P2p";
    case ncclProfileProxyOp: return "ProxyOp";
    case ncclProfileProxyStep: return "ProxyStep";
    case ncclProfileProxyCtrl: return "ProxyCtrl";
    case ncclProfileKernelCh: return "KernelCh";
    case ncclProfileNetPlugin: return "NetPlugin";
    case ncclProfileGroupApi: return "GroupApi";
    case ncclProfileCollApi: return "CollApi";
    case ncclProfileP2pApi: return "P2pApi";
    case ncclProfileKernelLaunch: return "KernelLaunch";
    default: return "?";
  }
}

static ncclResult_t finalize(void* context) {
  struct ctx* c = (struct ctx*)context;
  const char* dir = getenv("BATON_TEST_PROFILE_DIR");
  if (dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%llx.%d.%d", dir, (unsigned long long)c->commId, c->rank, (int)getpid());
    FILE* f = fopen(path, "w");
    if (!f) return ncclSystemError;
    long n = __atomic_load_n(&nEvents, __ATOMIC_RELAXED);
    if (n > MAX_EVENTS) n = MAX_EVENTS;
    for (long i = 0; i < n; ++i) {
      const struct event* e = &events[i];
      if (e->ctx != c) continue;
      fprintf(f,
              "id=%ld type=%s parent=%ld group=%ld rank=%d start=%llu stop=%llu states=%u func=%s algo=%s proto=%s "
              "nch=%d ch=%d seq=%llu count=%zu depth=%d peer=%d send=%d pstart=%llu pstop=%llu\n",
              i + 1, typeName(e->type), e->parent, e->group, e->rank, (unsigned long long)e->start,
              (unsigned long long)e->stop, e->states, e->func ? e->func : "-", e->algo ? e->algo : "-",
              e->proto ? e->proto : "-", e->nChannels, e->channel, (unsigned long long)e->seq, e->count, e->depth,
              e->peer, e->isSend, (unsigned long long)e->pTimerStart, (unsigned long long)e->pTimerStop);
    }
    fclose(f);
  }
  free(c);
  return ncclSuccess;
}

#ifdef PROF_V4
static ncclResult_t initV4(void** context, int* mask, const char* commName, uint64_t commHash, int nNodes, int nRanks,
                           int rank, ncclDebugLogger_t log) {
  return init(context, commHash, mask, commName, nNodes, nRanks, rank, log);
}
__attribute__((visibility("default")))
ncclProfiler_v4_t ncclProfiler_v4 = {"tree-v4", initV4, startEvent, stopEvent, recordEventState, finalize};
#else
__attribute__((visibility("default")))
ncclProfiler_v5_t ncclProfiler_v5 = {"tree", init, startEvent, stopEvent, recordEventState, finalize};
#endif

/* A tuner plugin for the plugin host's tests (tests/tools/tuner_plugin_test.sh): a third party's
 * plugin in C, using only the interface header. It reads rules from NCCL_TUNER_CONFIG_FILE, one per
 * line, as NCCL's example tuner does (its plugins/tuner/example/README.md):
 *   collective,minBytes,maxBytes,algorithm,protocol,channels   e.g. allreduce,0,65536,ring,ll,2
 * algorithm: tree, ring, nvls, ... (NCCL's names) or -; protocol: ll, ll128, simple or -; channels:
 * -1 keeps the core's. A matching rule forces its pair (cost 0) and sets the channels; "forbid" as
 * the channel field instead forbids the pair (NCCL_ALGO_PROTO_IGNORE). A v5 build also reads
 *   latency,algorithm,protocol,baseUs,hopUs
 * and writes those into the core's constants at init. Built as several libraries:
 *   (default) ncclTunerPlugin_v5     -DTUNER_V4 / -DTUNER_V3 / -DTUNER_V2: that version only
 *   -DTUNER_FAIL_INIT: init fails     -DTUNER_FAIL_COLLINFO: getCollInfo fails
 *   -DTUNER_GARBAGE: getCollInfo writes NaN and negative costs and asks for 1000 channels
 *   -DTUNER_V6_ONLY: the v5 table under the name of a version baton does not know, ncclTunerPlugin_v6 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "baton/plugin_tuner.h"

#define MAX_RULES 32

#ifdef TUNER_FAIL_INIT
static const int kFailInit = 1;
#else
static const int kFailInit = 0;
#endif
#ifdef TUNER_FAIL_COLLINFO
static const int kFailCollInfo = 1;
#else
static const int kFailCollInfo = 0;
#endif
#ifdef TUNER_GARBAGE
static const int kGarbage = 1;
#else
static const int kGarbage = 0;
#endif

struct rule {
  int func; /* ncclFunc_t, -1: none (a latency line) */
  size_t minBytes, maxBytes;
  int algo, proto, channels, forbid;
  double baseUs, hopUs; /* latency lines */
};

struct ctx {
  struct rule rules[MAX_RULES];
  int n;
  ncclDebugLogger_t log;
};

static const char* const kAlgoNames[NCCL_NUM_ALGORITHMS] = {
    "tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"};
static const char* const kProtoNames[NCCL_NUM_PROTOCOLS] = {"ll", "ll128", "simple"};
static const char* const kFuncNames[NCCL_NUM_FUNCTIONS] = {"broadcast", "reduce", "allgather", "reducescatter",
                                                           "allreduce"};

static int lookup(const char* s, const char* const* names, int n) {
  for (int i = 0; i < n; ++i)
    if (strcasecmp(s, names[i]) == 0) return i;
  return -1;
}

static void readRules(struct ctx* c) {
  const char* path = getenv("NCCL_TUNER_CONFIG_FILE");
  FILE* f = path ? fopen(path, "r") : NULL;
  if (!f) return;
  char line[256];
  while (c->n < MAX_RULES && fgets(line, sizeof line, f)) {
    char a[32], b[32], d[32], e[32];
    struct rule r;
    memset(&r, 0, sizeof r);
    if (line[0] == '#') continue;
    if (sscanf(line, "latency,%31[^,],%31[^,],%lf,%lf", a, b, &r.baseUs, &r.hopUs) == 4) {
      r.func = -1;
      r.algo = lookup(a, kAlgoNames, NCCL_NUM_ALGORITHMS);
      r.proto = lookup(b, kProtoNames, NCCL_NUM_PROTOCOLS);
    } else if (sscanf(line, "%31[^,],%zu,%zu,%31[^,],%31[^,],%31s", a, &r.minBytes, &r.maxBytes, b, d, e) == 6) {
      r.func = lookup(a, kFuncNames, NCCL_NUM_FUNCTIONS);
      r.algo = lookup(b, kAlgoNames, NCCL_NUM_ALGORITHMS);
      r.proto = lookup(d, kProtoNames, NCCL_NUM_PROTOCOLS);
      r.forbid = strcmp(e, "forbid") == 0;
      r.channels = r.forbid ? -1 : atoi(e);
      if (r.func < 0) continue;
    } else {
      continue;
    }
    c->rules[c->n++] = r;
  }
  fclose(f);
}

static ncclResult_t initCommon(size_t nRanks, size_t nNodes, ncclDebugLogger_t log, void** context) {
  if (kFailInit) return ncclInternalError;
  struct ctx* c = calloc(1, sizeof *c);
  if (!c) return ncclSystemError;
  c->log = log;
  readRules(c);
  if (log)
    log(NCCL_LOG_INFO, NCCL_TUNING, __FILE__, __LINE__, "rules tuner: init nRanks %zu nNodes %zu, %d rules", nRanks,
        nNodes, c->n);
  *context = c;
  return ncclSuccess;
}

__attribute__((unused)) static ncclResult_t getCollInfoCommon(void* context, ncclFunc_t collType, size_t nBytes,
                                                              float** collCostTable, int numAlgo, int numProto,
                                                              int* nChannels) {
  struct ctx* c = context;
  float* table = (float*)collCostTable;
  if (kFailCollInfo) return ncclInternalError;
  if (kGarbage) {
    for (int i = 0; i < numAlgo * numProto; ++i) table[i] = (i % 2) ? NAN : -7.0f;
    *nChannels = 1000;
    return ncclSuccess;
  }
  for (int i = 0; i < c->n; ++i) {
    const struct rule* r = &c->rules[i];
    if (r->func != (int)collType || nBytes < r->minBytes || nBytes > r->maxBytes) continue;
    if (r->algo >= 0 && r->algo < numAlgo && r->proto >= 0 && r->proto < numProto) {
      float* cost = &table[r->algo * numProto + r->proto];
      if (r->forbid) *cost = (float)NCCL_ALGO_PROTO_IGNORE;
      else if (*cost != (float)NCCL_ALGO_PROTO_IGNORE || r->algo > NCCL_ALGO_RING)
        *cost = 0.0f; /* as NCCL's example: force only what the core offers (and, to test, what baton lacks) */
    }
    if (r->channels > 0) *nChannels = r->channels;
    if (!r->forbid) break;
  }
  return ncclSuccess;
}

static ncclResult_t destroyCommon(void* context) {
  free(context);
  return ncclSuccess;
}

#if defined(TUNER_V2)
static ncclResult_t getCollInfoV2(void* context, ncclFunc_t collType, size_t nBytes, int collNetSupport,
                                  int nvlsSupport, int numPipeOps, int* algorithm, int* protocol, int* nChannels) {
  struct ctx* c = context;
  (void)collNetSupport, (void)nvlsSupport, (void)numPipeOps;
  for (int i = 0; i < c->n; ++i) {
    const struct rule* r = &c->rules[i];
    if (r->func != (int)collType || nBytes < r->minBytes || nBytes > r->maxBytes || r->forbid) continue;
    *algorithm = r->algo, *protocol = r->proto;
    if (r->channels > 0) *nChannels = r->channels;
    break;
  }
  return ncclSuccess;
}
__attribute__((visibility("default")))
const ncclTuner_v2_t ncclTunerPlugin_v2 = {"rules-v2", initCommon, getCollInfoV2, destroyCommon};
#elif defined(TUNER_V3)
static ncclResult_t getCollInfoV3(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                                  float** collCostTable, int numAlgo, int numProto, int* nChannels) {
  (void)numPipeOps;
  return getCollInfoCommon(context, collType, nBytes, collCostTable, numAlgo, numProto, nChannels);
}
__attribute__((visibility("default")))
const ncclTuner_v3_t ncclTunerPlugin_v3 = {"rules-v3", initCommon, getCollInfoV3, destroyCommon};
#elif defined(TUNER_V4)
static ncclResult_t getCollInfoV4(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                                  float** collCostTable, int numAlgo, int numProto, int regBuff, int* nChannels) {
  (void)numPipeOps, (void)regBuff;
  return getCollInfoCommon(context, collType, nBytes, collCostTable, numAlgo, numProto, nChannels);
}
__attribute__((visibility("default")))
const ncclTuner_v4_t ncclTunerPlugin_v4 = {"rules-v4", initCommon, getCollInfoV4, destroyCommon};
#else
static ncclResult_t initV5(void** context, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t log,
                           ncclNvlDomainInfo_v5_t* nvl, ncclTunerConstants_v5_t* constants) {
  (void)nvl;
  ncclResult_t res = initCommon(nRanks, nNodes, log, context);
  if (res != ncclSuccess) return res;
  struct ctx* c = *context;
  if (log)
    log(NCCL_LOG_INFO, NCCL_TUNING, __FILE__, __LINE__, "rules tuner: commId %llx, Ring/Simple base latency %.2f us",
        (unsigned long long)commId, constants->baseLatencies[NCCL_ALGO_RING][NCCL_PROTO_SIMPLE]);
  for (int i = 0; i < c->n; ++i) {
    const struct rule* r = &c->rules[i];
    if (r->func != -1 || r->algo < 0 || r->proto < 0) continue;
    constants->baseLatencies[r->algo][r->proto] = r->baseUs;
    for (int l = 0; l < NCCL_NUM_HW_LINKS; ++l) constants->hwLatencies[l][r->algo][r->proto] = r->hopUs;
  }
  return ncclSuccess;
}
static ncclResult_t getCollInfoV5(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                                  float** collCostTable, int numAlgo, int numProto, int regBuff, int* nChannels) {
  (void)numPipeOps, (void)regBuff;
  return getCollInfoCommon(context, collType, nBytes, collCostTable, numAlgo, numProto, nChannels);
}
#ifdef TUNER_V6_ONLY
#define TUNER_SYMBOL ncclTunerPlugin_v6
#else
#define TUNER_SYMBOL ncclTunerPlugin_v5
#endif
__attribute__((visibility("default")))
const ncclTuner_v5_t TUNER_SYMBOL = {"rules", initV5, getCollInfoV5, destroyCommon};
#endif

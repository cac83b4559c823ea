#include "tuner/tuner_plugin.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

#include "misc/debug.h"
#include "misc/plugin_lib.h"

namespace baton {

namespace {

// The process's tuner library (misc/plugin_lib.h's SharedPluginLib), never unmapped: a dlclose of
// a library with thread-local storage while other threads run (channel workers, the proxy) can trip
// glibc's TLS bookkeeping ("_dl_update_slotinfo: Assertion `max_modid >= req_modid' failed", seen
// once in CI), so the last user only finalizes.
struct LoadedTuner {
  SharedPluginLib shared;
  ncclTuner_v5_t api{};  // the plugin's own v5 table, or adapters over an older one
  int version = 0;
  const ncclTuner_v4_t* v4 = nullptr;
  const ncclTuner_v3_t* v3 = nullptr;
  const ncclTuner_v2_t* v2 = nullptr;
};
LoadedTuner& loaded() {
  static LoadedTuner* t = new LoadedTuner;  // never destroyed: communicators may outlive static destructors
  return *t;
}

// Older versions behind the v5 shape (NCCL's src/plugin/tuner/tuner_v*.cc do the same).
ncclResult_t initOld(void** ctx, uint64_t, size_t nRanks, size_t nNodes, ncclDebugLogger_t log, ncclNvlDomainInfo_v5_t*,
                     ncclTunerConstants_v5_t*) {
  LoadedTuner& t = loaded();
  return t.v4   ? t.v4->init(nRanks, nNodes, log, ctx)
         : t.v3 ? t.v3->init(nRanks, nNodes, log, ctx)
                : t.v2->init(nRanks, nNodes, log, ctx);
}
ncclResult_t finalizeOld(void* ctx) {
  LoadedTuner& t = loaded();
  return t.v4 ? t.v4->destroy(ctx) : t.v3 ? t.v3->destroy(ctx) : t.v2->destroy(ctx);
}
ncclResult_t collInfoV3(void* ctx, ncclFunc_t f, size_t n, int pipe, float** table, int nAlgo, int nProto, int,
                        int* nch) {
  return loaded().v3->getCollInfo(ctx, f, n, pipe, table, nAlgo, nProto, nch);
}
// v2 names a pair instead of costing it: a named pair that the table allows gets cost 0.
ncclResult_t collInfoV2(void* ctx, ncclFunc_t f, size_t n, int pipe, float** table, int, int, int, int* nch) {
  float(*t)[NCCL_NUM_PROTOCOLS] = reinterpret_cast<float(*)[NCCL_NUM_PROTOCOLS]>(table);
  int algo = NCCL_ALGO_UNDEF, proto = NCCL_PROTO_UNDEF;
  const int nvls = t[NCCL_ALGO_NVLS][NCCL_PROTO_SIMPLE] != (float)NCCL_ALGO_PROTO_IGNORE ||
                   t[NCCL_ALGO_NVLS_TREE][NCCL_PROTO_SIMPLE] != (float)NCCL_ALGO_PROTO_IGNORE;
  const int collNet = t[NCCL_ALGO_COLLNET_CHAIN][NCCL_PROTO_SIMPLE] != (float)NCCL_ALGO_PROTO_IGNORE;
  const ncclResult_t res = loaded().v2->getCollInfo(ctx, f, n, collNet, nvls, pipe, &algo, &proto, nch);
  if (res != ncclSuccess) return res;
  if (algo >= 0 && algo < NCCL_NUM_ALGORITHMS && proto >= 0 && proto < NCCL_NUM_PROTOCOLS &&
      t[algo][proto] != (float)NCCL_ALGO_PROTO_IGNORE)
    t[algo][proto] = 0;
  return ncclSuccess;
}

// Finds the newest version the library exports; false when it exports none.
bool bindVersion(LoadedTuner& t, void* h) {
  if (auto* v5 = static_cast<const ncclTuner_v5_t*>(dlsym(h, "ncclTunerPlugin_v5"))) {
    t.api = *v5, t.version = 5;
  } else if ((t.v4 = static_cast<const ncclTuner_v4_t*>(dlsym(h, "ncclTunerPlugin_v4")))) {
    t.api = {t.v4->name, initOld, t.v4->getCollInfo, finalizeOld}, t.version = 4;
  } else if ((t.v3 = static_cast<const ncclTuner_v3_t*>(dlsym(h, "ncclTunerPlugin_v3")))) {
    t.api = {t.v3->name, initOld, collInfoV3, finalizeOld}, t.version = 3;
  } else if ((t.v2 = static_cast<const ncclTuner_v2_t*>(dlsym(h, "ncclTunerPlugin_v2")))) {
    t.api = {t.v2->name, initOld, collInfoV2, finalizeOld}, t.version = 2;
  } else {
    return false;
  }
  if (!t.api.name) t.api.name = "(unnamed)";
  if (!t.api.init || !t.api.getCollInfo || !t.api.finalize) return false;
  return true;
}

// Loads the library for one more communicator; false: no tuner plugin.
bool acquire() {
  LoadedTuner& t = loaded();
  const SharedPluginLib::Use use =
      t.shared.acquire(kPluginTuner, "NCCL_TUNER_PLUGIN", "ncclTunerPlugin_v5, _v4, _v3 or _v2", [&t](void* h) {
        if (bindVersion(t, h)) return true;
        t.v4 = nullptr, t.v3 = nullptr, t.v2 = nullptr;
        return false;
      });
  // NCCL also looks for a tuner inside the network plugin's library; baton loads no external
  // network plugin yet, so there is nowhere else to look.
  if (use == SharedPluginLib::kFirst) {
    BATON_INFO(kSubInit | kSubTuning, "TUNER/Plugin: Using %s (v%d)", t.api.name, t.version);
    BATON_INFO(kSubInit | kSubTuning, "Successfully loaded external tuner plugin %s", t.shared.lib().path.c_str());
  }
  return use != SharedPluginLib::kNone;
}

void release() {
  LoadedTuner& t = loaded();
  if (t.shared.release())
    BATON_INFO(kSubInit | kSubTuning, "TUNER/Plugin: Closing tuner: '%s' (its library stays mapped)", t.api.name);
}

// The hop cost NCCL would read for this communicator's links: across hosts the network's, inside
// one the fastest link's (NVLink for GPUs; baton's shared memory plays that part on the CPU).
int linkOf(int nNodes) { return nNodes > 1 ? NCCL_HW_NET : NCCL_HW_NVLINK; }

void fillConstants(const TuningModel& m, int path, ncclTunerConstants_v5_t* c) {
  memset(c, 0, sizeof *c);
  for (const CollAlgo a : kTunedAlgos)
    for (int p = 0; p < kNumProtos; ++p) {
      c->baseLatencies[a][p] = m.cost[path][a][p].baseUs;
      for (int l = 0; l < NCCL_NUM_HW_LINKS; ++l) c->hwLatencies[l][a][p] = m.cost[path][a][p].hopUs;
    }
}

// What a v5 plugin changed in the latencies goes into baton's model (bandwidths have no place there).
void readConstants(const ncclTunerConstants_v5_t& c, int path, int nNodes, TuningModel* m) {
  const int link = linkOf(nNodes);
  for (const CollAlgo a : kTunedAlgos)
    for (int p = 0; p < kNumProtos; ++p) {
      AlgoProtoCost& cost = m->cost[path][a][p];
      if ((float)c.baseLatencies[a][p] != cost.baseUs || (float)c.hwLatencies[link][a][p] != cost.hopUs)
        BATON_INFO(kSubTuning, "TUNER/Plugin: %s/%s latency %.2f + %.2f us per hop (was %.2f + %.2f)", algoName(a),
                   protoName(p), c.baseLatencies[a][p], c.hwLatencies[link][a][p], cost.baseUs, cost.hopUs);
      cost.baseUs = (float)c.baseLatencies[a][p];
      cost.hopUs = (float)c.hwLatencies[link][a][p];
    }
}

}  // namespace

bool tunerAlgoRuns(int algo, CollFunc func, bool treesAvailable) {
  return algo == kAlgoRing || (algo == kAlgoTree && func == kFuncAllReduce && treesAvailable);
}

ncclFunc_t ncclFuncOf(CollFunc func) {
  switch (func) {
    case kFuncBroadcast: return ncclFuncBroadcast;
    case kFuncReduce: return ncclFuncReduce;
    case kFuncAllGather: return ncclFuncAllGather;
    case kFuncReduceScatter: return ncclFuncReduceScatter;
    default: return ncclFuncAllReduce;
  }
}

void fillCostTable(const TuningModel& m, int path, const AlgoProtoMask& mask, CollFunc func, int nRanks, int nNodes,
                   size_t bytes, bool treesAvailable, float table[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS]) {
  for (int a = 0; a < NCCL_NUM_ALGORITHMS; ++a)
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; ++p) {
      table[a][p] = (float)NCCL_ALGO_PROTO_IGNORE;
      if (!tunerAlgoRuns(a, func, treesAvailable) || !mask.algo[func][a] || !mask.proto[func][p]) continue;
      const double us = predictUs(m, path, func, CollAlgo(a), Proto(p), nRanks, nNodes, bytes);
      if (us >= 0) table[a][p] = (float)us;
    }
}

bool pickFromCostTable(const float table[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS], CollFunc func, bool treesAvailable,
                       AlgoProtoChoice* out, int* passedOver) {
  *passedOver = -1;
  float best = 0, bestOther = 0;
  bool found = false, other = false;
  for (int a = 0; a < NCCL_NUM_ALGORITHMS; ++a)
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; ++p) {
      const float t = table[a][p];
      if (t == (float)NCCL_ALGO_PROTO_IGNORE || !(t >= 0)) continue;  // also NaN and other negatives
      if (!tunerAlgoRuns(a, func, treesAvailable)) {
        if (!other || t < bestOther) bestOther = t, other = true, *passedOver = a;
        continue;
      }
      if (found && t >= best) continue;
      best = t, found = true;
      *out = {CollAlgo(a), Proto(p), t};
    }
  if (found && other && bestOther >= best) *passedOver = -1;  // it would not have won anyway
  return found;
}

std::unique_ptr<TunerPlugin> TunerPlugin::start(uint64_t commId, int nRanks, int nNodes, int path, TuningModel* model) {
  if (!acquire()) return nullptr;
  LoadedTuner& t = loaded();
  std::unique_ptr<TunerPlugin> tp(new TunerPlugin);
  tp->name_ = t.api.name;
  tp->version_ = t.version;
  ncclNvlDomainInfo_v5_t nvl{};  // no NVLink domains on the CPU backend
  ncclTunerConstants_v5_t constants;
  fillConstants(*model, path, &constants);
  const ncclResult_t res =
      t.api.init(&tp->ctx_, commId, (size_t)nRanks, (size_t)nNodes, pluginLogger, &nvl, &constants);
  if (res != ncclSuccess) {
    // NCCL fails the communicator's init here; baton keeps it, on its own tuner, and says so.
    BATON_WARN("TUNER/Plugin: %s (%s): init returned %d (%s); this communicator uses baton's own tuner",
               tp->name_.c_str(), t.shared.lib().path.c_str(), (int)res, ncclGetErrorString(res));
    tp->ctx_ = nullptr;
    tp.reset();  // no finalize for a failed init
    release();
    return nullptr;
  }
  if (t.version == 5) readConstants(constants, path, nNodes, model);
  return tp;
}

TunerPlugin::~TunerPlugin() {
  const ncclResult_t res = loaded().api.finalize ? loaded().api.finalize(ctx_) : ncclSuccess;
  if (res != ncclSuccess) BATON_WARN("TUNER/Plugin: %s: finalize returned %d", name_.c_str(), (int)res);
  release();
}

TunerPlugin::Verdict TunerPlugin::revise(const TuningModel& m, int path, const AlgoProtoMask& mask, CollFunc func,
                                         int nRanks, int nNodes, size_t bytes, bool regBuff, bool treesAvailable,
                                         int maxChannels, AlgoProtoChoice* choice, int* nch) {
  Verdict v;
  float table[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS], before[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
  fillCostTable(m, path, mask, func, nRanks, nNodes, bytes, treesAvailable, table);
  memcpy(before, table, sizeof table);
  int channels = 0;
  const ncclResult_t res =
      loaded().api.getCollInfo(ctx_, ncclFuncOf(func), bytes, 1, reinterpret_cast<float**>(table), NCCL_NUM_ALGORITHMS,
                               NCCL_NUM_PROTOCOLS, regBuff ? 1 : 0, &channels);
  if (res != ncclSuccess) {
    // NCCL's header: "If getCollInfo() does not return ncclSuccess, NCCL will fall back to the
    // default tuning" (its 2.28 enqueue.cc fails the call instead; baton keeps the documented way).
    if (!warnedFailure_)
      BATON_WARN(
          "TUNER/Plugin: %s: getCollInfo returned %d for %s of %zu bytes; baton's own choice stands "
          "(said once per communicator)",
          name_.c_str(), (int)res, funcName(func), bytes);
    warnedFailure_ = true;
    v.failed = true;
    return v;
  }
  // An untouched table keeps baton's choice exactly (its tie order is its own).
  if (memcmp(table, before, sizeof table) != 0) {
    v.tableChanged = true;
    AlgoProtoChoice pick;
    int passedOver = -1;
    if (pickFromCostTable(table, func, treesAvailable, &pick, &passedOver)) {
      *choice = pick;
    } else if (!warnedAlgo_) {
      BATON_INFO(kSubTuning,
                 "TUNER/Plugin: %s left no pair baton runs for %s of %zu bytes; baton's own choice stands (said "
                 "once per communicator)",
                 name_.c_str(), funcName(func), bytes);
      warnedAlgo_ = true;
    }
    if (passedOver >= 0 && !warnedAlgo_) {
      BATON_INFO(kSubTuning,
                 "TUNER/Plugin: %s chose algorithm %d for %s, which baton does not run; taking the cheapest of "
                 "Ring%s instead (said once per communicator)",
                 name_.c_str(), passedOver, funcName(func), func == kFuncAllReduce ? " and Tree" : "");
      warnedAlgo_ = true;
    }
  }
  if (channels > 0) {
    v.channels = channels;
    *nch = channels < maxChannels ? channels : maxChannels;
  }
  return v;
}

}  // namespace baton

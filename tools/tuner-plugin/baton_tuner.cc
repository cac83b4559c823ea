// libnccl-tuner-baton.so: baton's calibrated cost model as an NCCL tuner plugin (lesson 16), so the
// numbers `baton-perf --calibrate` measured can steer NVIDIA's NCCL (NCCL_TUNER_PLUGIN=baton), or
// baton itself, with no library of baton's loaded besides this one.
//
// init reads a tuning file: BATON_TUNER_PLUGIN_FILE, else the file baton reads (BATON_TUNING_FILE,
// else ~/.cache/baton/tuning.txt; a missing default file means the built-in model). It takes one of
// the file's tables: BATON_TUNER_PLUGIN_PATH=shm|direct|oversub|gpu (default gpu, the table of CUDA
// kernels on device buffers). getCollInfo re-costs the Ring and Tree entries the core offers with
// baton's prediction for that table, and leaves every other entry (NVLS, CollNet, PAT) as the core
// costed it: on a machine where NCCL has them, the calibration does not speak for them. A pair the
// table calls unusable (bandwidth 0) is forbidden. Channels are left to the core.
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "baton/plugin_tuner.h"
#include "misc/debug.h"
#include "tuner/tuner.h"

namespace {

using namespace baton;

struct Context {
  TuningModel model;
  int path = kPathGpu;
  size_t nRanks = 1, nNodes = 1;
};

int pathByName(const char* name) {
  for (int p = 0; p < kNumPaths; ++p)
    if (name && strcmp(name, tuningPathName(p)) == 0) return p;
  return -1;
}

ncclResult_t initCommon(size_t nRanks, size_t nNodes, ncclDebugLogger_t log, void** context) {
  const char* pathEnv = getenv("BATON_TUNER_PLUGIN_PATH");
  const int path = pathEnv && *pathEnv ? pathByName(pathEnv) : kPathGpu;
  if (path < 0) {
    if (log)
      log(NCCL_LOG_WARN, NCCL_TUNING, __FILE__, __LINE__,
          "baton tuner: BATON_TUNER_PLUGIN_PATH '%s' (expected shm, direct, oversub or gpu)", pathEnv);
    return ncclInvalidArgument;
  }
  Context* c = new (std::nothrow) Context;
  if (!c) return ncclSystemError;
  c->model = defaultTuningModel();
  c->path = path;
  c->nRanks = nRanks;
  c->nNodes = nNodes;
  const char* own = getenv("BATON_TUNER_PLUGIN_FILE");
  const std::string file = own && *own ? own : tuningFilePath();
  if (!file.empty() && file != "none") {
    const ncclResult_t res = loadTuningFile(file, &c->model);
    // The default file may well not exist (nothing calibrated yet): the built-in model. A file that
    // was named and is missing or broken fails init, which the core reports naming this plugin.
    const bool quietMissing = !(own && *own) && res == ncclSystemError && !getenv("BATON_TUNING_FILE");
    if (res != ncclSuccess && !quietMissing) {
      if (log) log(NCCL_LOG_WARN, NCCL_TUNING, __FILE__, __LINE__, "baton tuner: %s", lastError());
      delete c;
      return res;
    }
  }
  if (log)
    log(NCCL_LOG_INFO, NCCL_TUNING, __FILE__, __LINE__,
        "baton tuner: model from %s, '%s' table, %zu ranks on %zu nodes", c->model.source, tuningPathName(c->path),
        nRanks, nNodes);
  *context = c;
  return ncclSuccess;
}

int collFuncOf(ncclFunc_t f) {
  switch (f) {
    case ncclFuncBroadcast: return kFuncBroadcast;
    case ncclFuncReduce: return kFuncReduce;
    case ncclFuncAllGather: return kFuncAllGather;
    case ncclFuncReduceScatter: return kFuncReduceScatter;
    case ncclFuncAllReduce: return kFuncAllReduce;
    default: return -1;
  }
}

ncclResult_t getCollInfo(void* context, ncclFunc_t collType, size_t nBytes, int, float** collCostTable, int numAlgo,
                         int numProto, int, int*) {
  const Context* c = static_cast<const Context*>(context);
  const int func = collFuncOf(collType);
  if (!c || func < 0) return ncclSuccess;  // not a collective the model knows: the core's costs stand
  float* table = reinterpret_cast<float*>(collCostTable);
  for (const CollAlgo a : kTunedAlgos) {
    if (a >= numAlgo) continue;
    for (int p = 0; p < numProto && p < kNumProtos; ++p) {
      float& cost = table[a * numProto + p];
      if (cost == (float)NCCL_ALGO_PROTO_IGNORE) continue;  // the core does not offer it
      const double us =
          predictUs(c->model, c->path, CollFunc(func), a, Proto(p), (int)c->nRanks, (int)c->nNodes, nBytes);
      cost = us < 0 ? (float)NCCL_ALGO_PROTO_IGNORE : (float)us;
    }
  }
  return ncclSuccess;
}

ncclResult_t finalize(void* context) {
  delete static_cast<Context*>(context);
  return ncclSuccess;
}

ncclResult_t initV5(void** context, uint64_t, size_t nRanks, size_t nNodes, ncclDebugLogger_t log,
                    ncclNvlDomainInfo_v5_t*, ncclTunerConstants_v5_t*) {
  return initCommon(nRanks, nNodes, log, context);
}

}  // namespace

// The newest interface, and v4 for an NCCL that knows no v5 (the same answers).
extern "C" __attribute__((visibility("default")))
const ncclTuner_v5_t ncclTunerPlugin_v5 = {"baton", initV5, getCollInfo, finalize};
extern "C" __attribute__((visibility("default")))
const ncclTuner_v4_t ncclTunerPlugin_v4 = {"baton", initCommon, getCollInfo, finalize};

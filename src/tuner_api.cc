// include/baton/tuner.h: the tuner's predictions and tuning file, for baton-perf and baton-topo.
#include "baton/tuner.h"

#include <strings.h>
#include <unistd.h>

#include <cstring>

#include <string>

#include "comm.h"
#include "debug.h"
#include "tuner.h"

using namespace baton;

extern "C" __attribute__((visibility("default"))) ncclResult_t batonTunerPredict(ncclComm_t comm,
                                                                                 const char* collective, size_t bytes,
                                                                                 double* predictedUs, int* chosen) {
  BATON_CHECK(checkCommReady(comm, "batonTunerPredict"));
  if (!collective) return batonError(ncclInvalidArgument, "batonTunerPredict: collective is NULL");
  if (!predictedUs || !chosen) return batonError(ncclInvalidArgument, "batonTunerPredict: an output pointer is NULL");
  static const char* names[kFuncCount] = {"allreduce", "broadcast", "reduce", "allgather", "reducescatter"};
  int func = -1;
  for (int f = 0; f < kFuncCount; ++f)
    if (strcasecmp(collective, names[f]) == 0) func = f;
  if (func < 0)
    return batonError(ncclInvalidArgument,
                      "batonTunerPredict: collective '%s' (expected allreduce, broadcast, reduce, allgather or reducescatter)",
                      collective);
  const Tunables& t = comm->tun;
  for (int p = 0; p < kNumProtos; ++p)
    predictedUs[p] = t.mask.algo[func][0] && t.mask.proto[func][p]
                         ? predictUs(t.model, tuningPathOf(comm), func, 0, p, comm->nRanks, bytes)
                         : -1;
  AlgoProtoChoice c;
  BATON_CHECK(chooseAlgoProto(t.model, tuningPathOf(comm), t.mask, func, comm->nRanks, bytes, &c));
  *chosen = c.proto;
  return ncclSuccess;
}

extern "C" __attribute__((visibility("default"))) const char* batonTunerModelSource(ncclComm_t comm) {
  if (checkCommReady(comm, "batonTunerModelSource") != ncclSuccess) return "?";
  return comm->tun.model.source;
}

extern "C" __attribute__((visibility("default"))) const char* batonTunerPathName(ncclComm_t comm) {
  if (checkCommReady(comm, "batonTunerPathName") != ncclSuccess) return "?";
  return tuningPathName(tuningPathOf(comm));
}

extern "C" __attribute__((visibility("default"))) const char* batonProtocolName(int protocol) {
  return protoName(protocol);
}

extern "C" __attribute__((visibility("default"))) const char* batonTuningFilePath(void) {
  static thread_local std::string path;
  path = tuningFilePath();
  return path.c_str();
}

extern "C" __attribute__((visibility("default"))) ncclResult_t batonTunerWriteFile(const char* path,
                                                                                   const char* pathKind,
                                                                                   const double* baseUs,
                                                                                   const double* hopUs,
                                                                                   const double* busBwGBs,
                                                                                   const double (*corr)[BATON_TUNER_BUCKETS],
                                                                                   const char* comment) {
  static_assert(BATON_TUNER_BUCKETS == kCorrBuckets, "public and internal bucket counts agree");
  if (!path || !*path) return batonError(ncclInvalidArgument, "batonTunerWriteFile: path is NULL or empty");
  if (!baseUs || !hopUs || !busBwGBs) return batonError(ncclInvalidArgument, "batonTunerWriteFile: a value array is NULL");
  int kind = -1;
  for (int k = 0; k < kNumPaths; ++k)
    if (pathKind && strcmp(pathKind, tuningPathName(k)) == 0) kind = k;
  if (kind < 0)
    return batonError(ncclInvalidArgument, "batonTunerWriteFile: pathKind '%s' (expected shm, direct or oversub)",
                      pathKind ? pathKind : "(null)");
  // Keep what the file already says about the other path (a calibration measures one).
  TuningModel m = defaultTuningModel();
  {
    TuningModel existing = m;
    const bool quiet = quietErrors();
    quietErrors() = true;
    if (access(path, R_OK) == 0 && loadTuningFile(path, &existing) == ncclSuccess) m = existing;
    quietErrors() = quiet;
  }
  for (int p = 0; p < kNumProtos; ++p) {
    if (!(baseUs[p] >= 0 && hopUs[p] >= 0 && busBwGBs[p] >= 0))
      return batonError(ncclInvalidArgument, "batonTunerWriteFile: protocol %s has a negative or NaN value", protoName(p));
    m.cost[kind][0][p].baseUs = (float)baseUs[p];
    m.cost[kind][0][p].hopUs = (float)hopUs[p];
    m.cost[kind][0][p].busBwGBs = (float)busBwGBs[p];
    for (int b = 0; b < kCorrBuckets; ++b) {
      const double c = corr ? corr[p][b] : 1.0;
      if (!(c > 0.01 && c < 100))
        return batonError(ncclInvalidArgument, "batonTunerWriteFile: protocol %s corr[%d] = %g is outside (0.01, 100)",
                          protoName(p), b, c);
      m.cost[kind][0][p].corr[b] = (float)c;
    }
  }
  return writeTuningFile(path, m, comment ? comment : "");
}

extern "C" __attribute__((visibility("default"))) int batonTunerBucket(size_t bytes) { return corrBucket(bytes); }

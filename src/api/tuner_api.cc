// include/baton/tuner.h: the tuner's predictions and tuning file, for baton-perf and baton-topo.
#include "api/argcheck.h"
#include "baton/tuner.h"

#include <strings.h>
#include <unistd.h>

#include <cstring>

#include <string>

#include "alltoall.h"
#include "alltoall/alltoall_choice.h"
#include "comm.h"
#include "misc/debug.h"
#include "tuner/tuner.h"

using namespace baton;

namespace {

ncclResult_t parseFunc(const char* fn, const char* collective, int* func) {
  if (!collective) return batonError(ncclInvalidArgument, "%s: collective is NULL", fn);
  *func = funcByName(collective);
  if (*func < 0)
    return batonError(ncclInvalidArgument,
                      "%s: collective '%s' (expected allreduce, broadcast, reduce, allgather or reducescatter)", fn,
                      collective);
  return ncclSuccess;
}

static_assert(BATON_ALGO_TREE == kAlgoTree && BATON_ALGO_RING == kAlgoRing, "one numbering: NCCL's");

}  // namespace

extern "C" __attribute__((visibility("default"))) ncclResult_t batonTunerPredictAlgo(ncclComm_t comm,
                                                                                     const char* collective,
                                                                                     size_t bytes, int algorithm,
                                                                                     double* predictedUs) {
  BATON_CHECK(checkCommReady(comm, "batonTunerPredictAlgo"));
  int func = -1;
  BATON_CHECK(parseFunc("batonTunerPredictAlgo", collective, &func));
  if (!predictedUs) return batonError(ncclInvalidArgument, "batonTunerPredictAlgo: predictedUs is NULL");
  if (algorithm != kAlgoRing && algorithm != kAlgoTree)
    return batonError(ncclInvalidArgument,
                      "batonTunerPredictAlgo: algorithm %d (expected BATON_ALGO_RING %d or "
                      "BATON_ALGO_TREE %d)",
                      algorithm, BATON_ALGO_RING, BATON_ALGO_TREE);
  const Tunables& t = comm->tun;
  for (int p = 0; p < kNumProtos; ++p)
    predictedUs[p] = t.mask.algo[func][algorithm] && t.mask.proto[func][p]
                         ? predictUs(t.model, tuningPathOf(comm), CollFunc(func), CollAlgo(algorithm), Proto(p),
                                     comm->nRanks, comm->nNodes, bytes)
                         : -1;
  return ncclSuccess;
}

extern "C" __attribute__((visibility("default"))) ncclResult_t batonTunerPredict(ncclComm_t comm,
                                                                                 const char* collective, size_t bytes,
                                                                                 double* predictedUs, int* chosen) {
  BATON_CHECK(checkCommReady(comm, "batonTunerPredict"));
  if (!predictedUs || !chosen) return batonError(ncclInvalidArgument, "batonTunerPredict: an output pointer is NULL");
  BATON_CHECK(batonTunerPredictAlgo(comm, collective, bytes, BATON_ALGO_RING, predictedUs));
  int algo;
  return batonTunerChoose(comm, collective, bytes, &algo, chosen, nullptr);
}

extern "C" __attribute__((visibility("default"))) ncclResult_t batonTunerChoose(ncclComm_t comm, const char* collective,
                                                                                size_t bytes, int* algorithm,
                                                                                int* protocol, double* us) {
  BATON_CHECK(checkCommReady(comm, "batonTunerChoose"));
  int func = -1;
  BATON_CHECK(parseFunc("batonTunerChoose", collective, &func));
  if (!algorithm || !protocol) return batonError(ncclInvalidArgument, "batonTunerChoose: an output pointer is NULL");
  AlgoProtoChoice c;
  const Tunables& t = comm->tun;
  BATON_CHECK(
      chooseAlgoProto(t.model, tuningPathOf(comm), t.mask, CollFunc(func), comm->nRanks, comm->nNodes, bytes, &c));
  *algorithm = c.algo;
  *protocol = c.proto;
  if (us) *us = c.us;
  return ncclSuccess;
}

extern "C" __attribute__((visibility("default"))) ncclResult_t batonTunerChoosePlugin(ncclComm_t comm,
                                                                                      const char* collective,
                                                                                      size_t bytes, int* algorithm,
                                                                                      int* protocol, int* channels,
                                                                                      const char** name) {
  if (!channels) return batonError(ncclInvalidArgument, "batonTunerChoosePlugin: channels is NULL");
  BATON_CHECK(batonTunerChoose(comm, collective, bytes, algorithm, protocol, nullptr));
  *channels = 0;
  if (name) *name = nullptr;
  if (!comm->tunerPlugin) return ncclSuccess;
  static thread_local std::string label;
  label = comm->tunerPlugin->name() + " (v" + std::to_string(comm->tunerPlugin->version()) + ")";
  if (name) *name = label.c_str();
  AlgoProtoChoice c{CollAlgo(*algorithm), Proto(*protocol), 0};
  int nch = 0;
  const Tunables& t = comm->tun;
  comm->tunerPlugin->revise(t.model, tuningPathOf(comm), t.mask, CollFunc(funcByName(collective)), comm->nRanks,
                            comm->nNodes, bytes, false, true, comm->nChannels, &c, &nch);
  *algorithm = c.algo;
  *protocol = c.proto;
  *channels = nch;
  return ncclSuccess;
}

extern "C" __attribute__((visibility("default"))) int batonTunerSteps(ncclComm_t comm, const char* collective,
                                                                      int algorithm) {
  int func = -1;
  if (checkCommReady(comm, "batonTunerSteps") != ncclSuccess ||
      parseFunc("batonTunerSteps", collective, &func) != ncclSuccess)
    return -1;
  if (algorithm == BATON_ALGO_TREE) return 2 * treeDepth(comm->nRanks, comm->nNodes);
  return ringSteps(func, comm->nRanks);
}

extern "C" __attribute__((visibility("default"))) const char* batonAlgorithmName(int algorithm) {
  return algorithm == kAlgoTree || algorithm == kAlgoRing ? algoName(CollAlgo(algorithm)) : "?";
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

extern "C" __attribute__((visibility("default"))) ncclResult_t batonTunerWriteFile(
    const char* path, const char* pathKind, const double* baseUs, const double* hopUs, const double* busBwGBs,
    const double (*corr)[BATON_TUNER_BUCKETS], const char* comment) {
  return batonTunerWriteFileAlgo(path, pathKind, BATON_ALGO_RING, baseUs, hopUs, busBwGBs, corr, comment);
}

extern "C" __attribute__((visibility("default"))) ncclResult_t batonTunerWriteFileAlgo(
    const char* path, const char* pathKind, int algorithm, const double* baseUs, const double* hopUs,
    const double* busBwGBs, const double (*corr)[BATON_TUNER_BUCKETS], const char* comment) {
  static_assert(BATON_TUNER_BUCKETS == kCorrBuckets, "public and internal bucket counts agree");
  if (!path || !*path) return batonError(ncclInvalidArgument, "batonTunerWriteFile: path is NULL or empty");
  if (!baseUs || !hopUs || !busBwGBs)
    return batonError(ncclInvalidArgument, "batonTunerWriteFile: a value array is NULL");
  if (algorithm != kAlgoRing && algorithm != kAlgoTree)
    return batonError(ncclInvalidArgument, "batonTunerWriteFile: algorithm %d (expected Ring 1 or Tree 0)", algorithm);
  const int a = algorithm;
  int kind = -1;
  for (int k = 0; k < kNumPaths; ++k)
    if (pathKind && strcmp(pathKind, tuningPathName(k)) == 0) kind = k;
  if (kind < 0)
    return batonError(ncclInvalidArgument, "batonTunerWriteFile: pathKind '%s' (expected shm, direct, oversub or gpu)",
                      pathKind ? pathKind : "(null)");
  // Keep what the file already says about the other path (a calibration measures one).
  TuningModel m = tuningModelToRewrite(path);
  for (int p = 0; p < kNumProtos; ++p) {
    if (!(baseUs[p] >= 0 && hopUs[p] >= 0 && busBwGBs[p] >= 0))
      return batonError(ncclInvalidArgument, "batonTunerWriteFile: protocol %s has a negative or NaN value",
                        protoName(p));
    m.cost[kind][a][p].baseUs = (float)baseUs[p];
    m.cost[kind][a][p].hopUs = (float)hopUs[p];
    m.cost[kind][a][p].busBwGBs = (float)busBwGBs[p];
    for (int b = 0; b < kCorrBuckets; ++b) {
      const double c = corr ? corr[p][b] : 1.0;
      if (!(c > 0.01 && c < 100))
        return batonError(ncclInvalidArgument, "batonTunerWriteFile: protocol %s corr[%d] = %g is outside (0.01, 100)",
                          protoName(p), b, c);
      m.cost[kind][a][p].corr[b] = (float)c;
    }
  }
  return writeTuningFile(path, m, comment ? comment : "");
}

extern "C" __attribute__((visibility("default"))) int batonTunerBucket(size_t bytes) { return corrBucket(bytes); }

extern "C" __attribute__((visibility("default"))) ncclResult_t batonTunerFitLine(const size_t* bytes, const double* us,
                                                                                 int n, double* latencyUs,
                                                                                 double* algBwGBs) {
  if (n < 2) return batonError(ncclInvalidArgument, "batonTunerFitLine: n = %d points (need 2 or more)", n);
  if (!bytes || !us || !latencyUs || !algBwGBs)
    return batonError(ncclInvalidArgument, "batonTunerFitLine: a pointer argument is NULL");
  // Minimise sum(((lat + bytes * x) / t - 1)^2), x = 1 / bandwidth: a linear least-squares problem
  // in u = 1/t and v = bytes/t.
  double suu = 0, suv = 0, svv = 0, su = 0, sv = 0;
  int used = 0;
  for (int i = 0; i < n; ++i) {
    if (!(us[i] > 0)) continue;
    const double u = 1.0 / us[i], v = double(bytes[i]) / us[i];
    suu += u * u, suv += u * v, svv += v * v, su += u, sv += v, ++used;
  }
  if (used < 2)
    return batonError(ncclInvalidArgument, "batonTunerFitLine: %d usable points of %d (need 2 with us > 0)", used, n);
  const double det = suu * svv - suv * suv;
  double lat = det != 0 ? (su * svv - sv * suv) / det : 0, x = det != 0 ? (suu * sv - suv * su) / det : 0;
  if (lat < 0) lat = 0, x = svv > 0 ? sv / svv : 0;  // constrained fits: both terms non-negative
  if (x <= 0) x = 1e-9, lat = suu > 0 ? (su - x * suv) / suu : 0;
  *latencyUs = lat;
  *algBwGBs = 1.0 / (1e3 * x);
  return ncclSuccess;
}

// AlltoAll (lesson 12): the choice a call of this size would get, and the Bruck threshold.
extern "C" __attribute__((visibility("default"))) ncclResult_t batonTunerChooseAlltoAll(ncclComm_t comm,
                                                                                        size_t bytesPerPeer,
                                                                                        const char** algorithm,
                                                                                        const char** reason) {
  BATON_CHECK(checkCommReady(comm, "batonTunerChooseAlltoAll"));
  if (!algorithm) return batonError(ncclInvalidArgument, "batonTunerChooseAlltoAll: algorithm is NULL");
  *algorithm = alltoallAlgoName(chooseAlltoAll(comm, bytesPerPeer, true, kWindowNone, reason));
  return ncclSuccess;
}

extern "C" __attribute__((visibility("default"))) size_t batonTunerAlltoAllBruckBytes(ncclComm_t comm) {
  return checkCommReady(comm, "batonTunerAlltoAllBruckBytes") == ncclSuccess ? alltoallBruckBytes(comm) : 0;
}

extern "C" __attribute__((visibility("default"))) int batonTunerNodes(ncclComm_t comm) {
  return checkCommReady(comm, "batonTunerNodes") == ncclSuccess ? comm->nNodes : -1;
}

extern "C" __attribute__((visibility("default"))) const char* batonTunerAlltoAllBruckSource(ncclComm_t comm) {
  const char* source = "?";
  if (checkCommReady(comm, "batonTunerAlltoAllBruckSource") == ncclSuccess) alltoallBruckBytes(comm, &source);
  return source;
}

extern "C" __attribute__((visibility("default"))) ncclResult_t batonTunerWriteFileAlltoAll(const char* path, int nRanks,
                                                                                           size_t bruckBytes,
                                                                                           const char* comment) {
  if (!path || !*path) return batonError(ncclInvalidArgument, "batonTunerWriteFileAlltoAll: path is NULL or empty");
  if (nRanks < 2)
    return batonError(ncclInvalidArgument, "batonTunerWriteFileAlltoAll: nRanks %d (expected >= 2)", nRanks);
  // Keep everything else the file says (the AllReduce tables, other rank counts).
  TuningModel m = tuningModelToRewrite(path);
  if (!setAlltoAllCalibration(&m, nRanks, bruckBytes))
    return batonError(ncclInvalidArgument, "batonTunerWriteFileAlltoAll: %s already holds %d alltoall entries", path,
                      kMaxAlltoAllCalibrations);
  return writeTuningFile(path, m, comment ? comment : "");
}

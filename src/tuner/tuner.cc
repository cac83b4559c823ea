// The cost model and the choice per operation (tuner.h).
#include "tuner/tuner.h"

#include <cmath>

#include "misc/debug.h"
#include "protocols.h"

namespace baton {

const char* funcName(int f) {
  static const char* kNames[kFuncCount] = {"AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter"};
  return f >= 0 && f < kFuncCount ? kNames[f] : "?";
}

const char* protoName(int proto) {
  static const char* names[kNumProtos] = {ProtoLL::name, ProtoLL128::name, ProtoSimple::name};
  return proto >= 0 && proto < kNumProtos ? names[proto] : "?";
}

TuningModel defaultTuningModel() {
  // `baton-perf --calibrate` on the 2-core development machine, allreduce 8 B..256 MiB: the shm
  // table with 2 processes, the direct table with 2 threads (-t 2), the oversub table with 4
  // processes; docs/perf.md. Any machine gets its own numbers by running the calibration
  // (docs/lessons/05-channels-and-tuning.md); these only make a fresh checkout choose sensibly.
  TuningModel m;
  // clang-format off
  static const struct {
    int path, proto;
    AlgoProtoCost cost;
  } kMeasured[] = {
      {kPathShm, kProtoLL,
       {0.000f, 0.239f, 1.987f,
        {1.008f, 0.946f, 0.943f, 0.940f, 0.959f, 0.977f, 1.244f, 1.511f, 1.261f, 1.010f, 0.983f, 0.957f,
         0.957f, 0.958f, 0.957f, 0.957f, 0.965f, 0.973f, 0.989f, 1.004f, 1.002f, 1.000f, 1.000f}}},
      {kPathShm, kProtoLL128,
       {0.000f, 0.237f, 14.226f,
        {0.924f, 0.913f, 0.964f, 1.014f, 1.041f, 1.069f, 1.039f, 1.010f, 1.048f, 1.086f, 1.051f, 1.016f,
         0.899f, 0.782f, 0.795f, 0.808f, 0.986f, 1.163f, 1.279f, 1.395f, 1.471f, 1.546f, 1.546f}}},
      {kPathShm, kProtoSimple,
       {0.000f, 0.260f, 12.004f,
        {0.890f, 0.973f, 0.966f, 0.959f, 0.979f, 0.998f, 1.017f, 1.035f, 1.041f, 1.047f, 1.054f, 1.062f,
         0.947f, 0.832f, 0.817f, 0.802f, 0.943f, 1.083f, 1.172f, 1.260f, 1.345f, 1.430f, 1.430f}}},
      {kPathDirect, kProtoLL,
       {0.000f, 0.422f, 0.775f,
        {0.892f, 0.945f, 1.083f, 1.221f, 1.166f, 1.110f, 1.065f, 1.020f, 1.041f, 1.062f, 1.023f, 0.984f,
         0.978f, 0.973f, 0.977f, 0.981f, 0.974f, 0.967f, 0.959f, 0.951f, 0.960f, 0.968f, 0.968f}}},
      {kPathDirect, kProtoLL128,
       {0.000f, 0.446f, 4.818f,
        {0.897f, 0.917f, 1.048f, 1.179f, 1.377f, 1.574f, 1.403f, 1.232f, 1.305f, 1.379f, 1.346f, 1.314f,
         1.135f, 0.955f, 0.925f, 0.894f, 0.914f, 0.935f, 0.867f, 0.799f, 0.918f, 1.036f, 1.036f}}},
      {kPathDirect, kProtoSimple,
       {0.000f, 0.671f, 37.812f,
        {0.866f, 0.948f, 0.996f, 1.045f, 1.058f, 1.070f, 1.057f, 1.044f, 1.217f, 1.391f, 1.155f, 0.919f,
         0.925f, 0.930f, 0.913f, 0.895f, 0.893f, 0.891f, 0.997f, 1.102f, 1.357f, 1.612f, 1.612f}}},
      {kPathOversub, kProtoLL,
       {0.000f, 1.115f, 0.839f,
        {0.840f, 0.992f, 1.219f, 1.446f, 1.388f, 1.330f, 1.391f, 1.453f, 1.418f, 1.382f, 1.346f, 1.310f,
         1.088f, 0.866f, 0.858f, 0.850f, 0.897f, 0.945f, 0.946f, 0.946f, 0.936f, 0.927f, 0.927f}}},
      {kPathOversub, kProtoLL128,
       {0.000f, 1.104f, 3.547f,
        {0.855f, 0.884f, 1.080f, 1.276f, 1.275f, 1.274f, 1.291f, 1.307f, 1.236f, 1.165f, 1.212f, 1.259f,
         1.049f, 0.839f, 1.001f, 1.163f, 1.083f, 1.002f, 0.956f, 0.911f, 0.911f, 0.912f, 0.912f}}},
      {kPathOversub, kProtoSimple,
       {0.000f, 1.291f, 5.174f,
        {0.838f, 0.841f, 1.107f, 1.374f, 1.334f, 1.293f, 1.334f, 1.374f, 1.281f, 1.187f, 1.219f, 1.250f,
         1.210f, 1.169f, 0.979f, 0.789f, 0.862f, 0.934f, 0.986f, 1.038f, 1.014f, 0.989f, 0.989f}}},
  };
  // clang-format on
  for (const auto& e : kMeasured) m.cost[e.path][kAlgoRing][e.proto] = e.cost;
  // The GPU table: ring AllReduce between 2 ranks on one H200, 64 channels (tools/scripts/gpu-check.sh,
  // docs/cuda-backend.md). Simple, the run of 2026-11-28: 12.5 us at 8 B, split as NCCL's Simple
  // base latency (8.4 us, its src/graph/tuning.cc) plus 2 steps of 2.05 us, and 378 GB/s busbw at
  // 256 MiB. LL and LL128, the run of 2026-11-27: as fast as Simple at 8 B, 63 and 48 GB/s busbw
  // at 256 MiB. So Simple wins at every size there; a calibration on another machine
  // (`gpu_collectives calibrate`) replaces these.
  const float gpuBusBw[kNumProtos] = {63.0f, 48.0f, 378.0f};  // LL, LL128, Simple
  for (int p = 0; p < kNumProtos; ++p) {
    AlgoProtoCost& c = m.cost[kPathGpu][kAlgoRing][p];
    c.baseUs = 8.4f, c.hopUs = 2.05f, c.busBwGBs = gpuBusBw[p];
  }
  for (int p = 0; p < kNumProtos; ++p)  // a table without measurements starts from the other one
    for (int k = 0; k < kNumPaths; ++k)
      if (m.cost[k][kAlgoRing][p].busBwGBs <= 0) m.cost[k][kAlgoRing][p] = m.cost[kPathShm][kAlgoRing][p];
  // Trees: a tree step costs what a ring step costs on the same path and protocol (the same FIFO
  // hand-off), and the busBw is the ring's, halved by predictUs as NCCL does. Trees never take the
  // direct paths, which only Ring/Simple uses among threads: there the tree's Simple keeps the
  // threads' step cost but gets the FIFO table's bandwidth. A calibration (`baton-perf
  // --calibrate` times NCCL_ALGO=Tree too) replaces these with measured values.
  for (int k = 0; k < kNumPaths; ++k)
    for (int p = 0; p < kNumProtos; ++p)
      if (m.cost[k][kAlgoTree][p].busBwGBs <= 0) {
        m.cost[k][kAlgoTree][p] = m.cost[k][kAlgoRing][p];
        if (k == kPathDirect && p == kProtoSimple)
          m.cost[k][kAlgoTree][p].busBwGBs = m.cost[kPathShm][kAlgoRing][p].busBwGBs;
      }
  return m;
}

int treeDepth(int nRanks, int nNodes) {
  nNodes = nNodes < 1 ? 1 : nNodes;
  const int ppn = (nRanks + nNodes - 1) / nNodes;
  int log2Nodes = 0;
  while ((1 << log2Nodes) < nNodes) ++log2Nodes;
  return ppn - 1 + log2Nodes;
}

int ringSteps(int func, int nRanks) {
  if (nRanks <= 1) return 0;
  switch (func) {
    case kFuncAllReduce: return 2 * (nRanks - 1);
    case kFuncAllGather:
    case kFuncReduceScatter: return nRanks - 1;
    default: return nRanks - 1;  // Broadcast, Reduce: a pipelined chain of n - 1 hops
  }
}

int corrBucket(size_t bytes) {
  int b = 0;
  for (size_t v = bytes / 64; v > 1 && b < kCorrBuckets - 1; v >>= 1) ++b;
  return b;
}

const char* tuningPathName(int path) {
  switch (path) {
    case kPathDirect: return "direct";
    case kPathOversub: return "oversub";
    case kPathGpu: return "gpu";
    default: return "shm";
  }
}

double predictUs(const TuningModel& m, int path, CollFunc func, CollAlgo algo, Proto proto, int nRanks, int nNodes,
                 size_t bytes) {
  if (algo < 0 || algo >= kNumTunedAlgos) return -1;
  const AlgoProtoCost& c = m.cost[path][algo][proto];
  if (c.busBwGBs <= 0) return -1;
  if (algo == kAlgoTree) {
    if (func != kFuncAllReduce) return -1;  // as NCCL: trees only for AllReduce
    if (nRanks <= 1) return c.baseUs;
    const int steps = 2 * treeDepth(nRanks, nNodes);
    return (c.baseUs + steps * c.hopUs + bytes / (1e3 * c.busBwGBs * 0.5)) * c.corr[corrBucket(bytes)];
  }
  const int steps = ringSteps(func, nRanks);
  if (steps == 0) return c.baseUs;
  // NCCL: ring algorithm bandwidth = bus bandwidth * n / steps (Broadcast/Reduce: steps = n there;
  // their bus bandwidth equals the algorithm bandwidth).
  const bool chain = func == kFuncBroadcast || func == kFuncReduce;
  const double algBw = chain ? c.busBwGBs : c.busBwGBs * nRanks / steps;
  return (c.baseUs + steps * c.hopUs + bytes / (1e3 * algBw)) * c.corr[corrBucket(bytes)];
}

ncclResult_t chooseAlgoProto(const TuningModel& m, int path, const AlgoProtoMask& mask, CollFunc func, int nRanks,
                             int nNodes, size_t bytes, AlgoProtoChoice* out) {
  double best = -1;
  bool enabled = false;
  for (const CollAlgo a : kTunedAlgos) {
    if (!mask.algo[func][a]) continue;
    for (int p = 0; p < kNumProtos; ++p) {
      if (!mask.proto[func][p]) continue;
      if (a == kAlgoTree && func != kFuncAllReduce) continue;
      enabled = true;
      const double t = predictUs(m, path, func, a, Proto(p), nRanks, nNodes, bytes);
      if (t < 0 || (best >= 0 && t >= best)) continue;
      best = t;
      *out = {a, Proto(p), t};
    }
  }
  if (best < 0 && enabled)
    return batonError(ncclInternalError, "%s: the tuning model (%s, '%s' table) gives no enabled pair a bandwidth",
                      funcName(func), m.source, tuningPathName(path));
  if (best < 0)
    return batonError(ncclInvalidUsage,
                      "%s: no algorithm/protocol available: NCCL_ALGO / NCCL_PROTO leave no usable pair (baton "
                      "implements Ring with LL, LL128 and Simple for every collective, and Tree for AllReduce)",
                      funcName(func));
  return ncclSuccess;
}

ncclResult_t chooseGpuAlgoProto(const TuningModel& m, const AlgoProtoMask& mask, bool haveTrees, CollFunc func,
                                int nRanks, int nNodes, size_t bytes, AlgoProtoChoice* out) {
  AlgoProtoMask have = mask;
  if (!haveTrees)
    for (int f = 0; f < kFuncCount; ++f) have.algo[f][kAlgoTree] = 0;
  return chooseAlgoProto(m, kPathGpu, have, func, nRanks, nNodes, bytes, out);
}

}  // namespace baton

// The cost model and the choice per operation (tuner.h).
#include "tuner.h"

#include <cmath>

#include "debug.h"
#include "task.h"

namespace baton {

const char* protoName(int proto) {
  static const char* names[kNumProtos] = {"LL", "LL128", "Simple"};
  return proto >= 0 && proto < kNumProtos ? names[proto] : "?";
}

const char* algoName(int algo) {
  switch (algo) {
    case kAlgoRing: return "Ring";
    case kAlgoNaive: return "Naive";
    default: return "?";
  }
}

TuningModel defaultTuningModel() {
  // Fitted by `baton-perf --calibrate` on the 2-core development machine (2 processes, shm); any
  // machine gets its own numbers by running the calibration (docs/lessons/05-channels-and-tuning.md).
  TuningModel m;
  m.cost[0][kProtoLL] = {0.0f, 2.0f, 1.0f};
  m.cost[0][kProtoLL128] = {0.0f, 3.0f, 3.0f};
  m.cost[0][kProtoSimple] = {0.0f, 6.0f, 8.0f};
  return m;
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

double predictUs(const TuningModel& m, int func, int algoIdx, int proto, int nRanks, size_t bytes) {
  const AlgoProtoCost& c = m.cost[algoIdx][proto];
  if (c.busBwGBs <= 0) return -1;
  const int steps = ringSteps(func, nRanks);
  if (steps == 0) return c.baseUs;
  // NCCL: ring algorithm bandwidth = bus bandwidth * n / steps (Broadcast/Reduce: steps = n there;
  // their bus bandwidth equals the algorithm bandwidth).
  const bool chain = func == kFuncBroadcast || func == kFuncReduce;
  const double algBw = chain ? c.busBwGBs : c.busBwGBs * nRanks / steps;
  return (c.baseUs + steps * c.hopUs + bytes / (1e3 * algBw)) * c.corr[corrBucket(bytes)];
}

ncclResult_t chooseAlgoProto(const TuningModel& m, const AlgoProtoMask& mask, int func, int nRanks, size_t bytes,
                             AlgoProtoChoice* out) {
  double best = -1;
  for (int a = 0; a < kNumTunedAlgos; ++a) {
    if (!mask.algo[func][a]) continue;
    for (int p = 0; p < kNumProtos; ++p) {
      if (!mask.proto[func][p]) continue;
      const double t = predictUs(m, func, a, p, nRanks, bytes);
      if (t < 0 || (best >= 0 && t >= best)) continue;
      best = t;
      *out = {kTunedAlgos[a], p, t};
    }
  }
  if (best < 0)
    return batonError(ncclInvalidUsage,
                      "%s: no algorithm/protocol available: NCCL_ALGO / NCCL_PROTO leave no usable pair (baton "
                      "implements Ring with LL, LL128 and Simple)",
                      funcName(func));
  return ncclSuccess;
}

}  // namespace baton

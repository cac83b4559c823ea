// --simulate: baton's own schedule for a collective (the library's planner, graph and algorithm
// bodies, recorded step by step) run through the discrete-event model of the topology's links
// (src/sim/sim.h), printed in nccl-tests' columns. Lessons 06 and 07; docs/perf.md compares
// it with published nccl-tests figures.
#include <strings.h>

#include <cstdio>
#include <string>
#include <vector>

#include "baton_topo.h"
#include "misc/debug.h"
#include "sim/schedule.h"
#include "sim/sim.h"
#include "tuner/tuner.h"

namespace batontopo {

using namespace baton;

namespace {

// NCCL's per-hop latencies for rings (NCCL's src/graph/tuning.cc), in µs, by link class and protocol
// (LL, LL128, Simple), charged per transfer on each link; pipelined steps overlap them.
constexpr double kNvlLatUs[kNumProtos] = {0.6, 1.9, 3.4};
constexpr double kPciLatUs[kNumProtos] = {1.0, 2.5, 5.7};
constexpr double kNetLatUs[kNumProtos] = {2.7, 4.0, 14.0};
// NCCL's base latency per operation (Ring and Tree alike: LL 6.6-6.8, LL128 14, Simple 8.4).
constexpr double kBaseUs[kNumProtos] = {6.6, 14.0, 8.4};

SimParams simParams(int proto, double channelBw) {
  SimParams p;
  p.linkLatencyUs[(int)LinkType::NVL] = kNvlLatUs[proto];
  p.linkLatencyUs[(int)LinkType::C2C] = kNvlLatUs[proto];
  p.linkLatencyUs[(int)LinkType::PCI] = kPciLatUs[proto];
  p.linkLatencyUs[(int)LinkType::SYS] = kPciLatUs[proto];
  p.linkLatencyUs[(int)LinkType::NET] = kNetLatUs[proto];
  p.streamBwGBs = channelBw;
  return p;
}

double busFactor(int func, int n) {
  if (func == kFuncAllReduce) return 2.0 * (n - 1) / n;
  if (func == kFuncAllGather || func == kFuncReduceScatter) return double(n - 1) / n;
  return 1.0;
}

}  // namespace

ncclResult_t simulateBestUs(const Machine& m, CollFunc func, size_t bytes, bool splitTree, double* us) {
  const int n = m.nRanks, nch = (int)m.graph.channels.size();
  double chBw = 0;
  for (const ChannelGraph& g : m.graph.channels) chBw = chBw == 0 || g.bw < chBw ? g.bw : chBw;
  *us = -1;
  for (const CollAlgo a : kTunedAlgos) {
    if (a != kAlgoRing && func != kFuncAllReduce) continue;
    for (int p = 0; p < kNumProtos; ++p) {
      ScheduleSpec spec;
      spec.func = func, spec.algo = a, spec.proto = Proto(p), spec.bytes = bytes, spec.nChannels = nch;
      spec.splitTree = splitTree;
      spec.layout.stepBytes[kProtoSimple] = 512 << 10;
      spec.layout.stepBytes[kProtoLL] = 64 << 10;
      spec.layout.stepBytes[kProtoLL128] = 614400;
      SimSchedule sched;
      BATON_CHECK(buildSchedule(m.graph, n, spec, &sched));
      const SimResult r = simulate(m.sys, sched, simParams(p, chBw));
      if (!r.error.empty()) return batonError(ncclInternalError, "simulating %zu B: %s", bytes, r.error.c_str());
      const double t = kBaseUs[p] + r.timeUs;
      if (*us < 0 || t < *us) *us = t;
    }
  }
  return ncclSuccess;
}

int simulateSweep(const Options& opt, const Machine& m) {
  const int funcId = funcByName(opt.simulate.c_str());
  if (funcId < 0) {
    std::fprintf(stderr,
                 "baton-topo: --simulate '%s' (expected allreduce, allgather, reducescatter, broadcast or reduce)\n",
                 opt.simulate.c_str());
    return 2;
  }
  const CollFunc func = CollFunc(funcId);
  std::vector<CollAlgo> algos;
  std::vector<Proto> protos;
  for (const CollAlgo a : kTunedAlgos)
    if ((opt.algo.empty() || strcasecmp(opt.algo.c_str(), algoName(a)) == 0) &&
        (a == kAlgoRing || func == kFuncAllReduce))
      algos.push_back(a);
  for (int p = 0; p < kNumProtos; ++p)
    if (opt.proto.empty() || strcasecmp(opt.proto.c_str(), protoName(p)) == 0) protos.push_back(Proto(p));
  if (algos.empty() || protos.empty()) {
    std::fprintf(stderr,
                 "baton-topo: --algo '%s' --proto '%s' leave nothing to simulate (Ring or Tree, Tree for allreduce "
                 "only; LL, LL128, Simple)\n",
                 opt.algo.c_str(), opt.proto.c_str());
    return 2;
  }
  const int n = m.nRanks, nch = (int)m.graph.channels.size();
  double chBw = 0;
  for (const ChannelGraph& g : m.graph.channels) chBw = chBw == 0 || g.bw < chBw ? g.bw : chBw;
  std::printf("# simulate %s: %s, %d host%s, %d ranks, %d channels (%.1f GB/s each, from the graph search)\n",
              opt.simulate.c_str(), m.source.c_str(), m.sys.nHosts, m.sys.nHosts > 1 ? "s" : "", n, nch, chBw);
  std::printf(
      "# model: baton's step schedule over the topology's links (latency + bytes/bandwidth, shared links\n"
      "# contend, FIFO credit of 8 steps) + NCCL's base latency per operation; float, sum%s\n",
      opt.splitTree ? "; trees split as NCCL runs them" : "");
  std::printf("#%13s %12s %6s %6s %5s %11s %11s %11s %6s %7s\n", "size", "count", "type", "redop", "root", "time(us)",
              "algbw(GB/s)", "busbw(GB/s)", "algo", "proto");
  for (size_t bytes = opt.minBytes; bytes <= opt.maxBytes; bytes *= opt.stepFactor) {
    struct Row {
      CollAlgo algo;
      Proto proto;
      double us;
    };
    std::vector<Row> rows;
    for (const CollAlgo a : algos)
      for (const Proto p : protos) {
        ScheduleSpec spec;
        spec.func = func, spec.algo = a, spec.proto = p, spec.bytes = bytes, spec.nChannels = nch;
        spec.splitTree = opt.splitTree;
        spec.layout.stepBytes[kProtoSimple] = 512 << 10;  // NCCL's buffer sizes / NCCL_STEPS
        spec.layout.stepBytes[kProtoLL] = 64 << 10;
        spec.layout.stepBytes[kProtoLL128] = 614400;
        SimSchedule sched;
        if (buildSchedule(m.graph, n, spec, &sched) != ncclSuccess) {
          std::fprintf(stderr, "baton-topo: %s\n", lastError());
          return 1;
        }
        const SimResult r = simulate(m.sys, sched, simParams(p, chBw));
        if (!r.error.empty()) {
          std::fprintf(stderr, "baton-topo: simulating %s/%s at %zu B: %s\n", algoName(a), protoName(p), bytes,
                       r.error.c_str());
          return 1;
        }
        rows.push_back({a, p, kBaseUs[p] + r.timeUs});
      }
    if (!opt.allPairs) {
      Row best = rows[0];
      for (const Row& r : rows)
        if (r.us < best.us) best = r;
      rows = {best};
    }
    const size_t count = bytes / collBytes(func, 1, sizeof(float), n);
    for (const Row& r : rows) {
      const double algbw = bytes / (r.us * 1e3);
      std::printf("%14zu %12zu %6s %6s %5d %11.2f %11.2f %11.2f %6s %7s\n", bytes, count, "float", "sum",
                  func == kFuncBroadcast || func == kFuncReduce ? 0 : -1, r.us, algbw, algbw * busFactor(func, n),
                  algoName(r.algo), protoName(r.proto));
    }
    if (bytes > opt.maxBytes / opt.stepFactor) break;
  }
  return 0;
}

}  // namespace batontopo

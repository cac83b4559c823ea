// --calibrate and --explain: the tuner's cost model, measured and shown (lesson 05).
//
// Calibration runs allreduce once per algorithm and protocol (stages ring-LL .. tree-Simple),
// fits time = latency + bytes / bandwidth to each curve, turns the fit into NCCL's terms (a cost
// per step and a bus bandwidth, so it carries over to other rank counts and collectives) and
// writes the tuning file the library loads at the next communicator init.
#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <string>

#include "baton/tuner.h"
#include "baton_perf.h"

namespace batonperf {
namespace {

std::string fmtUs(double us) {
  char b[32];
  if (us < 0) return "-";
  std::snprintf(b, sizeof b, us < 1000 ? "%.2f" : "%.0f", us);
  return b;
}

}  // namespace

namespace {

// One algorithm's three protocol curves: fit, corrections, and how the model's pick compares with
// the measurement. `steps`: what the model charges a step for (ring 2(n-1), tree 2 * depth);
// busFactor: bus bandwidth = algbw * busFactor (ring steps / n, tree 2: every byte goes up and down).
struct AlgoFit {
  double base[BATON_NUM_PROTOCOLS] = {}, hop[BATON_NUM_PROTOCOLS] = {}, busBw[BATON_NUM_PROTOCOLS] = {};
  double lat[BATON_NUM_PROTOCOLS] = {}, algBw[BATON_NUM_PROTOCOLS] = {};
  double corr[BATON_NUM_PROTOCOLS][BATON_TUNER_BUCKETS] = {};
  bool ok = true;  // every protocol's curve had enough sizes to fit
};

AlgoFit fitAlgo(const char* algo, const std::vector<Row>* rows, int steps, double busFactor) {
  AlgoFit f;
  std::printf("#  %-4s %-8s  %11s  %11s  -> %6s  %9s\n", "algo", "protocol", "latency(us)", "algbw(GB/s)", "hop_us",
              "busbw_GBs");
  for (int p = 0; p < BATON_NUM_PROTOCOLS; ++p) {
    std::vector<size_t> bytes;
    std::vector<double> us;
    for (const Row& r : rows[p]) bytes.push_back(r.bytes), us.push_back(r.oop.timeUs);
    if (batonTunerFitLine(bytes.data(), us.data(), (int)bytes.size(), &f.lat[p], &f.algBw[p]) != ncclSuccess) {
      std::fprintf(stderr, "baton-perf --calibrate: %s %s: %s\n", algo, batonProtocolName(p),
                   ncclGetLastError(nullptr));
      f.ok = false;
      continue;
    }
    f.hop[p] = f.lat[p] / steps;
    f.busBw[p] = f.algBw[p] * busFactor;
    std::printf("#  %-4s %-8s  %11.2f  %11.2f  -> %6.3f  %9.2f\n", algo, batonProtocolName(p), f.lat[p], f.algBw[p],
                f.hop[p], f.busBw[p]);
  }
  // Correction per size bucket: measured / line, interpolated (in log size) between measured
  // buckets and held flat beyond them.
  for (int p = 0; p < BATON_NUM_PROTOCOLS; ++p) {
    std::vector<int> have(BATON_TUNER_BUCKETS, 0);
    for (const Row& r : rows[p]) {
      const double line = f.lat[p] + double(r.bytes) / (1e3 * f.algBw[p]);
      const int b = batonTunerBucket(r.bytes);
      if (r.oop.timeUs > 0 && line > 0) f.corr[p][b] = std::clamp(r.oop.timeUs / line, 0.02, 50.0), have[b] = 1;
    }
    int prev = -1;
    for (int b = 0; b < BATON_TUNER_BUCKETS; ++b) {
      if (!have[b]) continue;
      for (int g = prev + 1; g < b; ++g)
        f.corr[p][g] =
            prev < 0 ? f.corr[p][b] : f.corr[p][prev] + (f.corr[p][b] - f.corr[p][prev]) * (g - prev) / (b - prev);
      prev = b;
    }
    for (int g = prev + 1; g < BATON_TUNER_BUCKETS; ++g) f.corr[p][g] = prev < 0 ? 1.0 : f.corr[p][prev];
  }
  return f;
}

double modelUs(const AlgoFit& f, int p, size_t bytes) {
  return (f.lat[p] + double(bytes) / (1e3 * f.algBw[p])) * f.corr[p][batonTunerBucket(bytes)];
}

}  // namespace

int writeCalibration(const Options& opt, const World& w, const std::vector<std::vector<Row>>& perStage,
                     double memcpyGBs, const char* pathKind, ncclComm_t comm) {
  const int n = w.nranks;
  if (n < 2) {
    std::fprintf(stderr, "baton-perf --calibrate: needs at least 2 ranks (there is no ring to time with 1)\n");
    return 2;
  }
  const int ringSteps = batonTunerSteps(comm, "allreduce", BATON_ALGO_RING);
  const int treeSteps = batonTunerSteps(comm, "allreduce", BATON_ALGO_TREE);
  std::printf(
      "# calibration of the '%s' table: fit of time = latency + bytes / algbw per algorithm and protocol (%d "
      "ranks; %d ring steps, %d tree steps)\n",
      pathKind, n, ringSteps, treeSteps);
  const AlgoFit fits[2] = {fitAlgo("Ring", &perStage[0], ringSteps, double(ringSteps) / n),
                           fitAlgo("Tree", &perStage[3], treeSteps, 2.0)};
  static const char* kNames[2] = {"Ring", "Tree"};
  std::printf("#\n#        size   fastest measured       model's pick\n");
  int agree = 0;
  const size_t nSizes = perStage[0].size();
  for (size_t i = 0; i < nSizes; ++i) {
    const size_t bytes = perStage[0][i].bytes;
    int best = 0, pick = 0;  // index a * 3 + p
    for (int k = 0; k < 6; ++k) {
      const int a = k / 3, p = k % 3;
      if (perStage[k][i].oop.timeUs < perStage[best][i].oop.timeUs) best = k;
      if (modelUs(fits[a], p, bytes) < modelUs(fits[pick / 3], pick % 3, bytes)) pick = k;
    }
    agree += best == pick || perStage[pick][i].oop.timeUs <= 1.1 * perStage[best][i].oop.timeUs;
    std::printf("  %12zu   %4s/%-6s %9s   %4s/%-6s %9s\n", bytes, kNames[best / 3], batonProtocolName(best % 3),
                fmtUs(perStage[best][i].oop.timeUs).c_str(), kNames[pick / 3], batonProtocolName(pick % 3),
                fmtUs(perStage[pick][i].oop.timeUs).c_str());
  }
  std::printf("# the model's pick is within 10%% of the fastest measured pair at %d of %zu sizes\n", agree, nSizes);

  char host[64] = "?";
  gethostname(host, sizeof host - 1);
  char when[32];
  const time_t now = time(nullptr);
  strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime(&now));
  char comment[512];
  std::snprintf(comment, sizeof comment,
                "written by baton-perf --calibrate on %s at %s\n%d ranks (%d processes x %d threads), allreduce "
                "%zu..%zu B, %d iterations per size\nsingle-thread memcpy bandwidth in that run: %.2f GB/s",
                host, when, n, w.nprocs, w.nthreads, opt.minBytes, opt.maxBytes, opt.iters, memcpyGBs);
  const char* path = batonTuningFilePath();
  if (!fits[0].ok || !fits[1].ok) {
    std::fprintf(stderr, "baton-perf --calibrate: too few sizes to fit (give -b and -e a range); %s not written\n",
                 path);
    return 1;
  }
  for (int a = 0; a < 2; ++a) {
    const AlgoFit& f = fits[a];
    if (ncclResult_t r = batonTunerWriteFileAlgo(path, pathKind, a == 0 ? BATON_ALGO_RING : BATON_ALGO_TREE, f.base,
                                                 f.hop, f.busBw, f.corr, comment);
        r != ncclSuccess) {
      std::fprintf(stderr, "baton-perf --calibrate: %s\n", ncclGetLastError(nullptr));
      return 1;
    }
  }
  std::printf(
      "# wrote the '%s' table (Ring and Tree) of %s (new communicators load it; BATON_TUNING_FILE=none "
      "ignores it)\n",
      pathKind, path);
  return 0;
}

// AlltoAll's choice is a measured rule, not the cost model: each size's block, algorithm and rule.
void printExplainAlltoAll(const Options& opt, ncclComm_t comm, int nranks) {
  std::printf("# tuner: alltoall over %d ranks, Bruck threshold %zu bytes (%s) (lesson 12)\n", nranks,
              batonTunerAlltoAllBruckBytes(comm), batonTunerAlltoAllBruckSource(comm));
  std::printf(
      "# (buffers outside windows; a receive buffer in a symmetric window, -R 2, takes 'window' on one host)\n");
  std::printf("#        size     per peer   choice     why\n");
  for (size_t bytes : sweepSizes(opt)) {
    const char *algo = nullptr, *why = nullptr;
    if (batonTunerChooseAlltoAll(comm, bytes / size_t(nranks), &algo, &why) != ncclSuccess) {
      std::printf("  %12zu   %s\n", bytes, ncclGetLastError(comm));
      continue;
    }
    std::printf("  %12zu %12zu   %-10s %s\n", bytes, bytes / size_t(nranks), algo, why);
  }
  std::fflush(stdout);
}

void printExplain(const Options& opt, ncclComm_t comm, int nranks) {
  if (opt.coll == Coll::AlltoAll) return printExplainAlltoAll(opt, comm, nranks);
  const CollDesc& d = collDesc(opt.coll);
  std::printf("# tuner: %s over %d ranks, '%s' table, model from %s\n", d.name, nranks, batonTunerPathName(comm),
              batonTunerModelSource(comm));
  int a0 = 0, p0 = 0, ch0 = 0;
  const char* plugin = nullptr;
  if (batonTunerChoosePlugin(comm, d.name, 8, &a0, &p0, &ch0, &plugin) == ncclSuccess && plugin)
    std::printf("# tuner plugin: %s (NCCL_TUNER_PLUGIN): its pick in the last column, channels in ()\n", plugin);
  std::printf("#        size   predicted (us) Ring: LL     LL128    Simple   Tree: LL     LL128    Simple   choice%s\n",
              plugin ? "       plugin" : "");
  for (size_t bytes : sweepSizes(opt)) {
    double ring[BATON_NUM_PROTOCOLS], tree[BATON_NUM_PROTOCOLS], us = 0;
    int algo = -1, proto = -1;
    if (batonTunerPredictAlgo(comm, d.name, bytes, BATON_ALGO_RING, ring) != ncclSuccess ||
        batonTunerPredictAlgo(comm, d.name, bytes, BATON_ALGO_TREE, tree) != ncclSuccess ||
        batonTunerChoose(comm, d.name, bytes, &algo, &proto, &us) != ncclSuccess) {
      std::printf("  %12zu   %s\n", bytes, ncclGetLastError(comm));
      continue;
    }
    std::printf(plugin ? "  %12zu   %19s %9s %9s %12s %9s %9s   %-12s" : "  %12zu   %19s %9s %9s %12s %9s %9s   %s",
                bytes, fmtUs(ring[0]).c_str(), fmtUs(ring[1]).c_str(), fmtUs(ring[2]).c_str(), fmtUs(tree[0]).c_str(),
                fmtUs(tree[1]).c_str(), fmtUs(tree[2]).c_str(),
                (std::string(batonAlgorithmName(algo)) + "/" + batonProtocolName(proto)).c_str());
    int pa = algo, pp = proto, pch = 0;
    if (plugin && batonTunerChoosePlugin(comm, d.name, bytes, &pa, &pp, &pch, nullptr) == ncclSuccess)
      std::printf(" %s/%s%s", batonAlgorithmName(pa), batonProtocolName(pp),
                  pch > 0 ? (" (" + std::to_string(pch) + ")").c_str() : "");
    std::printf("\n");
  }
  std::fflush(stdout);
}

}  // namespace batonperf

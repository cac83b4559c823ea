// --calibrate and --explain: the tuner's cost model, measured and shown (lesson 05).
//
// Calibration runs allreduce once per protocol (stages LL, LL128, Simple), fits
// time = latency + bytes / bandwidth to each protocol's curve, turns the fit into NCCL's terms
// (a cost per ring step and a bus bandwidth, so it carries over to other rank counts and
// collectives) and writes the tuning file the library loads at the next communicator init.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <string>
#include <unistd.h>

#include "baton/tuner.h"
#include "baton_perf.h"

namespace batonperf {
namespace {

// Least squares on relative error: minimise sum(((lat + bytes * x) / t - 1)^2), x = 1 / bandwidth.
// Relative error, so microsecond sizes count as much as the 64 MiB ones.
void fitLatencyBandwidth(const std::vector<Row>& rows, double* latUs, double* usPerByte) {
  double suu = 0, suv = 0, svv = 0, su = 0, sv = 0;
  for (const Row& r : rows) {
    if (r.oop.timeUs <= 0) continue;
    const double u = 1.0 / r.oop.timeUs, v = double(r.bytes) / r.oop.timeUs;
    suu += u * u, suv += u * v, svv += v * v, su += u, sv += v;
  }
  const double det = suu * svv - suv * suv;
  double lat = det != 0 ? (su * svv - sv * suv) / det : 0, x = det != 0 ? (suu * sv - suv * su) / det : 0;
  if (lat < 0) lat = 0, x = svv > 0 ? sv / svv : 0;  // constrained fits: both terms non-negative
  if (x <= 0) x = 1e-9, lat = suu > 0 ? (su - x * suv) / suu : 0;
  *latUs = lat;
  *usPerByte = x;
}

std::string fmtUs(double us) {
  char b[32];
  if (us < 0) return "-";
  std::snprintf(b, sizeof b, us < 1000 ? "%.2f" : "%.0f", us);
  return b;
}

}  // namespace

int writeCalibration(const Options& opt, const World& w, const std::vector<std::vector<Row>>& perStage,
                     double memcpyGBs, const char* pathKind) {
  const int n = w.nranks;
  if (n < 2) {
    std::fprintf(stderr, "baton-perf --calibrate: needs at least 2 ranks (there is no ring to time with 1)\n");
    return 2;
  }
  const int steps = 2 * (n - 1);  // ring allreduce
  double base[BATON_NUM_PROTOCOLS] = {}, hop[BATON_NUM_PROTOCOLS], busBw[BATON_NUM_PROTOCOLS], lat[BATON_NUM_PROTOCOLS];
  std::printf("# calibration of the '%s' table: fit of time = latency + bytes / algbw per protocol (%d ranks, %d ring "
              "steps)\n",
              pathKind, n, steps);
  std::printf("#  protocol  latency(us)  algbw(GB/s)  -> hop_us  busbw_GBs\n");
  for (int p = 0; p < BATON_NUM_PROTOCOLS; ++p) {
    double x;
    fitLatencyBandwidth(perStage[p], &lat[p], &x);
    const double algBw = 1.0 / (1e3 * x);
    hop[p] = lat[p] / steps;
    busBw[p] = algBw * steps / n;
    std::printf("#  %-8s  %11.2f  %11.2f  -> %6.3f  %9.2f\n", batonProtocolName(p), lat[p], algBw, hop[p], busBw[p]);
  }
  // Correction per size bucket: measured / line, interpolated (in log size) between measured
  // buckets and held flat beyond them.
  double corr[BATON_NUM_PROTOCOLS][BATON_TUNER_BUCKETS];
  for (int p = 0; p < BATON_NUM_PROTOCOLS; ++p) {
    std::vector<int> have(BATON_TUNER_BUCKETS, 0);
    for (const Row& r : perStage[p]) {
      const double line = lat[p] + double(r.bytes) / (1e3 * busBw[p] * n / steps);
      const int b = batonTunerBucket(r.bytes);
      if (r.oop.timeUs > 0 && line > 0) corr[p][b] = std::clamp(r.oop.timeUs / line, 0.02, 50.0), have[b] = 1;
    }
    int prev = -1;
    for (int b = 0; b < BATON_TUNER_BUCKETS; ++b) {
      if (!have[b]) continue;
      for (int g = prev + 1; g < b; ++g)
        corr[p][g] = prev < 0 ? corr[p][b] : corr[p][prev] + (corr[p][b] - corr[p][prev]) * (g - prev) / (b - prev);
      prev = b;
    }
    for (int g = prev + 1; g < BATON_TUNER_BUCKETS; ++g) corr[p][g] = prev < 0 ? 1.0 : corr[p][prev];
  }
  std::printf("#\n#        size   measured LL / LL128 / Simple (us)      model LL / LL128 / Simple (us)  best  model\n");
  int agree = 0;
  for (size_t i = 0; i < perStage[0].size(); ++i) {
    const double bytes = double(perStage[0][i].bytes);
    int best = 0, pick = 0;
    double model[BATON_NUM_PROTOCOLS];
    for (int p = 0; p < BATON_NUM_PROTOCOLS; ++p) {
      model[p] = (lat[p] + bytes / (1e3 * busBw[p] * n / steps)) * corr[p][batonTunerBucket(perStage[0][i].bytes)];
      if (perStage[p][i].oop.timeUs < perStage[best][i].oop.timeUs) best = p;
      if (model[p] < model[pick]) pick = p;
    }
    agree += best == pick || perStage[pick][i].oop.timeUs <= 1.1 * perStage[best][i].oop.timeUs;
    std::printf("  %12zu   %9s %9s %9s   %9s %9s %9s   %6s %6s\n", perStage[0][i].bytes,
                fmtUs(perStage[0][i].oop.timeUs).c_str(), fmtUs(perStage[1][i].oop.timeUs).c_str(),
                fmtUs(perStage[2][i].oop.timeUs).c_str(), fmtUs(model[0]).c_str(), fmtUs(model[1]).c_str(),
                fmtUs(model[2]).c_str(), batonProtocolName(best), batonProtocolName(pick));
  }
  std::printf("# the model's pick is within 10%% of the fastest measured protocol at %d of %zu sizes\n", agree,
              perStage[0].size());

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
  if (ncclResult_t r = batonTunerWriteFile(path, pathKind, base, hop, busBw, corr, comment); r != ncclSuccess) {
    std::fprintf(stderr, "baton-perf --calibrate: %s\n", ncclGetLastError(nullptr));
    return 1;
  }
  std::printf("# wrote the '%s' table of %s (new communicators load it; BATON_TUNING_FILE=none ignores it)\n",
              pathKind, path);
  return 0;
}

void printExplain(const Options& opt, ncclComm_t comm, int nranks) {
  const CollDesc& d = collDesc(opt.coll);
  std::printf("# tuner: %s over %d ranks, '%s' table, model from %s\n", d.name, nranks, batonTunerPathName(comm),
              batonTunerModelSource(comm));
  std::printf("#        size    predicted LL     LL128    Simple (us)   choice\n");
  for (size_t bytes : sweepSizes(opt)) {
    double us[BATON_NUM_PROTOCOLS];
    int chosen = -1;
    if (batonTunerPredict(comm, d.name, bytes, us, &chosen) != ncclSuccess) {
      std::printf("  %12zu   %s\n", bytes, ncclGetLastError(comm));
      continue;
    }
    std::printf("  %12zu   %12s %9s %9s         %s\n", bytes, fmtUs(us[0]).c_str(), fmtUs(us[1]).c_str(),
                fmtUs(us[2]).c_str(), batonProtocolName(chosen));
  }
  std::fflush(stdout);
}

}  // namespace batonperf

// Output in nccl-tests 2.19's format: "#" header lines, one row per size with the same columns and
// number formats (with -I the per-iteration columns, with -S a timestamp), and the "Out of bounds
// values" / "Avg bus bandwidth" footer. Started under an nccl-tests name (all_reduce_perf), the
// header and footer are nccl-tests' own lines. Only the reporting rank calls these.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "baton/launch.h"
#include "baton_perf.h"

namespace batonperf {
namespace {

// nccl-tests' number columns: two decimals while they fit in `width`, then fewer, then exponent.
std::string fitted(double v, int width) {
  char buf[32];
  for (const char* fmt : {"%*.2f", "%*.1f", "%*.0f"})
    if (std::snprintf(buf, sizeof buf, fmt, width, v) <= width) return buf;
  std::snprintf(buf, sizeof buf, width >= 7 ? "%*.1e" : "%*.0e", width, v);
  return buf;
}

std::string timeText(double us) { return fitted(us, 7); }

std::string wrongText(const Half& h) {
  if (!h.checked) return "   N/A";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%6g", h.wrong);
  return buf;
}

void printRowStart(const Row& r) {
  std::printf("%12zu  %12zu  %8s  %6s  %6d", r.bytes, r.count, typeInfo(r.type).name, opName(r.op), r.root);
}

// `text` centred in a field of `width` characters.
std::string centred(const std::string& text, size_t width) {
  if (text.size() >= width) return text;
  const size_t left = (width - text.size() + 1) / 2;
  return std::string(left, ' ') + text + std::string(width - text.size() - left, ' ');
}

// A stage's name in the table: its own for named stages, "stageN" for raw KEY=VAL specs.
std::string stageLabel(const Options& opt, size_t s) {
  const Stage& st = opt.stages[s];
  if (st.name.find('=') == std::string::npos) return st.name;
  return "stage" + std::to_string(s + 1);
}

constexpr const char* kTimeFormat = "%Y-%m-%d %H:%M:%S";  // -S, and the JSON file's times

}  // namespace

std::string nowText() {
  char buf[64];
  const time_t t = time(nullptr);
  tm local;
  localtime_r(&t, &local);
  strftime(buf, sizeof buf, kTimeFormat, &local);
  return buf;
}

// 64 MiB memcpy, one warm-up, median of 5, in GB/s (1e9 B/s).
double measureMemcpy() {
  const size_t bytes = size_t(64) << 20;
  char* src = static_cast<char*>(std::malloc(bytes));
  char* dst = static_cast<char*>(std::malloc(bytes));
  if (!src || !dst) return 0.0;
  std::memset(src, 1, bytes);
  std::memset(dst, 2, bytes);
  std::memcpy(dst, src, bytes);
  std::vector<double> secs;
  for (int i = 0; i < 5; ++i) {
    src[i] = char(i);  // keep the copies from being folded together
    const auto t0 = std::chrono::steady_clock::now();
    std::memcpy(dst, src, bytes);
    secs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  volatile char sink = dst[bytes / 2];
  (void)sink;
  std::free(src);
  std::free(dst);
  std::sort(secs.begin(), secs.end());
  return double(bytes) / secs[2] / 1e9;
}

bool initBenchRanks(int threads, BenchRanks* out) {
  batonLaunchInfo launch;
  if (batonGetLaunchInfo(&launch) != ncclSuccess) {
    std::fprintf(stderr, "baton-perf: %s\n", ncclGetLastError(nullptr));
    return false;
  }
  out->nprocs = launch.nranks, out->proc = launch.rank, out->nRanks = launch.nranks * threads;
  if (out->nprocs == 1 && !std::getenv("NCCL_COMM_ID")) setenv("NCCL_SOCKET_IFNAME", "lo", 0);
  ncclUniqueId id;
  PERFCHECK(ncclGetUniqueId(&id));
  out->comms.assign(threads, nullptr);
  PERFCHECK(ncclGroupStart());
  for (int t = 0; t < threads; ++t)
    PERFCHECK(ncclCommInitRank(&out->comms[t], out->nRanks, id, out->proc * threads + t));
  PERFCHECK(ncclGroupEnd());
  return true;
}

void printMemcpyLine(double gbs) {
  std::printf("# single-thread memcpy bandwidth: %.2f GB/s (64 MiB buffers, median of 5)\n", gbs);
  std::fflush(stdout);
}

void Report::header(double memcpyGBs, const std::vector<RankInfo>& ranks) const {
  int version = 0;
  PERFCHECK(ncclGetVersion(&version));
  const bool factor = opt_.stepFactor > 1;
  if (opt_.testsMode) {
    // nccl-tests' lines, so that scripts reading them find what they look for; "+baton" says whose.
    std::printf("# nccl-tests version %s+baton nccl-headers=%d nccl-library=%d\n", kNcclTestsVersion, NCCL_VERSION_CODE,
                version);
    std::printf("# Collective test starting: %s\n", opt_.program.c_str());
  } else {
    std::printf("# baton-perf %s: nranks %d (%d processes x %d threads), nccl-headers=%d nccl-library=%d\n",
                collDesc(opt_.coll).name, w_.nranks, w_.nprocs, w_.nthreads, NCCL_VERSION_CODE, version);
  }
  std::printf(
      "# nThread %d nGpus 1 minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d iters: %d "
      "agg iters: %d validation: %d graph: 0 unalign: %d\n",
      w_.nthreads, opt_.minBytes, opt_.maxBytes, factor ? size_t(opt_.stepFactor) : opt_.stepBytes,
      factor ? "factor" : "bytes", opt_.warmup, opt_.iters, opt_.aggIters, opt_.check, opt_.unalign);
  if (opt_.blocking == 1) std::printf("# Blocking Enabled: wait and barrier after each inner iteration (-m) \n");
  if (opt_.blocking == 2) std::printf("# Blocking Enabled: wait after each inner iteration (-m), no barrier \n");
  if (opt_.blocking == 3)
    std::printf("# Blocking Enabled: wait and barrier after each outer iteration (-n); time excludes barrier \n");
  if (opt_.perIterTiming) {
    std::printf("# Per-Iteration Report: host clock timing; i_* uses max over ranks");
    if (opt_.perIterSkip) std::printf("; summary skips first %d iterations", opt_.perIterSkip);
    std::printf(" \n");
  }
  if (opt_.parallelInit) std::printf("# Parallel Init Enabled: threads call into NcclInitRank concurrently \n");
  if (!opt_.testsMode) printMemcpyLine(memcpyGBs);
  std::printf("#\n");
  if (opt_.testsMode) std::printf("# Using devices\n");
  for (size_t r = 0; r < ranks.size(); ++r)
    std::printf("#  Rank %2zu Group %2d Pid %6d on %10s device %2d [cpu] host memory\n", r, 0, ranks[r].pid,
                ranks[r].host, ranks[r].device);
  if (!opt_.testsMode) std::printf("#\n");
  if (opt_.compare()) {
    std::printf("# --compare: %zu stages, out-of-place only, fresh communicators per stage\n", opt_.stages.size());
    for (size_t s = 0; s < opt_.stages.size(); ++s)
      std::printf("#   %-12s %s\n", stageLabel(opt_, s).c_str(), stageEnvText(opt_.stages[s]).c_str());
    std::printf("#\n");
  }
  std::fflush(stdout);
}

void Report::tableHeader() const {
  const char* t = opt_.cputime ? "cputime" : "time";
  const int tsPad = opt_.timestamps ? 19 : 0;
  const char* tsLabel = opt_.timestamps ? "timestamp" : "";
  const char* tsUnit = opt_.timestamps ? kTimeFormat : "";
  std::printf("#\n");
  if (opt_.perIterTiming) {
    std::printf(
        "# %10s  %12s  %8s  %6s  %6s              out-of-place (+ per-iteration)                        "
        "        in-place (+ per-iteration)\n",
        "", "", "", "", "");
    std::printf(
        "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s  %7s  %6s  %6s  %6s  %7s  %7s  "
        "%7s  %7s %*s\n",
        "size", "count", "type", "redop", "root", t, "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99", "i_cv%", t,
        "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99", "i_cv%", tsPad, tsLabel);
    std::printf(
        "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s  %7s  %6s  %6s  %6s  %7s  %7s  "
        "%7s  %7s %*s\n",
        "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)", "(us)",
        "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)", tsPad, tsUnit);
  } else {
    std::printf("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "",
                "", "", "");
    std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n", "size", "count", "type",
                "redop", "root", t, "algbw", "busbw", "#wrong", t, "algbw", "busbw", "#wrong", tsPad, tsLabel);
    std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n", "(B)", "(elements)", "",
                "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", tsPad, tsUnit);
  }
  std::fflush(stdout);
}

void Report::row(const Row& r) {
  printRowStart(r);
  for (const Half* h : {&r.oop, &r.ip}) {
    std::printf("  %7s  %6s  %6s  %6s", timeText(h->timeUs).c_str(), fitted(h->algbw, 6).c_str(),
                fitted(h->busbw, 6).c_str(), wrongText(*h).c_str());
    if (opt_.perIterTiming)
      std::printf("  %7s  %7s  %7s  %7s", fitted(h->iter.minUs, 7).c_str(), fitted(h->iter.maxUs, 7).c_str(),
                  fitted(h->iter.p99Us, 7).c_str(), fitted(h->iter.cvPct, 7).c_str());
    bwSum_ += h->busbw;
    ++bwCount_;
  }
  if (opt_.timestamps) std::printf("%21s", nowText().c_str());
  std::printf("\n");
  std::fflush(stdout);
  if (json_) json_->row(r, opt_);
}

void Report::skipped(const std::string& why) const {
  std::printf("%s\n", why.c_str());
  std::fflush(stdout);
}

void Report::footer(double wrongTotal) {
  const double avg = avgBusBw();
  const char* minBw = std::getenv("NCCL_TESTS_MIN_BW");  // nccl-tests: FAILED below 0.9x of it
  const double floor = minBw ? std::atof(minBw) : -1;
  std::printf("# %-20s : %.0f %s\n", "Out of bounds values", wrongTotal, wrongTotal > 0 ? "FAILED" : "OK");
  std::printf("# %-20s : %g %s\n", "Avg bus bandwidth", avg, floor < 0 ? "" : avg < floor * 0.9 ? "FAILED" : "OK");
  std::printf("#\n");
  if (opt_.testsMode) std::printf("# Collective test concluded: %s\n#\n", opt_.program.c_str());
  std::fflush(stdout);
  if (json_) json_->footer(wrongTotal, avg, floor);
}

void Report::compareTable(const std::vector<std::vector<Row>>& rowsPerStage) const {
  const size_t nStages = rowsPerStage.size();
  std::string names = "#" + std::string(51, ' ');
  std::string cols = "#       size         count      type   redop    root";
  std::string units = "#        (B)    (elements)" + std::string(26, ' ');
  for (size_t s = 0; s < nStages; ++s) {
    names += centred(stageLabel(opt_, s), 24);
    cols += "     time   busbw #wrong";
    units += "     (us)  (GB/s)       ";
  }
  while (!names.empty() && names.back() == ' ') names.pop_back();
  while (!units.empty() && units.back() == ' ') units.pop_back();
  std::printf("%s\n%s\n%s\n", names.c_str(), cols.c_str(), units.c_str());

  double wrongTotal = 0;
  std::vector<double> bwSum(nStages, 0.0);
  const size_t nRows = nStages ? rowsPerStage[0].size() : 0;
  for (size_t i = 0; i < nRows; ++i) {
    printRowStart(rowsPerStage[0][i]);
    for (size_t s = 0; s < nStages; ++s) {
      const Half& h = rowsPerStage[s][i].oop;
      std::printf("  %7s  %6s %6s", timeText(h.timeUs).c_str(), fitted(h.busbw, 6).c_str(), wrongText(h).c_str());
      bwSum[s] += h.busbw;
      wrongTotal += h.wrong;
    }
    std::printf("\n");
  }
  std::printf("# Out of bounds values : %.0f %s\n", wrongTotal, wrongTotal > 0 ? "FAILED" : "OK");
  std::printf("# Avg bus bandwidth    :");
  for (size_t s = 0; s < nStages; ++s)
    std::printf("%s %s %g", s ? "," : "", stageLabel(opt_, s).c_str(), nRows ? bwSum[s] / nRows : 0.0);
  std::printf("\n#\n");
  std::fflush(stdout);
}

}  // namespace batonperf

// Output in nccl-tests' format: "#" header lines, one row per size with the same column widths
// (size 12, count 14, type 10, redop 8, root 8; per half time 9, algbw 8, busbw 8, #wrong 7), and the
// "Out of bounds values" / "Avg bus bandwidth" footer. Only the reporting rank calls these.
#include <unistd.h>

#include <cstdio>
#include <string>

#include "baton_perf.h"

namespace batonperf {
namespace {

// nccl-tests' time column: fewer decimals as the time grows, always 7 wide.
std::string timeText(double us) {
  char buf[32];
  if (us >= 10000.0) std::snprintf(buf, sizeof buf, "%7.0f", us);
  else if (us >= 100.0) std::snprintf(buf, sizeof buf, "%7.1f", us);
  else std::snprintf(buf, sizeof buf, "%7.2f", us);
  return buf;
}

std::string wrongText(const Half& h) {
  if (!h.checked) return "N/A";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", h.wrong);
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

}  // namespace

void printMemcpyLine(double gbs) {
  std::printf("# single-thread memcpy bandwidth: %.2f GB/s (64 MiB buffers, median of 5)\n", gbs);
  std::fflush(stdout);
}

void Report::header(double memcpyGBs, const std::vector<RankInfo>& ranks) const {
  int version = 0;
  PERFCHECK(ncclGetVersion(&version));
  const char* name = collDesc(opt_.coll).name;
  std::printf("# baton-perf %s: nranks %d (%d processes x %d threads), nccl-headers=%d nccl-library=%d\n", name,
              w_.nranks, w_.nprocs, w_.nthreads, NCCL_VERSION_CODE, version);
  const bool factor = opt_.stepFactor > 1;
  std::printf(
      "# nThread %d nGpus 1 minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d iters: %d "
      "agg iters: 1 validation: %d graph: 0\n",
      w_.nthreads, opt_.minBytes, opt_.maxBytes, factor ? size_t(opt_.stepFactor) : opt_.stepBytes,
      factor ? "factor" : "bytes", opt_.warmup, opt_.iters, opt_.check ? 1 : 0);
  printMemcpyLine(memcpyGBs);
  std::printf("#\n");
  for (size_t r = 0; r < ranks.size(); ++r)
    std::printf("#  Rank %2zu Group %2d Pid %6d on %10s device %2d [cpu] host memory\n", r, 0, ranks[r].pid,
                ranks[r].host, ranks[r].device);
  std::printf("#\n");
  if (opt_.compare()) {
    std::printf("# --compare: %zu stages, out-of-place only, fresh communicators per stage\n", opt_.stages.size());
    for (size_t s = 0; s < opt_.stages.size(); ++s)
      std::printf("#   %-12s %s\n", stageLabel(opt_, s).c_str(), stageEnvText(opt_.stages[s]).c_str());
    std::printf("#\n");
  }
  std::fflush(stdout);
}

void Report::tableHeader() const {
  std::printf(
      "#                                                              out-of-place                       in-place\n");
  std::printf(
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
      "#wrong\n");
  std::printf(
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  "
      "(GB/s)\n");
  std::fflush(stdout);
}

void Report::row(const Row& r) {
  printRowStart(r);
  for (const Half* h : {&r.oop, &r.ip}) {
    std::printf("  %7s  %6.2f  %6.2f  %5s", timeText(h->timeUs).c_str(), h->algbw, h->busbw, wrongText(*h).c_str());
    bwSum_ += h->busbw;
    ++bwCount_;
  }
  std::printf("\n");
  std::fflush(stdout);
}

void Report::footer(double wrongTotal) const {
  std::printf("# Out of bounds values : %.0f %s\n", wrongTotal, wrongTotal > 0 ? "FAILED" : "OK");
  std::printf("# Avg bus bandwidth    : %g\n", bwCount_ ? bwSum_ / bwCount_ : 0.0);
  std::printf("#\n");
  std::fflush(stdout);
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
      std::printf("  %7s  %6.2f  %5s", timeText(h.timeUs).c_str(), h.busbw, wrongText(h).c_str());
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

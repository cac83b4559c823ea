// -J FILE: the JSON file nccl-tests 2.19 writes (its src/util.cu), with the same keys in the same
// order, so that scripts reading nccl-tests' JSON read baton's:
//
//   {"version": 3, "start_time", "args": [argv], "env": ["K=V", ...], "nccl_version",
//    "config": {"nthreads", "ngpus", "minimum_bytes", "maximum_bytes", "step_factor" | "step_bytes",
//               "warmup_iters", "iterations", "aggregated_iterations", "validation", "graph",
//               "blocking_collectives", "per_iter_timing", "per_iter_skip", "parallel_init",
//               "devices": [{"rank", "group", "pid", "hostname", "device", "device_hex", "device_info"}]},
//    "results": [{"size", "count", "type", "redop", "root",
//                 "out_of_place": {"time" | "cpu_time", "alg_bw", "bus_bw", "nwrong"},
//                 ["out_of_place_per_iter": {...},] "in_place": {...}, ["in_place_per_iter": {...},]
//                 "actual_iterations", "experiment_name"}],
//    "out_of_bounds": {"count", "okay"}, "average_bus_bandwidth": {"bandwidth", "okay"},
//    "errors": [...], "end_time"}
//
// Two of nccl-tests' habits are kept because readers depend on them: booleans are the strings
// "true"/"false", and "root" is the 6-wide text of the root column ("     0"). One is not: "env"
// keeps every variable's name, but the value of one whose name looks secret (TOKEN, SECRET,
// PASSWORD, KEY, CREDENTIAL, in any case) is "<redacted>", since result files are shared.
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "baton_perf.h"

extern char** environ;

namespace batonperf {

// "NAME=value" as -J writes it: the value replaced by <redacted> when the name looks secret.
std::string redactedEnvEntry(const char* entry) {
  const char* eq = std::strchr(entry, '=');
  std::string name(entry, eq ? size_t(eq - entry) : std::strlen(entry));
  std::string upper = name;
  for (char& c : upper) c = (char)std::toupper((unsigned char)c);
  for (const char* word : {"TOKEN", "SECRET", "PASSWORD", "PASSWD", "KEY", "CREDENTIAL"})
    if (upper.find(word) != std::string::npos) return name + "=<redacted>";
  return entry;
}

bool JsonReport::open(const std::string& path, const Options& opt, int ncclVersion) {
  std::string tryPath = path;
  for (int n = 0; !(f_ = std::fopen(tryPath.c_str(), "wx")); ++n) {  // never overwrite: path.0, path.1, ...
    if (errno != EEXIST) {
      std::printf("# skipping json output; %s not accessible (%s)\n", tryPath.c_str(), std::strerror(errno));
      return false;
    }
    tryPath = path + "." + std::to_string(n);
  }
  std::printf("# Writing JSON output to %s\n", tryPath.c_str());
  std::fputc('{', f_);
  key("version"), num(3);
  key("start_time"), str(nowText());
  key("args"), std::fputc('[', f_), first_ = true;
  for (const std::string& a : opt.argv) sep(), str(a);
  std::fputc(']', f_), first_ = false;
  key("env"), std::fputc('[', f_), first_ = true;
  for (char** e = environ; *e; ++e) sep(), str(redactedEnvEntry(*e));
  std::fputc(']', f_), first_ = false;
  key("nccl_version"), num(ncclVersion);
  return true;
}

void JsonReport::config(const Options& opt, const World& w, const std::vector<RankInfo>& ranks) {
  auto flag = [&](bool v) { str(v ? "true" : "false"); };
  key("config"), std::fputc('{', f_), first_ = true;
  key("nthreads"), num(w.nthreads);
  key("ngpus"), num(1);
  key("minimum_bytes"), num(double(opt.minBytes));
  key("maximum_bytes"), num(double(opt.maxBytes));
  if (opt.stepFactor > 1) key("step_factor"), num(opt.stepFactor);
  else key("step_bytes"), num(double(opt.stepBytes));
  key("warmup_iters"), num(opt.warmup);
  key("iterations"), num(opt.iters);
  key("aggregated_iterations"), num(opt.aggIters);
  key("validation"), num(opt.check);
  key("graph"), num(0);
  key("blocking_collectives"), flag(opt.blocking != 0);
  key("per_iter_timing"), flag(opt.perIterTiming != 0);
  key("per_iter_skip"), num(opt.perIterSkip);
  key("parallel_init"), flag(opt.parallelInit != 0);
  key("devices"), std::fputc('[', f_), first_ = true;
  for (size_t r = 0; r < ranks.size(); ++r) {
    sep(), std::fputc('{', f_), first_ = true;
    key("rank"), num(double(r));
    key("group"), num(0);
    key("pid"), num(ranks[r].pid);
    key("hostname"), str(ranks[r].host);
    key("device"), num(ranks[r].device);
    key("device_hex"), str("cpu");
    key("device_info"), str("host memory");
    std::fputc('}', f_), first_ = false;
  }
  std::fputs("]}", f_), first_ = false;
  key("results"), std::fputc('[', f_), first_ = true;
}

void JsonReport::row(const Row& r, const Options& opt) {
  char root[16];
  std::snprintf(root, sizeof root, "%6d", r.root);
  sep(), std::fputc('{', f_), first_ = true;
  key("size"), num(double(r.bytes));
  key("count"), num(double(r.count));
  key("type"), str(typeInfo(r.type).name);
  key("redop"), str(opName(r.op));
  key("root"), str(root);
  const Half* halves[2] = {&r.oop, &r.ip};
  for (int i = 0; i < 2; ++i) {
    const Half& h = *halves[i];
    key(i == 0 ? "out_of_place" : "in_place"), std::fputc('{', f_), first_ = true;
    key(opt.cputime ? "cpu_time" : "time"), num(h.timeUs);
    key("alg_bw"), num(h.algbw);
    key("bus_bw"), num(h.busbw);
    key("nwrong");
    if (h.checked) num(h.wrong);
    else std::fputs("null", f_);
    std::fputc('}', f_), first_ = false;
    if (!opt.perIterTiming) continue;
    const PerIter& it = h.iter;
    key(i == 0 ? "out_of_place_per_iter" : "in_place_per_iter"), std::fputc('{', f_), first_ = true;
    key("skipped_iterations"), num(opt.perIterSkip);
    key("min_us"), num(it.minUs);
    key("max_us"), num(it.maxUs);
    key("avg_us"), num(it.avgUs);
    key("p99_us"), num(it.p99Us);
    key("stdev_us"), num(it.stdevUs);
    key("cv_pct"), num(it.cvPct);
    key("times_us"), std::fputc('[', f_), first_ = true;
    for (double t : it.timesUs) sep(), num(t);
    std::fputs("]}", f_), first_ = false;
  }
  key("actual_iterations"), num(opt.iters);
  key("experiment_name"), str("");
  std::fputc('}', f_), first_ = false;
}

void JsonReport::footer(double wrong, double avgBusBw, double minBw) {
  std::fputc(']', f_), first_ = false;  // results
  key("out_of_bounds"), std::fputc('{', f_), first_ = true;
  key("count"), num(wrong);
  key("okay"), str(wrong == 0 ? "true" : "false");
  std::fputc('}', f_), first_ = false;
  key("average_bus_bandwidth"), std::fputc('{', f_), first_ = true;
  key("bandwidth"), num(avgBusBw);
  key("okay"), str(minBw < 0 ? "unchecked" : avgBusBw >= minBw * 0.9 ? "true" : "false");
  std::fputc('}', f_), first_ = false;
}

void JsonReport::close(const std::string& error) {
  if (!f_) return;
  key("errors"), std::fputc('[', f_), first_ = true;
  if (!error.empty()) sep(), str(error);
  std::fputc(']', f_), first_ = false;
  key("end_time"), str(nowText());
  std::fputs("}\n", f_);
  std::fclose(f_);
  f_ = nullptr;
}

JsonReport::~JsonReport() {
  if (f_) std::fclose(f_);
}

void JsonReport::sep() {
  if (!first_) std::fputc(',', f_);
  first_ = false;
}

void JsonReport::key(const char* k) {
  sep();
  str(k);
  std::fputc(':', f_);
  first_ = true;  // the value follows without a comma
}

void JsonReport::str(const std::string& v) {
  std::fputc('"', f_);
  for (unsigned char c : v) {
    if (c == '"' || c == '\\') std::fputc('\\', f_), std::fputc(c, f_);
    else if (c < 0x20) std::fprintf(f_, "\\u%04x", c);
    else std::fputc(c, f_);
  }
  std::fputc('"', f_);
  first_ = false;
}

void JsonReport::num(double v) {
  if (!std::isfinite(v)) str("nan");  // as nccl-tests writes a NaN
  else if (v == std::floor(v) && std::fabs(v) < 1e15) std::fprintf(f_, "%.0f", v);
  else std::fprintf(f_, "%f", v);
  first_ = false;
}

}  // namespace batonperf

// Command line: nccl-tests' flags (same letters, long names and defaults) plus baton's --compare
// and --memcpy. Bad input prints one clear line on stderr and exits with status 2.
#include <CLI/CLI.hpp>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "baton_perf.h"

namespace batonperf {
namespace {

// "8", "64K", "1M", "2G", "4KB", "1MiB": binary units. False if not a size or if it overflows.
bool parseSize(const std::string& s, size_t* out) {
  if (s.empty() || s[0] < '0' || s[0] > '9') return false;
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (errno) return false;
  std::string suffix(end);
  for (char& ch : suffix) ch = char(std::toupper(static_cast<unsigned char>(ch)));
  if (suffix.size() > 1 && (suffix.substr(1) == "B" || suffix.substr(1) == "IB")) suffix.resize(1);
  int shift = 0;
  if (suffix == "K") shift = 10;
  else if (suffix == "M") shift = 20;
  else if (suffix == "G") shift = 30;
  else if (suffix == "T") shift = 40;
  else if (!suffix.empty() && suffix != "B") return false;
  if (shift && v > (~0ull >> shift)) return false;
  *out = size_t(v << shift);
  return true;
}

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t comma = s.find(',', start);
    out.push_back(s.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

int usageError(const std::string& msg) {
  std::fprintf(stderr, "baton-perf: %s\nRun with --help for more information.\n", msg.c_str());
  return 2;
}

std::string typeNameList() {
  std::string s;
  for (ncclDataType_t t : allTypes()) s += std::string(typeInfo(t).name) + " ";
  return s + "all";
}

}  // namespace

int parseOptions(int argc, char** argv, Options* opt) {
  CLI::App app{
      "baton-perf: nccl-tests-style bandwidth sweeps over baton's collectives.\n"
      "Ranks = processes (BATON_NRANKS, set by baton-run) x threads (-t).",
      "baton-perf"};
  std::string coll, minb = "32M", maxb = "32M", stepb = "1M", op = "sum", dtype = "float", compare;
  int factor = 0;
  app.add_option("collective", coll,
                 "allreduce allgather reducescatter broadcast reduce alltoall sendrecv gather scatter "
                 "(nccl-tests' all_reduce etc. too)")
      ->required();
  app.add_option("-b,--minbytes", minb, "smallest size, with K/M/G suffixes (binary) [32M]");
  app.add_option("-e,--maxbytes", maxb, "largest size [32M]");
  CLI::Option* fOpt = app.add_option("-f,--stepfactor", factor, "multiply the size by this (>= 2) each step");
  CLI::Option* iOpt = app.add_option("-i,--stepbytes", stepb, "add this to the size each step [1M]");
  fOpt->excludes(iOpt);
  app.add_option("-n,--iters", opt->iters, "timed iterations [20]")->check(CLI::Range(1, 1 << 30));
  app.add_option("-w,--warmup_iters", opt->warmup, "untimed warm-up iterations [5]")->check(CLI::Range(0, 1 << 30));
  app.add_option("-c,--check", opt->check, "check iterations per size, every element bitwise; 0 = off [1]")
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("-o,--op", op, "sum prod min max avg mulsum, a comma list, or all [sum]");
  app.add_option("-d,--datatype", dtype, typeNameList() + ", or a comma list [float]");
  app.add_option("-r,--root", opt->root, "root of broadcast/reduce/gather/scatter; -1 = every rank in turn [0]")
      ->check(CLI::Range(-1, 1 << 20));
  app.add_option("-t,--nthreads", opt->nthreads, "ranks per process, one thread each [1]")->check(CLI::Range(1, 1024));
  app.add_option("-z,--blocking", opt->blocking,
                 "0/2: back-to-back calls; 1: barrier after each call (timed); 3: barrier after each call "
                 "(not timed) [0]")
      ->check(CLI::Range(0, 3));
  app.add_option("-a,--average", opt->average, "time across ranks: 0 rank 0, 1 average, 2 min, 3 max [1]")
      ->check(CLI::Range(0, 3));
  app.add_option("-R,--local_register", opt->localRegister,
                 "0: plain buffers; 1: ncclMemAlloc + ncclCommRegister; 2: symmetric windows "
                 "(ncclCommWindowRegister, NCCL_WIN_COLL_SYMMETRIC) [0]")
      ->check(CLI::Range(0, 2));
  app.add_option("--compare", compare,
                 "comma list of stages run one after the other with fresh communicators: " + stageNames() +
                     "; or KEY=VAL[+KEY=VAL...] (R=0|1|2 sets -R)");
  app.add_flag("--memcpy", opt->memcpyOnly, "print only the single-thread memcpy bandwidth line");
  app.add_flag("--calibrate", opt->calibrate,
               "measure allreduce with each protocol (default sizes 8 B..64 MiB, x4), fit the cost model and "
               "write the tuning file the library loads (BATON_TUNING_FILE or ~/.cache/baton/tuning.txt)");
  app.add_flag("--explain", opt->explain,
               "print the tuner's predicted time per protocol and its choice for each size, without running");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return usageError(e.what());
  }

  bool factorGiven = fOpt->count() > 0;
  if (opt->calibrate) {
    if (!compare.empty()) return usageError("--calibrate runs its own stages; it cannot be combined with --compare");
    if (coll != "allreduce" && coll != "all_reduce")
      return usageError("--calibrate measures allreduce; got '" + coll + "'");
    if (!app.count("-b")) minb = "8";
    if (!app.count("-e")) maxb = "64M";
    if (!factorGiven && !iOpt->count()) factor = 4, factorGiven = true;
    compare = "ring-LL,ring-LL128,ring-Simple,tree-LL,tree-LL128,tree-Simple";
  }
  if (!parseColl(coll, &opt->coll))
    return usageError("unknown collective '" + coll + "'; expected one of: " + collNameList());
  if (!parseSize(minb, &opt->minBytes)) return usageError("-b/--minbytes: '" + minb + "' is not a size");
  if (!parseSize(maxb, &opt->maxBytes)) return usageError("-e/--maxbytes: '" + maxb + "' is not a size");
  if (!parseSize(stepb, &opt->stepBytes)) return usageError("-i/--stepbytes: '" + stepb + "' is not a size");
  if (opt->minBytes > opt->maxBytes)
    return usageError("-b/--minbytes (" + std::to_string(opt->minBytes) + ") is larger than -e/--maxbytes (" +
                      std::to_string(opt->maxBytes) + ")");
  if (factorGiven) {
    if (factor < 2) return usageError("-f/--stepfactor must be at least 2 (got " + std::to_string(factor) + ")");
    opt->stepFactor = factor;
  } else if (opt->stepBytes == 0) {
    return usageError("-i/--stepbytes must be at least 1");
  }

  opt->types.clear();
  if (dtype == "all") opt->types = allTypes();
  else
    for (const std::string& s : splitList(dtype)) {
      ncclDataType_t t;
      if (!parseType(s, &t)) return usageError("unknown datatype '" + s + "'; expected one of: " + typeNameList());
      opt->types.push_back(t);
    }
  opt->ops.clear();
  if (op == "all") opt->ops = allOps();
  else
    for (const std::string& s : splitList(op)) {
      Op o;
      if (!parseOp(s, &o))
        return usageError("unknown op '" + s + "'; expected one of: sum prod min max avg mulsum all");
      opt->ops.push_back(o);
    }
  if (!collDesc(opt->coll).reduces) opt->ops = {Op::None};

  if (!compare.empty()) {
    std::string err;
    if (!parseStages(compare, &opt->stages, &err)) return usageError("--compare: " + err);
  }
  return -1;
}

std::vector<size_t> sweepSizes(const Options& opt) {
  std::vector<size_t> sizes;
  size_t size = opt.minBytes;
  while (size <= opt.maxBytes) {
    sizes.push_back(size);
    size_t next;
    if (opt.stepFactor > 1) {
      if (size > opt.maxBytes / size_t(opt.stepFactor)) break;
      next = size ? size * size_t(opt.stepFactor) : 1;
    } else {
      if (opt.stepBytes > opt.maxBytes - size) break;
      next = size + opt.stepBytes;
    }
    size = next;
  }
  return sizes;
}

}  // namespace batonperf

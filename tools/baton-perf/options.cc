// Command line: nccl-tests' flags (same letters, long names and defaults) plus baton's --compare
// and --memcpy. Bad input prints one clear line on stderr and exits with status 2.
#include <CLI/CLI.hpp>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "baton_perf.h"

namespace batonperf {

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

namespace {

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

std::string gProgram = "baton-perf";  // the name messages start with: as started

int usageError(const std::string& msg) {
  std::fprintf(stderr, "%s: %s\nRun with --help for more information.\n", gProgram.c_str(), msg.c_str());
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
      "Ranks = processes (BATON_NRANKS, set by baton-run) x threads (-t).\n"
      "Other modes, each with its own --help: baton-perf ag_gemm|gemm_rs|ag_gemm_bwd|gemm_rs_bwd (the fused\n"
      "tensor-parallel operations, lesson 11) and baton-perf moe (MoE dispatch and combine, lesson 12).",
      "baton-perf"};
  std::string coll, minb = "32M", maxb = "32M", stepb = "1M", op = "sum", dtype = "float", compare;
  int factor = 0;
  // Started as all_reduce_perf (a link to baton-perf, as installed): nccl-tests' behaviour.
  opt->argv.assign(argv, argv + argc);
  const std::string self = argc > 0 ? argv[0] : "baton-perf";
  opt->program = self.substr(self.rfind('/') == std::string::npos ? 0 : self.rfind('/') + 1);
  Coll named;
  opt->testsMode = opt->program != "baton-perf" && opt->program.size() > 5 &&
                   opt->program.compare(opt->program.size() - 5, 5, "_perf") == 0 && parseColl(opt->program, &named);
  if (opt->testsMode) app.name(opt->program), gProgram = opt->program;
  if (!opt->testsMode)
    app.add_option("collective", coll,
                   "allreduce allgather reducescatter broadcast reduce alltoall sendrecv gather scatter hypercube "
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
  // nccl-tests' other flags: honoured, or refused below with the reason (README's table).
  int ngpus = 1, graphs = 0, deviceImpl = 0, deviceCtas = 16, memoryReport = 0, streamNull = 0;
  app.add_option("-g,--ngpus", ngpus, "GPUs per thread: 1 (a thread is one rank; there are no GPUs) [1]");
  app.add_option("-m,--agg_iters", opt->aggIters, "operations per timed iteration, in one group [1]")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("-N,--run_cycles", opt->runCycles, "run the sweep this many times; 0 = until killed [1]")
      ->check(CLI::Range(0, 1 << 30));
  app.add_option("-p,--parallel_init", opt->parallelInit, "1: each thread creates its own communicator [0]")
      ->check(CLI::Range(0, 1));
  app.add_option("-y,--stream_null", streamNull, "0/1: accepted; the CPU backend has no streams [0]")
      ->check(CLI::Range(0, 1));
  app.add_option("-T,--timeout", opt->timeoutSec,
                 "seconds a wait may last before the operation fails (BATON_WAIT_TIMEOUT); 0 = library default [0]")
      ->check(CLI::Range(0, 1 << 30));
  app.add_option("-G,--cudagraph", graphs, "CUDA graph launches: 0 only (no CUDA streams to capture) [0]");
  app.add_option("-C,--report_cputime", opt->cputime, "0/1: label times as CPU time (they are host times) [0]")
      ->check(CLI::Range(0, 1));
  app.add_option("-S,--report_timestamps", opt->timestamps, "0/1: a timestamp column [0]")->check(CLI::Range(0, 1));
  app.add_option("-J,--output_file", opt->jsonPath, "write nccl-tests 2.19's JSON report to this file too");
  app.add_option("-x,--cta_policy", opt->ctaPolicy,
                 "0/1/2: ncclConfig_t CTAPolicy (accepted and validated; no CTAs on the CPU backend)")
      ->check(CLI::Range(0, 2));
  app.add_option("-D,--device_implementation", deviceImpl, "0 only: baton has no device-side implementation [0]");
  app.add_option("-V,--device_cta_count", deviceCtas, "CTAs of a device implementation (with -D > 0 only) [16]");
  app.add_option("-M,--memory", memoryReport, "0 only: no GPU memory to report [0]");
  app.add_option("-u,--unalign", opt->unalign, "buffers start this many elements past alignment [0]")
      ->check(CLI::Range(0, 1 << 16));
  app.add_option("-I,--per_iter_timing", opt->perIterTiming, "0/1: per-iteration times (min, max, p99, cv) [0]")
      ->check(CLI::Range(0, 1));
  app.add_option("-K,--per_iter_skip", opt->perIterSkip, "leading iterations left out of -I's summary [0]")
      ->check(CLI::Range(0, 1 << 30));
  app.add_flag("--memcpy", opt->memcpyOnly, "print only the single-thread memcpy bandwidth line");
  app.add_flag("--calibrate", opt->calibrate,
               "allreduce: measure each protocol (default sizes 8 B..64 MiB, x4), fit the cost model; alltoall: "
               "time direct against Bruck (64 B..4 MiB, x4) and keep the largest size Bruck wins; either way "
               "write the tuning file the library loads (BATON_TUNING_FILE or ~/.cache/baton/tuning.txt)");
  app.add_flag("--explain", opt->explain,
               "print the tuner's predicted time per protocol and its choice for each size, without running");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ExtrasError& e) {
    if (opt->testsMode)
      return usageError(std::string(e.what()) + " (" + opt->program +
                        " takes no collective argument: its name says which; as nccl-tests, it takes flags only)");
    return usageError(e.what());
  } catch (const CLI::ParseError& e) {
    return usageError(e.what());
  }

  if (ngpus != 1)
    return usageError("-g/--ngpus " + std::to_string(ngpus) +
                      ": this build drives no GPUs; each thread is one rank on the CPU backend: for more ranks "
                      "per process use -t (threads), or more processes under baton-run");
  if (graphs != 0)
    return usageError("-G/--cudagraph " + std::to_string(graphs) +
                      ": CUDA graphs capture work on CUDA streams; the CPU backend runs collectives on host threads, "
                      "so there is nothing to capture");
  if (deviceImpl != 0)
    return usageError("-D/--device_implementation " + std::to_string(deviceImpl) +
                      ": baton has no device-side collective implementations yet; only the library's own (0) runs");
  if (deviceCtas <= 0 || deviceCtas > 128)
    return usageError("-V/--device_cta_count " + std::to_string(deviceCtas) + ": must be 1..128");
  if (memoryReport != 0)
    return usageError("-M/--memory " + std::to_string(memoryReport) +
                      ": the report is of GPU memory (cudaMemGetInfo); the CPU backend allocates none");
  if (opt->perIterSkip && !opt->perIterTiming) return usageError("-K/--per_iter_skip needs -I 1");
  if (opt->perIterSkip >= opt->iters)
    return usageError("-K/--per_iter_skip " + std::to_string(opt->perIterSkip) + " leaves no iteration of -n " +
                      std::to_string(opt->iters));
  if (opt->testsMode) {
    opt->coll = named;
    coll = collDesc(named).name;
  }
  bool factorGiven = fOpt->count() > 0;
  if (opt->calibrate) {
    if (!compare.empty()) return usageError("--calibrate runs its own stages; it cannot be combined with --compare");
    const bool alltoall = coll == "alltoall" || coll == "all_to_all";
    if (coll != "allreduce" && coll != "all_reduce" && !alltoall)
      return usageError("--calibrate measures allreduce or alltoall; got '" + coll + "'");
    if (!app.count("-b")) minb = alltoall ? "64" : "8";
    if (!app.count("-e")) maxb = alltoall ? "4M" : "64M";
    if (!factorGiven && !iOpt->count()) factor = 4, factorGiven = true;
    compare = alltoall ? "direct,bruck" : "ring-LL,ring-LL128,ring-Simple,tree-LL,tree-LL128,tree-Simple";
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

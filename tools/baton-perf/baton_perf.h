// baton-perf: nccl-tests-style bandwidth sweeps for baton, written only against the public API
// (nccl.h) and CLI11. Shared declarations of the tool's files:
//
//   options.cc      command line (CLI11), sizes with K/M/G suffixes, validation
//   stages.cc       --compare stage specs and the environment each stage runs under
//   datatypes.cc    datatype and operator tables; exact small integers as narrow-float bit patterns
//   data.cc         rank/index/seed-dependent inputs, host-computed expected outputs, bitwise check
//   collectives.cc  per-collective buffer counts, in-place offsets, bandwidth factors, launch
//   bench.cc        one local rank's sweep: warm-up, timed loop, check, combining across ranks
//   report.cc       header, result rows, --compare table and footer, in nccl-tests' format
//   main.cc         ranks from the environment, memcpy bandwidth, communicators, threads, exit code
//   fused_bench.cc  the fused tensor-parallel operations' mode (ag_gemm, gemm_rs, ...)
//   moe_bench.cc    the MoE dispatch/combine mode (moe)
#pragma once

#include <nccl.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace batonperf {

// ---- collectives (collectives.cc) -----------------------------------------------------------------

enum class Coll {
  AllReduce,
  AllGather,
  ReduceScatter,
  Broadcast,
  Reduce,
  AlltoAll,
  SendRecv,
  Gather,
  Scatter,
  HyperCube
};

struct CollDesc {
  Coll id;
  const char* name;       // baton-perf's name: "allreduce"
  const char* testsName;  // nccl-tests' name: "all_reduce"
  bool reduces;           // takes a reduction operator
  bool rooted;            // takes a root
};

// Buffer geometry of one size, in elements (nccl-tests' getCollByteCount).
struct Counts {
  size_t send = 0, recv = 0;  // elements in the send and receive buffers
  size_t param = 0;           // the count argument of the call
  size_t sendInplace = 0;     // in place: send = recvbuf + sendInplace * rank
  size_t recvInplace = 0;     // in place: recv = recvbuf + recvInplace * rank
};

const CollDesc& collDesc(Coll c);
// Accepts "allreduce", "all_reduce", "all_reduce_perf", ...; false if unknown.
bool parseColl(const std::string& s, Coll* out);
std::string collNameList();
Counts collCounts(Coll c, size_t count, int nranks);
// algbw and busbw in GB/s (1 GB = 1e9 B) for `sec` seconds per operation.
void collBandwidth(Coll c, size_t paramCount, size_t typeSize, double sec, int nranks, double* algbw, double* busbw);
ncclResult_t collLaunch(Coll c, const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                        int root, int rank, int nranks, ncclComm_t comm);

// ---- datatypes and operators (datatypes.cc) ------------------------------------------------------

enum class Fmt { Int, Uint, Half, Bf16, E4m3, E5m2, Float, Double };

struct TypeInfo {
  ncclDataType_t type;
  const char* name;  // nccl-tests' spelling
  size_t size;
  Fmt fmt;
  int64_t maxExact;  // every integer in [-maxExact, maxExact] (>= 0 for unsigned) is exact
  int maxTwos;       // 2^maxTwos (and its negative, when signed) is exact and in range
};

enum class Op { Sum, Prod, Max, Min, Avg, MulSum, None };

const TypeInfo& typeInfo(ncclDataType_t t);
const std::vector<ncclDataType_t>& allTypes();
bool parseType(const std::string& s, ncclDataType_t* out);
const char* opName(Op op);  // "sum" ... "mulsum", "none"
const std::vector<Op>& allOps();
bool parseOp(const std::string& s, Op* out);
bool isSigned(const TypeInfo& t);
// Bit pattern of the integer x in type t (x must be exactly representable).
uint64_t encodeInt(const TypeInfo& t, int64_t x);

// ---- inputs and expected outputs (data.cc) -------------------------------------------------------

struct DataSpec {
  const TypeInfo* type;
  Op op;  // Op::None: the collective only moves data (inputs are random bit patterns)
  int nranks;
  uint64_t seed;
};

// Rank r's input element idx, as the bit pattern stored in the buffer.
uint64_t inputBits(const DataSpec& d, int rank, size_t idx);
// The reduction over all ranks of input element idx, as a bit pattern.
uint64_t reducedBits(const DataSpec& d, size_t idx);
void storeBits(void* base, size_t idx, size_t size, uint64_t bits);
// Rank `rank`'s inputs: send[idx] = inputBits(rank, idx) for idx < c.send.
void fillInputs(const DataSpec& d, const Counts& c, int rank, void* send);
// What collective `coll` leaves in rank `rank`'s receive buffer (c.recv elements at `out`). Returns
// false, leaving `out` alone, where the rank has no defined output (non-roots of reduce and gather).
bool fillExpected(Coll coll, const DataSpec& d, const Counts& c, int rank, int root, void* out);
// Fills n bytes with the "never written" sentinel.
void fillSentinel(void* p, size_t n);
// Number of elements of `size` bytes in [0, n) whose bytes differ.
size_t countWrong(const void* actual, const void* expected, size_t n, size_t size);

// ---- options (options.cc, stages.cc) -------------------------------------------------------------

struct Stage {
  std::string name;                                      // "naive", or the raw spec
  std::vector<std::pair<std::string, std::string>> env;  // KEY=VAL set before comm init
  int localRegister = -1;                                // R=0|1|2 in the spec: -R for this stage (-1: -R's)
};

struct Options {
  Coll coll = Coll::AllReduce;
  size_t minBytes = 32u << 20, maxBytes = 32u << 20;
  size_t stepBytes = 1u << 20;
  int stepFactor = 1;  // > 1: multiplicative steps (-f)
  int iters = 20, warmup = 5, check = 1, root = 0, nthreads = 1, blocking = 0, average = 1;
  int localRegister = 0;  // -R: 0 plain buffers, 1 ncclMemAlloc + ncclCommRegister, 2 symmetric windows
  std::vector<ncclDataType_t> types;
  std::vector<Op> ops;
  std::vector<Stage> stages;  // --compare
  bool memcpyOnly = false;
  bool calibrate = false;  // --calibrate: stages ring-LL .. tree-Simple, then fit and write the tuning file
  bool explain = false;    // --explain: print the tuner's table for the sweep sizes
  bool compare() const { return !stages.empty(); }

  // nccl-tests' remaining flags (README's compatibility table says what each does here).
  bool testsMode = false;                  // started as all_reduce_perf etc.: nccl-tests' text and exit status
  std::string program = "baton-perf";      // the name it was started as (no directory)
  std::vector<std::string> argv;           // for -J's "args"
  int aggIters = 1;                        // -m: operations per timed iteration, in one group
  int runCycles = 1;                       // -N: the sweep this many times (0: until killed)
  int parallelInit = 0;                    // -p: each thread creates its own communicator
  int unalign = 0;                         // -u: buffers start this many elements past the allocation
  int cputime = 0;                         // -C: label the time "cputime" (it is host time anyway)
  int timestamps = 0;                      // -S: a timestamp column
  int perIterTiming = 0, perIterSkip = 0;  // -I, -K
  int timeoutSec = 0;                      // -T: BATON_WAIT_TIMEOUT for the sweep's communicators
  int ctaPolicy = -1;                      // -x: passed in ncclConfig_t (no CTAs here: no effect)
  std::string jsonPath;                    // -J
};

// Parses argv into *opt. Returns -1 to go on, or the exit code (0 after --help, 2 on bad input).
int parseOptions(int argc, char** argv, Options* opt);
std::vector<size_t> sweepSizes(const Options& opt);
// Parses "naive,ring,KEY=VAL+KEY2=VAL2"; false with *err set if a name is unknown or malformed.
// The named --compare stages, space-separated (for --help).
std::string stageNames();
bool parseStages(const std::string& list, std::vector<Stage>* out, std::string* err);
// Restores every key any stage sets to its value before the first stage, then sets `s`'s keys.
void applyStageEnv(const std::vector<Stage>& all, const Stage& s);
std::string stageEnvText(const Stage& s);

// ---- the sweep (bench.cc) ------------------------------------------------------------------------

struct World {
  int nprocs = 1, proc = 0, nthreads = 1, nranks = 1, localRank = 0;
};

// -I: each iteration's time, the slowest rank's, and their summary after the first -K.
struct PerIter {
  std::vector<double> timesUs;
  double minUs = 0, maxUs = 0, avgUs = 0, p99Us = 0, stdevUs = 0, cvPct = 0;
};

struct Half {
  double timeUs = 0, algbw = 0, busbw = 0;
  double wrong = 0;
  bool checked = false;  // false: #wrong is N/A
  PerIter iter;          // filled with -I only
};

struct Row {
  size_t bytes = 0, count = 0;
  ncclDataType_t type = ncclFloat;
  Op op = Op::None;
  int root = -1;
  Half oop, ip;
};

// What the "#  Rank ..." header line shows; gathered from every rank (64 bytes, plain bytes).
struct RankInfo {
  int32_t pid = 0;
  int32_t device = 0;
  char host[56] = {};
};

class JsonReport;

// Prints on the rank that reports (report.cc); also sums busbw for "Avg bus bandwidth".
class Report {
 public:
  Report(const Options& opt, const World& w) : opt_(opt), w_(w) {}
  void header(double memcpyGBs, const std::vector<RankInfo>& ranks) const;
  void tableHeader() const;
  void row(const Row& r);
  void footer(double wrongTotal);
  // The "#" line nccl-tests prints instead of rows when a collective cannot run at this rank count.
  void skipped(const std::string& why) const;
  // --compare: one table, the out-of-place columns of every stage side by side.
  void compareTable(const std::vector<std::vector<Row>>& rowsPerStage) const;

 private:
  const Options& opt_;
  World w_;
  double bwSum_ = 0;
  int bwCount_ = 0;
  JsonReport* json_ = nullptr;  // -J, on the reporting rank

 public:
  void setJson(JsonReport* j) { json_ = j; }
  double avgBusBw() const { return bwCount_ ? bwSum_ / bwCount_ : 0.0; }
};

// An environment entry "NAME=value" as -J records it: the value "<redacted>" where NAME looks secret.
std::string redactedEnvEntry(const char* entry);

// -J: nccl-tests 2.19's JSON file (json_report.cc). Opened before the header; every row and the
// footer add to it; close() writes the end time and the closing brackets.
class JsonReport {
 public:
  // Opens `path` (or path.0, path.1, ... if it exists, as nccl-tests does); false: say why and go on.
  bool open(const std::string& path, const Options& opt, int ncclVersion);
  void config(const Options& opt, const World& w, const std::vector<RankInfo>& ranks);
  void row(const Row& r, const Options& opt);
  void footer(double wrong, double avgBusBw, double minBw);
  void close(const std::string& error);
  ~JsonReport();

 private:
  void key(const char* k);
  void str(const std::string& v);
  void num(double v);
  void sep();
  FILE* f_ = nullptr;
  bool first_ = true;  // no comma before the next member
};

void printMemcpyLine(double gbs);
std::string nowText();  // local time as nccl-tests prints it: 2026-11-24 19:35:45
// The nccl-tests release whose flags, text and JSON the nccl-tests names reproduce.
constexpr const char* kNcclTestsVersion = "2.19.6";

// One local rank's share of a run.
struct Worker {
  int thread = 0, rank = 0;
  ncclComm_t comm = nullptr;  // benchmarked
  ncclComm_t ctrl = nullptr;  // barriers and combining times / #wrong (may equal comm)
  Report* report = nullptr;   // non-null on the rank that prints rows as they come
  std::vector<Row> rows;      // combined over all ranks
};

void runSweep(const Options& opt, const World& w, Worker* wk);

// ---- the tuner (calibrate.cc) --------------------------------------------------------------------

// --calibrate: fits the ring-LL .. tree-Simple stages' rows (in that order) and writes the tuning
// file's Ring and Tree entries for the table `comm` uses. Exit code.
int writeCalibration(const Options& opt, const World& w, const std::vector<std::vector<Row>>& perStage,
                     double memcpyGBs, const char* pathKind, ncclComm_t comm);
// alltoall --calibrate (stages direct, bruck, in that order; calibrate_alltoall.cc): the Bruck
// threshold for this rank count into the tuning file. Exit code.
int writeAlltoAllCalibration(const Options& opt, const World& w, const std::vector<std::vector<Row>>& perStage,
                             ncclComm_t comm);
// --explain: the tuner's predictions and choice for every size of the sweep.
void printExplain(const Options& opt, ncclComm_t comm, int nranks);

// Exits the process after a failed NCCL call, naming the call and baton's last error.
[[noreturn]] void ncclFail(const char* call, ncclResult_t r, const char* file, int line);
#define PERFCHECK(call)                                                                    \
  do {                                                                                     \
    ncclResult_t perf_r_ = (call);                                                         \
    if (perf_r_ != ncclSuccess) ::batonperf::ncclFail(#call, perf_r_, __FILE__, __LINE__); \
  } while (0)

// The single-thread memcpy bandwidth of this run: 64 MiB, one warm-up, median of 5, GB/s (report.cc).
double measureMemcpy();
// "8", "64K", "1M", "2G", "4KB", "1MiB": binary units. False if not a size or if it overflows.
bool parseSize(const std::string& s, size_t* out);

// The ranks of a fused or MoE run: this process's rank and count from the launcher's environment
// (baton/launch.h), `threads` thread ranks each, one communicator per thread rank. False (after a
// message) if the launch environment is malformed.
struct BenchRanks {
  int nprocs = 1, proc = 0, nRanks = 1;
  std::vector<ncclComm_t> comms;
};
bool initBenchRanks(int threads, BenchRanks* out);

// Seconds per call of fn(local rank) on every local rank (one thread each), the slowest rank's:
// `warmup` untimed calls, the ranks start together, `iters` timed calls, max over ranks via ctrl.
template <typename Fn>
double timeAcrossRanks(int warmup, int iters, const std::vector<ncclComm_t>& ctrl, Fn fn) {
  std::vector<double> secs(ctrl.size());
  std::vector<std::thread> th;
  for (size_t t = 0; t < ctrl.size(); ++t)
    th.emplace_back([&, t] {
      for (int i = 0; i < warmup; ++i) fn(int(t));
      PERFCHECK(ncclAllReduce(&secs[t], &secs[t], 1, ncclDouble, ncclMax, ctrl[t], nullptr));  // start together
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < iters; ++i) fn(int(t));
      secs[t] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
      PERFCHECK(ncclAllReduce(&secs[t], &secs[t], 1, ncclDouble, ncclMax, ctrl[t], nullptr));
    });
  for (auto& x : th) x.join();
  return secs[0];
}

// ---- the fused operations' mode (fused_bench.cc) -------------------------------------------------

// baton-perf ag_gemm|gemm_rs|ag_gemm_bwd|gemm_rs_bwd ...: its own flags, table and exit status.
bool isFusedOp(const char* name);
int runFusedBench(int argc, char** argv);

// baton-perf moe ...: MoE dispatch and combine per stage (moe_bench.cc).
int runMoeBench(int argc, char** argv);

// baton-perf --wire FORMATS ...: the wire-format collectives beside the plain one (wire_bench.cc).
bool isWireRun(int argc, char** argv);
int runWireBench(int argc, char** argv);

}  // namespace batonperf

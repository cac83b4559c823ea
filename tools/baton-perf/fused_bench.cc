// baton-perf's fused mode (lesson 11): the tensor-parallel operations of baton/fused.h timed per
// stage, beside the two things they overlap, measured in the same run on the same ranks:
//
//   baton-perf ag_gemm|gemm_rs|ag_gemm_bwd|gemm_rs_bwd [-t THREADS] [-M ROWS[,ROWS...]] [-N COLS]
//              [-K INNER] [-d float|half|bfloat16] [-n ITERS] [-w WARMUP] [--compare STAGES] [-c 0|1]
//
// Columns: time per call (the slowest rank's, median of the repeats, which interleave the columns), GEMM GFLOP/s of one
// rank (each computes 2*M*N*K: every row block against its own B), and two references: "gemm" (the same local GEMMs
// with no communication, OpenBLAS called directly) and "comm" (the collective alone: ncclAllGather of the sharded
// operand, or ncclReduceScatter of the fp32 partials). A stage that overlaps perfectly takes max(gemm, comm); the naive
// stage takes about their sum. "overlap" is how much of the smaller of the two the best stage hides, (gemm + comm -
// best) / min(gemm, comm): 100% is a perfect overlap; above 100% the stage also saved work (on one host, the fused
// stages' reads in place skip the gathered copy). -c 1 checks every stage's outputs against the first stage's, bit for
// bit (integer-valued inputs: every stage must agree exactly).
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "baton/fused.h"
#include "baton/launch.h"
#include "baton_perf.h"

namespace batonperf {
namespace {

enum class FusedOp { AgGemm, GemmRs, AgGemmBwd, GemmRsBwd };

struct FusedOptions {
  FusedOp op = FusedOp::AgGemm;
  std::string opName;
  std::vector<size_t> rows = {4096};
  size_t n = 1024, k = 1024;
  ncclDataType_t type = ncclFloat;
  int threads = 1, iters = 10, warmup = 2, check = 1, repeats = 3;
  std::vector<std::string> stages = {"naive", "decomposed", "fused", "optimized"};
};

using Sgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
// A sequential OpenBLAS may not be called from two thread ranks at once (the library serializes
// its own calls the same way).
bool gSerializeGemm = false;
std::mutex gGemmMu;

size_t esize(ncclDataType_t t) { return t == ncclFloat ? 4 : 2; }

// The operands of one call on one rank, filled with integers in [-2, 2] stored in the datatype.
struct Operands {
  std::vector<unsigned char> in0, in1, in2, out0, out1;
};

void fillInts(std::vector<unsigned char>& v, ncclDataType_t t, uint64_t seed) {
  const size_t es = esize(t);
  for (size_t i = 0; i < v.size() / es; ++i) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    const int x = int((seed >> 33) % 5) - 2;
    if (t == ncclFloat) {
      const float f = float(x);
      std::memcpy(&v[i * 4], &f, 4);
    } else {
      // bfloat16 and half both represent small integers exactly; encode through float's top bits
      // for bfloat16 and the IEEE binary16 layout for half.
      uint16_t bits;
      if (t == ncclBfloat16) {
        const float f = float(x);
        uint32_t u;
        std::memcpy(&u, &f, 4);
        bits = uint16_t(u >> 16);
      } else {
        bits = x == 0 ? 0 : uint16_t((x < 0 ? 0x8000 : 0) | ((15 + (std::abs(x) == 2)) << 10));
      }
      std::memcpy(&v[i * 2], &bits, 2);
    }
  }
}

// Shapes of the op's five buffers for M rows on nRanks: {in0, in1, in2, out0, out1} elements.
std::vector<size_t> shapes(FusedOp op, size_t m, size_t n, size_t k, int nRanks) {
  const size_t rows = m / nRanks;
  switch (op) {
    case FusedOp::AgGemm: return {rows * k, k * n, 0, m * n, 0};
    case FusedOp::GemmRs: return {m * k, k * n, 0, rows * n, 0};
    case FusedOp::AgGemmBwd: return {rows * k, k * n, m * n, rows * k, k * n};
    case FusedOp::GemmRsBwd: return {m * k, k * n, rows * n, m * k, k * n};
  }
  return {};
}

ncclResult_t callOp(const FusedOptions& o, size_t m, Operands& b, ncclComm_t comm) {
  void* in2 = b.in2.data();
  switch (o.op) {
    case FusedOp::AgGemm:
      return batonAllGatherGemm(b.in0.data(), b.in1.data(), b.out0.data(), nullptr, m, o.n, o.k, o.type, comm, nullptr);
    case FusedOp::GemmRs:
      return batonGemmReduceScatter(b.in0.data(), b.in1.data(), b.out0.data(), m, o.n, o.k, o.type, comm, nullptr);
    case FusedOp::AgGemmBwd:
      return batonAllGatherGemmBackward(b.in0.data(), b.in1.data(), in2, b.out0.data(), b.out1.data(), m, o.n, o.k,
                                        o.type, comm, nullptr);
    case FusedOp::GemmRsBwd:
      return batonGemmReduceScatterBackward(b.in0.data(), b.in1.data(), in2, b.out0.data(), b.out1.data(), m, o.n, o.k,
                                            o.type, comm, nullptr);
  }
  return ncclInvalidArgument;
}

// The collective a stage overlaps, alone: the gathered operand's AllGather (AllGather+GEMM and
// GEMM+ReduceScatter backward), the fp32 partials' ReduceScatter (the others; AllGather+GEMM
// backward does both).
ncclResult_t callComm(const FusedOptions& o, size_t m, int nRanks, std::vector<unsigned char>& scratch,
                      ncclComm_t comm) {
  const size_t rows = m / nRanks;
  const bool gathers = o.op != FusedOp::GemmRs, scatters = o.op == FusedOp::GemmRs || o.op == FusedOp::AgGemmBwd;
  const size_t gatherBytes = rows * (o.op == FusedOp::GemmRsBwd ? o.n : o.k) * esize(o.type);
  const size_t scatterFloats = rows * (o.op == FusedOp::GemmRs ? o.n : o.k);
  const size_t need = std::max(gatherBytes * nRanks, scatterFloats * nRanks * 4 + scatterFloats * 4);
  if (scratch.size() < need) scratch.resize(need);
  if (gathers) {
    int rank = 0;
    ncclCommUserRank(comm, &rank);
    ncclResult_t r = ncclAllGather(scratch.data() + (size_t)rank * gatherBytes, scratch.data(), gatherBytes, ncclUint8,
                                   comm, nullptr);  // in place, as NCCL defines it
    if (r != ncclSuccess) return r;
  }
  if (scatters)
    return ncclReduceScatter(scratch.data(), scratch.data() + scatterFloats * nRanks * 4, scatterFloats, ncclFloat,
                             ncclSum, comm, nullptr);
  return ncclSuccess;
}

// The same GEMMs with no communication, in fp32 (what every stage computes).
void callGemm(const FusedOptions& o, size_t m, int nRanks, Sgemm sgemm, std::vector<float>& a, std::vector<float>& bm,
              std::vector<float>& c) {
  const size_t rows = m / nRanks, n = o.n, k = o.k;
  auto mm = [&](bool ta, bool tb, size_t M, size_t N, size_t K, size_t lda, size_t ldb, size_t ldc) {
    const size_t need = std::max({M * K, M * N, K * N, m * std::max(n, k)});
    if (a.size() < need) a.assign(need, 1.f), bm.assign(need, 1.f), c.assign(need, 0.f);
    std::unique_lock<std::mutex> lock(gGemmMu, std::defer_lock);
    if (gSerializeGemm) lock.lock();
    sgemm(101, ta ? 112 : 111, tb ? 112 : 111, int(M), int(N), int(K), 1.f, a.data(), int(lda), bm.data(), int(ldb),
          0.f, c.data(), int(ldc));
  };
  (void)rows;
  switch (o.op) {
    case FusedOp::AgGemm: mm(false, false, m, n, k, k, n, n); break;  // every block's rows
    case FusedOp::GemmRs: mm(false, false, m, n, k, k, n, n); break;  // a partial for every rank
    case FusedOp::AgGemmBwd:
      mm(false, true, m, k, n, n, n, k);  // dC * Bᵀ
      mm(true, false, k, n, m, k, n, n);  // Aᵀ * dC
      break;
    case FusedOp::GemmRsBwd:
      mm(false, true, m, k, n, n, n, k);
      mm(true, false, k, n, m, k, n, n);
      break;
  }
}

double flops(const FusedOptions& o, size_t m) {
  const double one = 2.0 * double(m) * double(o.n) * double(o.k);
  return o.op == FusedOp::AgGemmBwd || o.op == FusedOp::GemmRsBwd ? 2 * one : one;
}

template <typename Fn>
double timeIt(const FusedOptions& o, const std::vector<ncclComm_t>& ctrl, Fn fn) {
  return timeAcrossRanks(o.warmup, o.iters, ctrl, fn);
}

int usage(const char* msg) {
  if (msg) std::fprintf(stderr, "baton-perf: %s\nRun with --help for more information.\n", msg);
  return 2;
}

int parse(int argc, char** argv, FusedOptions* o) {
  o->opName = argv[1];
  if (o->opName == "ag_gemm") o->op = FusedOp::AgGemm;
  else if (o->opName == "gemm_rs") o->op = FusedOp::GemmRs;
  else if (o->opName == "ag_gemm_bwd") o->op = FusedOp::AgGemmBwd;
  else if (o->opName == "gemm_rs_bwd") o->op = FusedOp::GemmRsBwd;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto val = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    auto num = [&](const char* s, size_t* out) {
      char* end = nullptr;
      if (!s || !*s) return false;
      *out = std::strtoull(s, &end, 10);
      return *end == 0 && *out > 0;
    };
    size_t x = 0;
    if (a == "-h" || a == "--help") {
      std::printf(
          "usage: baton-perf ag_gemm|gemm_rs|ag_gemm_bwd|gemm_rs_bwd [-t threads] [-M rows[,rows...]] [-N cols] "
          "[-K inner] [-d float|half|bfloat16] [-n iters] [-w warmup] [-r repeats] [--compare "
          "naive,decomposed,fused,optimized] "
          "[-c 0|1]\n(docs/lessons/11-async-tensor-parallelism.md; shapes as in include/baton/fused.h)\n");
      return 0;
    } else if (a == "-M") {
      if (!(v = val())) return usage("-M needs a row count");
      o->rows.clear();
      std::string s = v;
      for (size_t at = 0; at <= s.size();) {
        const size_t comma = std::min(s.find(',', at), s.size());
        if (!num(s.substr(at, comma - at).c_str(), &x))
          return usage(("-M: '" + s + "' is not a list of row counts").c_str());
        o->rows.push_back(x);
        at = comma + 1;
      }
    } else if (a == "-N" || a == "-K" || a == "-t" || a == "-n" || a == "-w" || a == "-c" || a == "-r") {
      v = val();
      if (!num(v, &x) && !(a == "-c" && v && std::string(v) == "0") && !(a == "-w" && v && std::string(v) == "0"))
        return usage((a + " needs a positive number, got '" + (v ? v : "") + "'").c_str());
      if (a == "-N") o->n = x;
      else if (a == "-K") o->k = x;
      else if (a == "-t") o->threads = int(x);
      else if (a == "-n") o->iters = int(x);
      else if (a == "-w") o->warmup = int(x);
      else if (a == "-c") o->check = int(x);
      else o->repeats = int(x);
    } else if (a == "-d") {
      const std::string d = (v = val()) ? v : "";
      if (d == "float") o->type = ncclFloat;
      else if (d == "half") o->type = ncclFloat16;
      else if (d == "bfloat16") o->type = ncclBfloat16;
      else return usage(("-d: '" + d + "' is not float, half or bfloat16").c_str());
    } else if (a == "--compare") {
      if (!(v = val())) return usage("--compare needs a list of stages");
      o->stages.clear();
      std::string s = v;
      for (size_t at = 0; at <= s.size();) {
        const size_t comma = std::min(s.find(',', at), s.size());
        o->stages.push_back(s.substr(at, comma - at));
        at = comma + 1;
      }
    } else {
      return usage(("unknown argument '" + a + "' for " + o->opName).c_str());
    }
  }
  return -1;
}

}  // namespace

bool isFusedOp(const char* name) {
  const std::string s = name ? name : "";
  return s == "ag_gemm" || s == "gemm_rs" || s == "ag_gemm_bwd" || s == "gemm_rs_bwd";
}

int runFusedBench(int argc, char** argv) {
  FusedOptions o;
  if (int rc = parse(argc, argv, &o); rc >= 0) return rc;
  BenchRanks ranks;
  if (!initBenchRanks(o.threads, &ranks)) return 2;
  const int nprocs = ranks.nprocs, proc = ranks.proc, nRanks = ranks.nRanks;
  std::vector<ncclComm_t>& comms = ranks.comms;
  for (size_t m : o.rows)
    if (m % nRanks) {
      std::fprintf(stderr, "baton-perf: -M %zu does not divide by the %d ranks\n", m, nRanks);
      return 2;
    }
  void* blas = dlopen(std::getenv("BATON_BLAS_LIB") ? std::getenv("BATON_BLAS_LIB") : "libopenblas.so.0", RTLD_NOW);
  auto sgemm = blas ? (Sgemm)dlsym(blas, "cblas_sgemm") : nullptr;
  if (!sgemm) {
    std::fprintf(stderr, "baton-perf: no CBLAS to time the GEMM reference (%s)\n", dlerror());
    return 2;
  }
  if (auto set = (void (*)(int))dlsym(blas, "openblas_set_num_threads")) set(1);
  if (auto par = (int (*)())dlsym(blas, "openblas_get_parallel")) gSerializeGemm = par() == 0;

  const bool reporter = proc == 0;
  const char* tname = o.type == ncclFloat ? "float" : o.type == ncclFloat16 ? "half" : "bfloat16";
  if (reporter) {
    std::printf("# baton-perf %s, %s, %d ranks (%d processes x %d threads), N=%zu K=%zu, %d iterations, median of %d\n",
                o.opName.c_str(), tname, nRanks, nprocs, o.threads, o.n, o.k, o.iters, o.repeats);
    std::printf(
        "# gemm: the same GEMMs alone (OpenBLAS, one thread); comm: the collective alone; time: slowest rank\n");
    std::printf("#%9s %12s %12s", "M", "gemm(us)", "comm(us)");
    for (const std::string& s : o.stages) std::printf(" %12s", (s + "(us)").c_str());
    std::printf(" %10s %8s %10s %6s\n", "best/naive", "overlap", "GFLOP/s", "wrong");
  }
  int wrongTotal = 0;
  for (size_t m : o.rows) {
    const std::vector<size_t> sh = shapes(o.op, m, o.n, o.k, nRanks);
    std::vector<Operands> ops(o.threads);
    std::vector<std::vector<unsigned char>> reference0(o.threads), reference1(o.threads), scratch(o.threads);
    std::vector<std::vector<float>> ga(o.threads), gb(o.threads), gc(o.threads);
    for (int t = 0; t < o.threads; ++t) {
      Operands& b = ops[t];
      const size_t es = esize(o.type);
      b.in0.resize(sh[0] * es), b.in1.resize(sh[1] * es), b.in2.resize(sh[2] * es), b.out0.resize(sh[3] * es),
          b.out1.resize(sh[4] * es);
      const uint64_t seed = 1000 + uint64_t(proc * o.threads + t);
      fillInts(b.in0, o.type, seed), fillInts(b.in1, o.type, seed * 3), fillInts(b.in2, o.type, seed * 7);
    }
    // Rounds: each round times the GEMMs, the collective and every stage once, and each column is
    // the median over the rounds. Interleaved, a slow or fast phase of the machine (these VMs drift
    // by tens of percent within a run) falls on every column alike instead of on whichever ran then.
    const size_t nCols = 2 + o.stages.size();
    std::vector<std::vector<double>> times(nCols);
    int wrong = 0;
    for (int r = 0; r < o.repeats; ++r) {
      times[0].push_back(timeIt(o, comms, [&](int t) { callGemm(o, m, nRanks, sgemm, ga[t], gb[t], gc[t]); }));
      times[1].push_back(timeIt(o, comms, [&](int t) { PERFCHECK(callComm(o, m, nRanks, scratch[t], comms[t])); }));
      for (size_t si = 0; si < o.stages.size(); ++si) {
        setenv("BATON_FUSED_STAGE", o.stages[si].c_str(), 1);
        times[2 + si].push_back(timeIt(o, comms, [&](int t) { PERFCHECK(callOp(o, m, ops[t], comms[t])); }));
        if (o.check && r == 0)
          for (int t = 0; t < o.threads; ++t) {
            if (si == 0) reference0[t] = ops[t].out0, reference1[t] = ops[t].out1;
            else wrong += int(ops[t].out0 != reference0[t]) + int(ops[t].out1 != reference1[t]);
          }
      }
    }
    std::vector<double> med;
    for (std::vector<double>& v : times) {
      std::sort(v.begin(), v.end());
      med.push_back(v[v.size() / 2]);
    }
    const double gemmS = med[0], commS = med[1];
    const std::vector<double> stageS(med.begin() + 2, med.end());
    // Every local rank joins the sum (thread ranks of one process: one group from this thread).
    std::vector<int> w(o.threads, 0);
    w[0] = wrong;
    PERFCHECK(ncclGroupStart());
    for (int t = 0; t < o.threads; ++t)
      PERFCHECK(ncclAllReduce(&w[t], &w[t], 1, ncclInt32, ncclSum, comms[t], nullptr));
    PERFCHECK(ncclGroupEnd());
    const int wrongAll = w[0];
    wrongTotal += wrongAll;
    if (reporter) {
      std::printf(" %9zu %12.1f %12.1f", m, gemmS * 1e6, commS * 1e6);
      for (double s : stageS) std::printf(" %12.1f", s * 1e6);
      const double best = *std::min_element(stageS.begin(), stageS.end());
      const double hidden = (gemmS + commS - best) / std::max(1e-12, std::min(gemmS, commS));
      std::printf(" %10.2f %7.0f%% %10.1f %6d\n", best / stageS[0], hidden * 100, flops(o, m) / best / 1e9, wrongAll);
      std::fflush(stdout);
    }
  }
  for (ncclComm_t c : comms) PERFCHECK(ncclCommDestroy(c));
  return wrongTotal ? 1 : 0;
}

}  // namespace batonperf

// baton-perf's MoE mode (lesson 12): dispatch and combine of include/baton/moe.h timed per stage,
// beside the bound their bytes set on this machine, measured in the same run:
//
//   baton-perf moe [-t THREADS] [-T TOKENS[,TOKENS...]] [--hidden HIDDEN] [-E EXPERTS] [-k TOPK]
//                  [--skew FRACTION] [-d float|bfloat16] [--fp8] [--ffn F] [-n ITERS] [-w WARMUP]
//                  [-r REPEATS] [--compare STAGES] [-c 0|1]
//
// Each rank holds TOKENS tokens; each picks TOPK distinct experts at random, and a --skew fraction
// of them picks expert 0 first (a hot expert). Columns per stage: dispatch, combine and both
// (the slowest rank's time per call, medians over interleaved rounds; the experts' own compute is
// not included). "MB" is the most any rank moves in the alltoallv stage (each token once per
// destination rank with its ids, and each row back); "bound" is those bytes over the memcpy
// bandwidth one rank gets while every rank copies at once (as they all move bytes at once in the
// exchange; on 2 cores that is well below one idle core's memcpy), measured after every round
// because the VM's memory phases change within a run; "x bound" is the median over rounds of the
// last stage's dispatch+combine over that round's bound.
// --fp8 dispatches with batonMoeDispatchFp8 (e4m3 and block scales on the wire; the identity
// experts dequantize the rows to the datatype for combine); MB counts the FP8 token bytes.
// --ffn F dispatches with batonMoeDispatchGemm: dispatch's column includes every local expert's
// [rows x hidden] x [hidden x F] GEMM (OpenBLAS); a stage named "lowlatency:serial" runs the
// low-latency stage with BATON_MOE_OVERLAP=0 (GEMMs after every row is in, not per source).
// -c 1 checks every stage's received rows and combined output against the first stage's, bit for
// bit (integer-valued tokens and weights: every stage must agree exactly).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "baton/moe.h"
#include "baton_perf.h"

namespace batonperf {
namespace {

struct MoeOptions {
  std::vector<size_t> tokens = {128};
  size_t hidden = 7168;
  int experts = 0, topk = 8;  // experts 0: 8 per rank
  double skew = 0;
  ncclDataType_t type = ncclBfloat16;
  bool fp8 = false;
  size_t ffn = 0;
  int threads = 1, iters = 5, warmup = 1, check = 1, repeats = 3;
  std::vector<std::string> stages = {"naive", "alltoallv", "normal", "lowlatency"};
};

// One rank's inputs and outputs for one token count.
struct MoeRankData {
  std::vector<char> tokens, recv, expertOut, out;
  std::vector<float> scales;               // --fp8: the received rows' block scales
  std::vector<std::vector<char>> expertW;  // --ffn: each local expert's [hidden x ffn]
  std::vector<const void*> weightPtrs;
  std::vector<char> gemmOut;  // --ffn: [rows x ffn]
  std::vector<int32_t> ids;
  std::vector<float> weights;
  std::vector<size_t> perExpert;
  size_t numRecv = 0;
  batonMoeRouting_t routing = nullptr;
};

size_t esize(ncclDataType_t t) { return t == ncclFloat ? 4 : 2; }

void storeInt(ncclDataType_t t, char* p, int v) {
  const float f = float(v);
  if (t == ncclFloat) return (void)std::memcpy(p, &f, 4);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint16_t b = uint16_t(u >> 16);  // small integers are exact in bfloat16
  std::memcpy(p, &b, 2);
}

// Rank `rank`'s expert choices (their own random stream, so any rank can compute any rank's).
std::vector<int32_t> makeIds(const MoeOptions& o, int rank, size_t numTokens) {
  uint64_t x = 0x9e3779b97f4a7c15ull * uint64_t(rank + 1) + numTokens;
  auto rnd = [&](uint64_t m) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return x % m;
  };
  std::vector<int32_t> ids(numTokens * o.topk, -1);
  for (size_t t = 0; t < numTokens; ++t)
    for (int j = 0; j < o.topk; ++j) {
      int32_t* tok = &ids[t * o.topk];
      int32_t id;
      do {
        id = j == 0 && double(rnd(1000)) < o.skew * 1000 ? 0 : int32_t(rnd(uint64_t(o.experts)));
      } while (std::find(tok, tok + j, id) != tok + j);
      tok[j] = id;
    }
  return ids;
}

void makeInputs(const MoeOptions& o, int rank, size_t numTokens, MoeRankData* d) {
  const size_t es = esize(o.type);
  d->ids = makeIds(o, rank, numTokens);
  d->tokens.resize(numTokens * o.hidden * es);
  for (size_t i = 0; i < numTokens * o.hidden; ++i) storeInt(o.type, &d->tokens[i * es], int(i * 7 % 5) - 2);
  d->weights.resize(numTokens * o.topk);
  for (size_t i = 0; i < d->weights.size(); ++i) d->weights[i] = float(1 + i % 2);
}

ncclResult_t dispatch(const MoeOptions& o, MoeRankData& d, size_t numTokens, ncclComm_t comm) {
  batonMoeRoutingDestroy(d.routing);
  d.routing = nullptr;
  if (o.ffn)
    return batonMoeDispatchGemm(d.tokens.data(), d.ids.data(), numTokens, o.hidden, o.experts, o.topk, o.type,
                                d.weightPtrs.data(), o.ffn, d.recv.data(), d.gemmOut.data(),
                                d.recv.size() / (o.hidden * esize(o.type)), d.perExpert.data(), &d.numRecv, &d.routing,
                                comm, nullptr);
  if (o.fp8)
    return batonMoeDispatchFp8(d.tokens.data(), d.ids.data(), numTokens, o.hidden, o.experts, o.topk, o.type,
                               d.recv.data(), d.scales.data(), d.recv.size() / o.hidden, d.perExpert.data(), &d.numRecv,
                               &d.routing, comm, nullptr);
  return batonMoeDispatch(d.tokens.data(), d.ids.data(), numTokens, o.hidden, o.experts, o.topk, o.type, d.recv.data(),
                          d.recv.size() / (o.hidden * esize(o.type)), d.perExpert.data(), &d.numRecv, &d.routing, comm,
                          nullptr);
}

// An OCP e4m3 byte (include/baton/moe.h's wire format: bias 7, no infinities, S.1111.111 is NaN) as
// the float it stands for; every e4m3 value is exact in a float. Decoded here, since a tool the user
// runs is built against the public headers only.
float e4m3ToFloat(uint8_t b) {
  const int exponent = (b >> 3) & 0xf, mantissa = b & 7;
  const float magnitude = exponent == 0xf && mantissa == 7 ? NAN
                          : exponent == 0                  ? std::ldexp(float(mantissa), -9)  // subnormal
                                                           : std::ldexp(float(8 + mantissa), exponent - 10);
  return b & 0x80 ? -magnitude : magnitude;
}

// The identity experts: expertOut = the received rows (dequantized with --fp8: each element times
// its block's scale, one scale per 128 elements).
void runExperts(const MoeOptions& o, MoeRankData& d) {
  if (!o.fp8) return (void)std::copy(d.recv.begin(), d.recv.end(), d.expertOut.begin());
  const size_t es = esize(o.type);
  for (size_t i = 0; i < d.numRecv * o.hidden; ++i) {
    const float v = e4m3ToFloat(static_cast<uint8_t>(d.recv[i])) * d.scales[i / 128];
    if (o.type == ncclFloat) {
      std::memcpy(&d.expertOut[i * 4], &v, 4);
    } else {
      uint32_t u;
      std::memcpy(&u, &v, 4);
      const uint16_t b = uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);  // round to nearest even
      std::memcpy(&d.expertOut[i * es], &b, 2);
    }
  }
}

ncclResult_t combine(MoeRankData& d, ncclComm_t comm) {
  return batonMoeCombine(d.expertOut.data(), d.weights.data(), d.out.data(), d.routing, comm, nullptr);
}

int usage(const char* msg) {
  if (msg) std::fprintf(stderr, "baton-perf: %s\nRun with --help for more information.\n", msg);
  return 2;
}

bool parseList(const char* v, std::vector<size_t>* out) {
  out->clear();
  const std::string s = v ? v : "";
  for (size_t at = 0; at <= s.size();) {
    const size_t comma = std::min(s.find(',', at), s.size());
    char* end = nullptr;
    const std::string item = s.substr(at, comma - at);
    const size_t x = std::strtoull(item.c_str(), &end, 10);
    if (item.empty() || *end) return false;
    out->push_back(x);
    at = comma + 1;
  }
  return !out->empty();
}

int parse(int argc, char** argv, MoeOptions* o) {
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    auto number = [&](long lo, long* out) {
      char* end = nullptr;
      if (!v) return false;
      *out = std::strtol(v, &end, 10);
      ++i;
      return *end == 0 && *out >= lo;
    };
    long x = 0;
    if (a == "-h" || a == "--help") {
      std::printf(
          "usage: baton-perf moe [-t threads] [-T tokens[,tokens...]] [--hidden elements] [-E experts] [-k topk] "
          "[--skew "
          "fraction] [-d float|bfloat16] [--fp8] [-n iters] [-w warmup] [-r repeats] [--compare "
          "naive,alltoallv,normal,lowlatency] [-c 0|1]\n"
          "(docs/lessons/12-moe-all-to-all.md; layouts as in include/baton/moe.h; -E defaults to 8 per rank)\n");
      return 0;
    } else if (a == "-T") {
      if (!parseList(v, &o->tokens)) return usage("-T needs a list of token counts");
      ++i;
    } else if (a == "--hidden" || a == "-E" || a == "-k" || a == "-t" || a == "-n" || a == "-r") {
      if (!number(1, &x)) return usage((a + " needs a positive number").c_str());
      if (a == "--hidden") o->hidden = size_t(x);
      else if (a == "-E") o->experts = int(x);
      else if (a == "-k") o->topk = int(x);
      else if (a == "-t") o->threads = int(x);
      else if (a == "-n") o->iters = int(x);
      else o->repeats = int(x);
    } else if (a == "-w" || a == "-c") {
      if (!number(0, &x)) return usage((a + " needs a number").c_str());
      (a == "-w" ? o->warmup : o->check) = int(x);
    } else if (a == "--ffn") {
      if (!number(1, &x)) return usage("--ffn needs a positive number");
      o->ffn = size_t(x);
    } else if (a == "--fp8") {
      o->fp8 = true;
    } else if (a == "--skew") {
      o->skew = v ? std::atof(v) : -1;
      ++i;
      if (o->skew < 0 || o->skew > 1) return usage("--skew needs a fraction in [0, 1]");
    } else if (a == "-d") {
      const std::string d = v ? v : "";
      ++i;
      if (d == "float") o->type = ncclFloat;
      else if (d == "bfloat16") o->type = ncclBfloat16;
      else return usage(("-d: '" + d + "' is not float or bfloat16").c_str());
    } else if (a == "--compare") {
      if (!v) return usage("--compare needs a list of stages");
      ++i;
      o->stages.clear();
      const std::string s = v;
      for (size_t at = 0; at <= s.size();) {
        const size_t comma = std::min(s.find(',', at), s.size());
        o->stages.push_back(s.substr(at, comma - at));
        at = comma + 1;
      }
    } else {
      return usage(("unknown argument '" + a + "' for moe").c_str());
    }
  }
  return -1;
}

}  // namespace

int runMoeBench(int argc, char** argv) {
  MoeOptions o;
  if (int rc = parse(argc, argv, &o); rc >= 0) return rc;
  BenchRanks ranks;
  if (!initBenchRanks(o.threads, &ranks)) return 2;
  const int nprocs = ranks.nprocs, proc = ranks.proc, nRanks = ranks.nRanks;
  std::vector<ncclComm_t>& comms = ranks.comms;
  if (o.experts == 0) o.experts = 8 * nRanks;
  if (o.experts % nRanks || o.topk > o.experts) return usage("-E must be a multiple of the rank count and at least -k");
  if (o.fp8 && o.hidden % 128) return usage("--fp8 needs --hidden a multiple of 128 (the scale blocks)");
  if (o.fp8 && o.ffn) return usage("--fp8 and --ffn do not combine (batonMoeDispatchGemm takes the datatype)");
  const double memcpyGBs = measureMemcpy();
  const bool reporter = proc == 0;
  const size_t es = esize(o.type), rowBytes = o.hidden * es;
  if (reporter) {
    std::printf(
        "# baton-perf moe, %s%s, %d ranks (%d processes x %d threads), hidden %zu, top-%d of %d experts, skew "
        "%.2f, %d iterations, median of %d rounds\n",
        o.type == ncclFloat ? "float" : "bfloat16",
        o.fp8   ? " (dispatch in fp8 e4m3)"
        : o.ffn ? (" (dispatch with the experts' GEMM to " + std::to_string(o.ffn) + " columns)").c_str()
                : "",
        nRanks, nprocs, o.threads, o.hidden, o.topk, o.experts, o.skew, o.iters, o.repeats);
    printMemcpyLine(memcpyGBs);
    std::printf(
        "# bound: MB over the memcpy bandwidth of one rank while every rank copies at once, measured after every "
        "round; bound and x bound are medians over the rounds\n");
    std::printf(
        "# time per call of the slowest rank (us): dispatch, combine, and both; the experts' compute excluded\n");
    std::printf("#%7s", "tokens");
    for (const std::string& s : o.stages) std::printf(" %26s", (s + " disp/comb/both").c_str());
    std::printf(" %9s %10s %8s %6s\n", "MB", "bound(us)", "x bound", "wrong");
  }
  // Each rank's copy buffers for the bound's memcpy (touched once here, so no page faults are timed).
  const size_t copyBytes = size_t(64) << 20;
  std::vector<std::vector<char>> copySrc(o.threads, std::vector<char>(copyBytes, 1)),
      copyDst(o.threads, std::vector<char>(copyBytes, 2));
  int wrongTotal = 0;
  for (size_t numTokens : o.tokens) {
    std::vector<MoeRankData> data(o.threads);
    for (int t = 0; t < o.threads; ++t) {
      MoeRankData& d = data[t];
      makeInputs(o, proc * o.threads + t, numTokens, &d);
      // Room for exactly the rows this rank receives: every rank's tokens that chose its experts.
      const int me = proc * o.threads + t, per = o.experts / nRanks;
      size_t cap = 0;
      for (int src = 0; src < nRanks; ++src)
        for (int32_t e : makeIds(o, src, numTokens)) cap += e / per == me;
      d.recv.resize(cap * (o.fp8 ? o.hidden : rowBytes)), d.expertOut.resize(cap * rowBytes);
      d.out.resize(numTokens * rowBytes), d.scales.resize(cap * o.hidden / 128 + 1);
      if (o.ffn) {
        d.expertW.assign(per, std::vector<char>(o.hidden * o.ffn * es));
        for (int e = 0; e < per; ++e) {
          for (size_t i = 0; i < o.hidden * o.ffn; ++i) storeInt(o.type, &d.expertW[e][i * es], int((e + i) % 3) - 1);
          d.weightPtrs.push_back(d.expertW[e].data());
        }
        d.gemmOut.resize(cap * o.ffn * es + 1);
      }
      d.perExpert.resize(o.experts / nRanks);
    }
    // The bytes the alltoallv stage moves per rank: tokens once per destination (with ids), rows back.
    std::vector<double> bytes(o.threads, 0.0);
    for (int t = 0; t < o.threads; ++t) {
      const MoeRankData& d = data[t];
      for (size_t tok = 0; tok < numTokens; ++tok) {
        std::vector<bool> seen(nRanks, false);
        for (int j = 0; j < o.topk; ++j) {
          const int p = d.ids[tok * o.topk + j] / (o.experts / nRanks);
          bytes[t] += double(rowBytes);  // the row back
          const double tokenBytes = o.fp8 ? double(o.hidden + o.hidden / 128 * 4) : double(rowBytes);
          if (!seen[p]) seen[p] = true, bytes[t] += tokenBytes + o.topk * 4;
        }
      }
    }
    PERFCHECK(ncclGroupStart());
    for (int t = 0; t < o.threads; ++t)
      PERFCHECK(ncclAllReduce(&bytes[t], &bytes[t], 1, ncclDouble, ncclMax, comms[t], nullptr));
    PERFCHECK(ncclGroupEnd());
    const double maxBytes = bytes[0];

    std::vector<std::vector<double>> times(o.stages.size() * 3);
    std::vector<double> roundBoundUs, roundRatio;  // per round, on the reporting process
    std::vector<std::vector<char>> refRecv(o.threads), refOut(o.threads);
    int wrong = 0;
    for (int r = 0; r < o.repeats; ++r) {
      for (size_t si = 0; si < o.stages.size(); ++si) {
        const std::string& name = o.stages[si];
        const bool serial = name.size() > 7 && name.compare(name.size() - 7, 7, ":serial") == 0;
        setenv("BATON_MOE_STAGE", name.substr(0, serial ? name.size() - 7 : name.size()).c_str(), 1);
        setenv("BATON_MOE_OVERLAP", serial ? "0" : "1", 1);
        times[si * 3].push_back(timeAcrossRanks(o.warmup, o.iters, comms,
                                                [&](int t) { PERFCHECK(dispatch(o, data[t], numTokens, comms[t])); }));
        for (auto& d : data) runExperts(o, d);
        times[si * 3 + 1].push_back(
            timeAcrossRanks(o.warmup, o.iters, comms, [&](int t) { PERFCHECK(combine(data[t], comms[t])); }));
        times[si * 3 + 2].push_back(timeAcrossRanks(o.warmup, o.iters, comms, [&](int t) {
          PERFCHECK(dispatch(o, data[t], numTokens, comms[t]));
          PERFCHECK(combine(data[t], comms[t]));
        }));
        if (o.check && r == 0)
          for (int t = 0; t < o.threads; ++t) {
            const size_t recvBytes = data[t].numRecv * (o.fp8 ? o.hidden : rowBytes);
            std::vector<char> got(data[t].recv.begin(), data[t].recv.begin() + recvBytes);
            if (o.fp8) {
              const char* sc = reinterpret_cast<const char*>(data[t].scales.data());
              got.insert(got.end(), sc, sc + data[t].numRecv * o.hidden / 128 * sizeof(float));
            }
            if (si == 0) refRecv[t] = got, refOut[t] = data[t].out;
            else wrong += int(got != refRecv[t]) + int(data[t].out != refOut[t]);
          }
      }
      // This round's memcpy bandwidth with every rank copying at once.
      const double gbs =
          copyBytes /
          timeAcrossRanks(1, 3, comms, [&](int t) { std::memcpy(copyDst[t].data(), copySrc[t].data(), copyBytes); }) /
          1e9;
      roundBoundUs.push_back(maxBytes / (gbs * 1e9) * 1e6);
      roundRatio.push_back(times.back().back() * 1e6 / roundBoundUs.back());
    }
    unsetenv("BATON_MOE_STAGE");
    unsetenv("BATON_MOE_OVERLAP");
    for (int t = 0; t < o.threads; ++t) batonMoeRoutingDestroy(data[t].routing);
    std::vector<int> w(o.threads, 0);
    w[0] = wrong;
    PERFCHECK(ncclGroupStart());
    for (int t = 0; t < o.threads; ++t)
      PERFCHECK(ncclAllReduce(&w[t], &w[t], 1, ncclInt32, ncclSum, comms[t], nullptr));
    PERFCHECK(ncclGroupEnd());
    wrongTotal += w[0];
    if (reporter) {
      std::printf(" %7zu", numTokens);
      for (size_t si = 0; si < o.stages.size(); ++si) {
        double med[3];
        for (int c = 0; c < 3; ++c) {
          std::vector<double>& v = times[si * 3 + c];
          std::sort(v.begin(), v.end());
          med[c] = v[v.size() / 2] * 1e6;
        }
        std::printf(" %8.1f/%8.1f/%8.1f", med[0], med[1], med[2]);
      }
      auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v.empty() ? 0.0 : v[v.size() / 2];
      };
      std::printf(" %9.2f %10.1f %8.2f %6d\n", maxBytes / 1e6, median(roundBoundUs), median(roundRatio), w[0]);
      std::fflush(stdout);
    }
  }
  for (ncclComm_t c : comms) ncclCommDestroy(c);
  return wrongTotal ? 1 : 0;
}

}  // namespace batonperf

// baton-perf's wire-format mode (lesson 15): include/baton/lowp.h's collectives timed beside the
// plain collective of the same datatype, in the same run, with the error each format made:
//
//   baton-perf --wire mxfp8,mxfp4,nvfp4 [-o allreduce|allgather|reducescatter] [-d bfloat16|float|half]
//              [-b MIN] [-e MAX] [-f FACTOR] [-t THREADS] [-n ITERS] [-w WARMUP] [-r REPEATS]
//              [--data normal|outliers|equal]
//
// Sizes are nccl-tests': the AllReduce's buffer, the AllGather's output, the ReduceScatter's input.
// Per size, one row for the plain collective ("none": ncclAllReduce etc. on the datatype) and one per
// format, the rounds interleaved and each time the median of REPEATS rounds (slowest rank's time
// per call). algbw and busbw count the datatype's bytes (what the user moves; busbw with
// nccl-tests' factors); wire busbw counts the bytes in the wire format (scales included) instead,
// so it is busbw x wire bytes / datatype bytes. "x none" is the plain row's time over this row's.
// maxerr is max |result - exact| / max |exact| and rmserr is RMS(result - exact) / RMS(exact), on
// rank 0's result against the sum (or copy) in double of every rank's input, the plain row
// included (its error is the datatype's own rounding).
//
// Inputs: each rank's elements are normal values with 8 significant bits (exact in bfloat16 and
// half), computed from (rank, index) so rank 0 can compute the exact result; --data outliers
// multiplies one element in 32 by 2^13, --data equal makes each block of 32 one value.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "baton/lowp.h"
#include "baton_perf.h"

namespace batonperf {
namespace {

enum class WireColl { kAllReduce, kAllGather, kReduceScatter };

struct WireOptions {
  std::vector<int> wires;  // 0: the plain collective
  WireColl coll = WireColl::kAllReduce;
  ncclDataType_t type = ncclBfloat16;
  size_t minBytes = 1 << 20, maxBytes = 64 << 20, factor = 4;
  int threads = 1, iters = 5, warmup = 2, repeats = 3;
  std::string data = "normal";
};

size_t esize(ncclDataType_t t) { return t == ncclFloat ? 4 : 2; }

uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Element i of rank p's input: a normal value (Box-Muller on two hashed uniforms) cut to 8
// significant bits and kept within half's normal range, so every datatype holds it exactly.
float inputValue(const WireOptions& o, int p, size_t i) {
  const size_t key = o.data == "equal" ? i / 32 : i;
  const uint64_t h = mix(mix(uint64_t(p) * 0x9e3779b97f4a7c15ull + 1) ^ key);
  const double u1 = (double(h >> 40) + 0.5) / double(1 << 24), u2 = double((h >> 16) & 0xffffff) / double(1 << 24);
  float v = float(std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  if (std::fabs(v) < 0x1p-12f) v = 0.f;
  uint32_t b;
  std::memcpy(&b, &v, 4);
  b &= 0xffff0000u;  // 8 significant bits
  std::memcpy(&v, &b, 4);
  if (o.data == "outliers" && i % 32 == 0) v *= 8192.f;
  return v;
}

void storeValue(ncclDataType_t t, char* p, float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  if (t == ncclFloat) return (void)std::memcpy(p, &v, 4);
  uint16_t h;
  if (t == ncclBfloat16) {
    h = uint16_t(b >> 16);  // exact: 8 significant bits
  } else {                  // half, exact for these normal values: rebias the exponent
    const uint32_t exp = (b >> 23) & 0xff;
    h = uint16_t(((b >> 16) & 0x8000u) | (exp ? ((exp - 112) << 10) | ((b >> 13) & 0x3ffu) : 0u));
  }
  std::memcpy(p, &h, 2);
}

float loadValue(ncclDataType_t t, const char* p) {
  float f;
  if (t == ncclFloat) return std::memcpy(&f, p, 4), f;
  uint16_t h;
  std::memcpy(&h, p, 2);
  if (t == ncclBfloat16) {
    const uint32_t b = uint32_t(h) << 16;
    return std::memcpy(&f, &b, 4), f;
  }
  const int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  const float mag = exp == 31  ? (mant ? NAN : INFINITY)
                    : exp == 0 ? std::ldexp(float(mant), -24)
                               : std::ldexp(float(1024 + mant), exp - 25);
  return h & 0x8000 ? -mag : mag;
}

const char* collName(WireColl c) {
  return c == WireColl::kAllReduce ? "allreduce" : c == WireColl::kAllGather ? "allgather" : "reducescatter";
}

int usage(const char* msg) {
  std::fprintf(stderr, "baton-perf: %s\nRun with --help for more information.\n", msg);
  return 2;
}

int parse(int argc, char** argv, WireOptions* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const std::string v = i + 1 < argc ? argv[i + 1] : "";
    auto positive = [&](int* out) {
      ++i;
      *out = std::atoi(v.c_str());
      return *out > 0 || (v == "0" && out == &o->warmup);
    };
    if (a == "-h" || a == "--help") {
      std::printf(
          "usage: baton-perf --wire mxfp8,mxfp4,nvfp4 [-o allreduce|allgather|reducescatter] "
          "[-d bfloat16|float|half] [-b min] [-e max] [-f factor] [-t threads] [-n iters] [-w warmup] [-r repeats] "
          "[--data normal|outliers|equal]\n(docs/lessons/15-fewer-bits-on-the-wire.md; include/baton/lowp.h)\n");
      return 0;
    } else if (a == "--wire") {
      ++i;
      o->wires = {0};
      for (size_t at = 0; at <= v.size();) {
        const size_t comma = std::min(v.find(',', at), v.size());
        const std::string w = v.substr(at, comma - at);
        const int id = w == "mxfp8"   ? batonWireMxfp8
                       : w == "mxfp4" ? batonWireMxfp4
                       : w == "nvfp4" ? batonWireNvfp4
                                      : -1;
        if (id < 0) return usage(("--wire: '" + w + "' is not mxfp8, mxfp4 or nvfp4").c_str());
        o->wires.push_back(id);
        at = comma + 1;
      }
    } else if (a == "-o" || a == "--op") {
      ++i;
      if (v == "allreduce") o->coll = WireColl::kAllReduce;
      else if (v == "allgather") o->coll = WireColl::kAllGather;
      else if (v == "reducescatter") o->coll = WireColl::kReduceScatter;
      else return usage(("-o: '" + v + "' is not allreduce, allgather or reducescatter").c_str());
    } else if (a == "-d") {
      ++i;
      if (v == "bfloat16") o->type = ncclBfloat16;
      else if (v == "float") o->type = ncclFloat;
      else if (v == "half") o->type = ncclHalf;
      else return usage(("-d: '" + v + "' is not bfloat16, float or half").c_str());
    } else if (a == "-b" || a == "-e" || a == "-f") {
      ++i;
      size_t x = 0;
      if (!parseSize(v, &x) || x == 0) return usage((a + ": '" + v + "' is not a positive size").c_str());
      (a == "-b" ? o->minBytes : a == "-e" ? o->maxBytes : o->factor) = x;
    } else if (a == "-t" || a == "-n" || a == "-w" || a == "-r") {
      int* out = a == "-t" ? &o->threads : a == "-n" ? &o->iters : a == "-w" ? &o->warmup : &o->repeats;
      if (!positive(out)) return usage((a + " needs a positive number").c_str());
    } else if (a == "--data") {
      ++i;
      if (v != "normal" && v != "outliers" && v != "equal")
        return usage(("--data: '" + v + "' is not normal, outliers or equal").c_str());
      o->data = v;
    } else {
      return usage(("unknown argument '" + a + "' with --wire").c_str());
    }
  }
  if (o->factor < 2) return usage("-f needs a factor of at least 2");
  return -1;
}

struct RankBufs {
  std::vector<char> send, recv;
};

}  // namespace

bool isWireRun(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--wire") return true;
  return false;
}

int runWireBench(int argc, char** argv) {
  WireOptions o;
  if (int rc = parse(argc, argv, &o); rc >= 0) return rc;
  BenchRanks ranks;
  if (!initBenchRanks(o.threads, &ranks)) return 2;
  const int n = ranks.nRanks, proc = ranks.proc;
  const bool reporter = proc == 0;
  const size_t es = esize(o.type);
  // nccl-tests' sizes and bus factors.
  const double busFactor = o.coll == WireColl::kAllReduce ? 2.0 * (n - 1) / n : double(n - 1) / n;
  if (reporter) {
    std::printf(
        "# baton-perf --wire, %s of %s, %d ranks (%d processes x %d threads), data %s, %d iterations, median "
        "of %d rounds, BATON_LOWP_STAGE=%s\n",
        collName(o.coll),
        o.type == ncclFloat  ? "float"
        : o.type == ncclHalf ? "half"
                             : "bfloat16",
        n, ranks.nprocs, o.threads, o.data.c_str(), o.iters, o.repeats,
        std::getenv("BATON_LOWP_STAGE") ? std::getenv("BATON_LOWP_STAGE") : "auto");
    std::printf(
        "# none: the plain collective on the datatype; busbw counts the datatype's bytes, wire busbw the "
        "wire format's; errors relative to the exact result's max (maxerr) and RMS (rmserr)\n");
    std::printf("#%11s %11s %6s %10s %9s %9s %10s %7s %10s %10s\n", "size(B)", "count", "wire", "time(us)", "algbw",
                "busbw", "wire busbw", "x none", "maxerr", "rmserr");
  }
  int failures = 0;
  for (size_t bytes = o.minBytes; bytes <= o.maxBytes; bytes *= o.factor) {
    // Elements per rank in and out, as nccl-tests counts them.
    const size_t total = bytes / es;
    const size_t count = o.coll == WireColl::kAllReduce ? total : total / n;  // AG: sendcount, RS: recvcount
    if (count == 0) continue;
    const size_t sendElems = o.coll == WireColl::kReduceScatter ? count * n : count;
    const size_t recvElems = o.coll == WireColl::kAllGather ? count * n : count;
    std::vector<RankBufs> bufs(o.threads);
    for (int t = 0; t < o.threads; ++t) {
      const int rank = proc * o.threads + t;
      bufs[t].send.resize(sendElems * es), bufs[t].recv.assign(recvElems * es, 0);
      for (size_t i = 0; i < sendElems; ++i) storeValue(o.type, &bufs[t].send[i * es], inputValue(o, rank, i));
    }
    // The exact result rank 0 should hold (AllGather: every rank's input; RS: rank 0's chunk).
    std::vector<double> exact(reporter ? recvElems : 0, 0.0);
    for (size_t i = 0; i < exact.size(); ++i)
      if (o.coll == WireColl::kAllGather) exact[i] = inputValue(o, int(i / count), i % count);
      else
        for (int p = 0; p < n; ++p) exact[i] += inputValue(o, p, i);
    std::vector<std::vector<double>> times(o.wires.size());
    std::vector<double> maxErr(o.wires.size()), rmsErr(o.wires.size());
    for (int r = 0; r < o.repeats; ++r)
      for (size_t wi = 0; wi < o.wires.size(); ++wi) {
        const int w = o.wires[wi];
        auto call = [&](int t) {
          const void* s = bufs[t].send.data();
          void* d = bufs[t].recv.data();
          ncclComm_t c = ranks.comms[t];
          const batonWireFormat_t f = batonWireFormat_t(w);
          ncclResult_t res;
          if (o.coll == WireColl::kAllReduce)
            res = w ? batonAllReduceWire(s, d, count, o.type, f, ncclSum, c, nullptr)
                    : ncclAllReduce(s, d, count, o.type, ncclSum, c, nullptr);
          else if (o.coll == WireColl::kAllGather)
            res = w ? batonAllGatherWire(s, d, count, o.type, f, c, nullptr)
                    : ncclAllGather(s, d, count, o.type, c, nullptr);
          else
            res = w ? batonReduceScatterWire(s, d, count, o.type, f, ncclSum, c, nullptr)
                    : ncclReduceScatter(s, d, count, o.type, ncclSum, c, nullptr);
          PERFCHECK(res);
        };
        times[wi].push_back(timeAcrossRanks(o.warmup, o.iters, ranks.comms, call));
        if (r || !reporter) continue;
        // Rank 0's result against the exact one (rank 0 is this process's thread 0).
        double emax = 0, amax = 0, esq = 0, xsq = 0;
        for (size_t i = 0; i < recvElems; ++i) {
          const double got = loadValue(o.type, &bufs[0].recv[i * es]), e = std::fabs(got - exact[i]);
          emax = std::max(emax, std::isnan(e) ? INFINITY : e), amax = std::max(amax, std::fabs(exact[i]));
          esq += e * e, xsq += exact[i] * exact[i];
        }
        maxErr[wi] = amax > 0 ? emax / amax : emax;
        rmsErr[wi] = xsq > 0 ? std::sqrt(esq / xsq) : std::sqrt(esq);
      }
    if (!reporter) continue;
    std::vector<double> med(o.wires.size());
    for (size_t wi = 0; wi < o.wires.size(); ++wi) {
      std::sort(times[wi].begin(), times[wi].end());
      med[wi] = times[wi][times[wi].size() / 2];
    }
    for (size_t wi = 0; wi < o.wires.size(); ++wi) {
      const int w = o.wires[wi];
      const double algbw = double(bytes) / med[wi] / 1e9, busbw = algbw * busFactor;
      const double wireRatio = w ? double(batonWireBytes(count, batonWireFormat_t(w))) / double(count * es) : 1.0;
      std::printf(" %11zu %11zu %6s %10.1f %9.2f %9.2f %10.2f %7.2f %10.2e %10.2e\n", bytes, count,
                  w ? batonWireName(batonWireFormat_t(w)) : "none", med[wi] * 1e6, algbw, busbw, busbw * wireRatio,
                  med[0] / med[wi], maxErr[wi], rmsErr[wi]);
      failures += !std::isfinite(maxErr[wi]);
    }
    std::fflush(stdout);
  }
  for (ncclComm_t c : ranks.comms) ncclCommDestroy(c);
  return failures ? 1 : 0;
}

}  // namespace batonperf

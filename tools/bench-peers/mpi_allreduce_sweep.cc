// mpi-allreduce-sweep: the OpenMPI peer that baton's allreduce is compared with (tools/scripts/bench-peers.sh).
//
// An MPI_Allreduce float-sum sweep that takes nccl-tests' flags and prints baton-perf's (= nccl-tests')
// columns, so the two outputs can be parsed by the same awk and read side by side:
//   mpirun -np 2 build/bin/mpi-allreduce-sweep -b 8 -e 256M -f 2 [-n 20] [-w 5] [-a 3] [-c 1]
// Per size and per half (out-of-place, then in-place): `warmup` calls, a barrier, `iters` calls timed
// with MPI_Wtime as one block, time = block / iters, combined over ranks per -a (default max, so the
// slowest rank sets the time). Inputs are small integers stored as floats, so every partial sum is
// exact whatever order MPI adds in, and the check can compare bit for bit.
#define OMPI_SKIP_MPICXX  1  // the deprecated C++ bindings are not used, and they warn under -Wextra
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_args.h"

namespace {

struct Options {
  size_t minBytes = size_t(32) << 20, maxBytes = size_t(32) << 20;
  int factor = 2, iters = 20, warmup = 5, average = 3, check = 1;
};

// Returns an error message, or "" when the command line is good.
std::string parseOptions(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    bool ok;
    if (a == "-b") ok = parseSize(v, &o->minBytes);
    else if (a == "-e") ok = parseSize(v, &o->maxBytes);
    else if (a == "-f") ok = parseInt(v, 2, &o->factor);
    else if (a == "-n") ok = parseInt(v, 1, &o->iters);
    else if (a == "-w") ok = parseInt(v, 0, &o->warmup);
    else if (a == "-c") ok = parseInt(v, 0, &o->check);
    else if (a == "-a") ok = parseInt(v, 0, &o->average) && o->average <= 3;
    else return "unknown argument '" + a + "' (flags: -b MIN -e MAX -f FACTOR -n ITERS -w WARMUP -a 0..3 -c 0|1)";
    if (!ok) return "bad value for " + a + ": '" + (v ? v : "") + "'";
    ++i;
  }
  if (o->minBytes > o->maxBytes) return "-b is larger than -e";
  return "";
}

// 64 MiB memcpy, one warm-up, median of 5, in GB/s: the same reference baton-perf prints.
double measureMemcpy() {
  const size_t bytes = size_t(64) << 20;
  std::vector<char> src(bytes, 1), dst(bytes, 2);
  std::memcpy(dst.data(), src.data(), bytes);
  std::vector<double> secs;
  for (int i = 0; i < 5; ++i) {
    src[i] = char(i);  // keep the copies from being folded together
    const auto t0 = std::chrono::steady_clock::now();
    std::memcpy(dst.data(), src.data(), bytes);
    secs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  volatile char sink = dst[bytes / 2];
  (void)sink;
  std::sort(secs.begin(), secs.end());
  return double(bytes) / secs[2] / 1e9;
}

// Rank r's input element i: an integer in 0..12, so a sum over up to 2^20 ranks stays exact in float.
// It depends on i only through i % kPeriod, so the expected sums fit in a table of kPeriod entries.
constexpr size_t kPeriod = 13;
float inputValue(int rank, size_t i) { return float((size_t(rank) * 5 + i * 3) % kPeriod); }

// Same layout as nccl-tests: 7 wide, fewer decimals as the time grows.
void printTime(double us) { std::printf("  %7.*f", us >= 10000.0 ? 0 : us >= 100.0 ? 1 : 2, us); }

struct Half {
  double timeUs = 0, wrong = 0;
};

class Sweep {
 public:
  Sweep(const Options& o, int rank, int nranks) : o_(o), rank_(rank), n_(nranks) {
    for (size_t i = 0; i < kPeriod; ++i)
      for (int r = 0; r < nranks; ++r) expected_[i] += inputValue(r, i);
    const size_t elems = o.maxBytes / sizeof(float) + 1;
    send_.assign(elems, 0.0f);  // assign() also faults the pages in before anything is timed
    recv_.assign(elems, 0.0f);
  }

  Half measure(size_t count, bool inPlace) {
    auto fill = [&] {
      for (size_t i = 0; i < count; ++i) (inPlace ? recv_ : send_)[i] = inputValue(rank_, i);
    };
    auto call = [&] {
      MPI_Allreduce(inPlace ? MPI_IN_PLACE : send_.data(), recv_.data(), int(count), MPI_FLOAT, MPI_SUM,
                    MPI_COMM_WORLD);
    };
    fill();
    for (int i = 0; i < o_.warmup; ++i) call();
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < o_.iters; ++i) call();
    Half h;
    h.timeUs = (MPI_Wtime() - t0) / o_.iters * 1e6;

    // The check: fresh inputs, a poisoned output, one more call, every element compared.
    if (o_.check) {
      fill();
      if (!inPlace) std::fill(recv_.begin(), recv_.begin() + count, -1.0f);
      call();
      for (size_t i = 0; i < count; ++i) {
        const float want = expected_[i % kPeriod];
        if (std::memcmp(&recv_[i], &want, sizeof want) != 0) h.wrong += 1;
        if (!inPlace && send_[i] != inputValue(rank_, i)) h.wrong += 1;  // the send buffer is read-only
      }
    }
    return h;
  }

  // Times per -a (0 rank 0, 1 average, 2 min, 3 max) and #wrong summed, over every rank.
  void combine(Half* h) const {
    double t = (o_.average == 0 && rank_ != 0) ? 0 : h->timeUs;
    const MPI_Op op = o_.average == 2 ? MPI_MIN : o_.average == 3 ? MPI_MAX : MPI_SUM;
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, op, MPI_COMM_WORLD);
    h->timeUs = o_.average == 1 ? t / n_ : t;
    MPI_Allreduce(MPI_IN_PLACE, &h->wrong, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }

 private:
  const Options& o_;
  int rank_, n_;
  std::vector<float> send_, recv_;
  float expected_[kPeriod] = {};
};

void printHeader(const Options& o, int nranks, double memcpyGBs) {
  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(lib, &len);
  std::string libLine(lib, size_t(len));
  libLine = libLine.substr(0, libLine.find_first_of(",\n"));
  std::printf("# mpi-allreduce-sweep allreduce: nranks %d (%d processes x 1 threads), %s\n", nranks, nranks,
              libLine.c_str());
  std::printf(
      "# nThread 1 nGpus 1 minBytes %zu maxBytes %zu step: %d(factor) warmup iters: %d iters: %d "
      "agg iters: 1 validation: %d graph: 0\n",
      o.minBytes, o.maxBytes, o.factor, o.warmup, o.iters, o.check ? 1 : 0);
  std::printf("# single-thread memcpy bandwidth: %.2f GB/s (64 MiB buffers, median of 5)\n", memcpyGBs);
  std::printf("#\n");
  std::printf(
      "#                                                              out-of-place                       in-place\n");
  std::printf(
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
      "#wrong\n");
  std::printf(
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  "
      "(GB/s)\n");
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  Options o;
  if (const std::string err = parseOptions(argc, argv, &o); !err.empty()) {
    if (rank == 0) std::fprintf(stderr, "mpi-allreduce-sweep: %s\n", err.c_str());
    MPI_Finalize();
    return 2;
  }
  const double memcpyGBs = measureMemcpy();  // every rank at once, as baton-perf does
  if (rank == 0) printHeader(o, nranks, memcpyGBs);

  Sweep sweep(o, rank, nranks);
  double wrongTotal = 0, bwSum = 0;
  int bwCount = 0;
  for (size_t size = o.minBytes; size <= o.maxBytes; size *= size_t(o.factor)) {
    const size_t count = size / sizeof(float);
    const size_t bytes = count * sizeof(float);
    Half halves[2] = {sweep.measure(count, false), sweep.measure(count, true)};
    for (Half& h : halves) sweep.combine(&h);
    if (rank == 0) {
      std::printf("%12zu  %12zu  %8s  %6s  %6d", bytes, count, "float", "sum", -1);
      for (const Half& h : halves) {
        const double algbw = h.timeUs > 0 ? double(bytes) / (h.timeUs * 1e-6) / 1e9 : 0.0;
        const double busbw = algbw * 2.0 * (nranks - 1) / nranks;
        printTime(h.timeUs);
        std::printf("  %6.2f  %6.2f  %5.0f", algbw, busbw, h.wrong);
        wrongTotal += h.wrong;
        bwSum += busbw;
        ++bwCount;
      }
      std::printf("\n");
      std::fflush(stdout);
    }
    if (size == 0 || size > o.maxBytes / size_t(o.factor)) break;
  }
  if (rank == 0) {
    std::printf("# Out of bounds values : %.0f %s\n", wrongTotal, wrongTotal > 0 ? "FAILED" : "OK");
    std::printf("# Avg bus bandwidth    : %g\n", bwCount ? bwSum / bwCount : 0.0);
    std::printf("#\n");
  }
  MPI_Finalize();
  return wrongTotal > 0 ? 1 : 0;
}

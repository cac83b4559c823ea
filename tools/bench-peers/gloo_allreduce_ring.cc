// gloo-allreduce-ring: the Gloo peer that baton's NET transport is compared with (tools/scripts/bench-net.sh).
//
// One process per rank, started by hand (or by the script) on each host; they meet through a Gloo
// FileStore in a directory both can see, connect over Gloo's TCP transport, and time a float-sum
// allreduce of one size:
//   gloo-allreduce-ring --rank R --size N (--iface IF | --host ADDR) --store DIR [--prefix P]
//                       [-b BYTES] [-n ITERS] [-w WARMUP] [--algo ring] [--family 4|6]
// --algo picks the Gloo algorithm: ring (gloo::AllreduceRing, the default: the whole buffer travels
// the ring n-1 times, no pipelining), ring_chunked (AllreduceRingChunked), halving_doubling
// (AllreduceHalvingDoubling), or new_ring (gloo::allreduce with Algorithm::RING: reduce-scatter +
// allgather in 1 MiB segments, what PyTorch's ProcessGroupGloo calls). All run in place.
// `warmup` calls, a barrier, `iters` calls timed as one block; time = block / iters, max over ranks
// (a small allreduce of the times). Then the check: inputs are small integers stored as floats, so
// the sum is exact whatever order Gloo adds in, and every element is compared bit for bit; #wrong is
// summed over ranks. Rank 0 prints nccl-tests' out-of-place columns (size count type redop root time
// algbw busbw #wrong, busbw = algbw x 2(n-1)/n), so the same awk parses baton-perf, mpi-allreduce-sweep
// and this. Exit status 1 on a wrong result, 2 on bad arguments, 3 on a Gloo error.
#include <gloo/allreduce.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier_all_to_all.h>
#include <gloo/common/error.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gloo_mesh.h"

namespace {

struct Options : GlooMeshOptions {
  int iters = 20, warmup = 5;
  size_t bytes = size_t(64) << 20;
  std::string algo = "ring";
};

// Returns an error message, or "" when the command line is good.
std::string parseOptions(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    bool ok = v != nullptr;
    const int mesh = parseMeshOption(a, v, o);
    if (mesh) ok = mesh > 0;
    else if (a == "-b" || a == "--bytes") ok = parseSize(v, &o->bytes);
    else if (a == "-n" || a == "--iters") ok = parseInt(v, 1, &o->iters);
    else if (a == "-w" || a == "--warmup") ok = parseInt(v, 0, &o->warmup);
    else if (a == "--algo" && ok) o->algo = v;
    else if (a == "-h" || a == "--help") return "help";
    else return "unknown argument '" + a + "'";
    if (!ok) return "bad value for " + a + ": '" + (v ? v : "") + "'";
    ++i;
  }
  if (std::string err = checkMeshOptions(*o); !err.empty()) return err;
  if (o->bytes / sizeof(float) > size_t(INT_MAX) / sizeof(float)) return "-b is too large for Gloo (int byte counts)";
  if (o->algo != "ring" && o->algo != "ring_chunked" && o->algo != "halving_doubling" && o->algo != "new_ring")
    return "--algo must be ring, ring_chunked, halving_doubling or new_ring";
  return "";
}

// Rank r's input element i: an integer in 0..12, so the sum over up to 2^20 ranks is exact in float
// (the same inputs as mpi-allreduce-sweep).
constexpr size_t kPeriod = 13;
float inputValue(int rank, size_t i) { return float((size_t(rank) * 5 + i * 3) % kPeriod); }

// One in-place allreduce of `count` floats at `data` with the chosen algorithm. The old-style
// algorithms set up their buffers once in the constructor and are run many times, as Gloo's own
// benchmark does.
std::function<void()> makeAllreduce(const std::string& algo, const std::shared_ptr<gloo::Context>& ctx, float* data,
                                    int count) {
  const std::vector<float*> ptrs{data};
  if (algo == "ring") {
    auto a = std::make_shared<gloo::AllreduceRing<float>>(ctx, ptrs, count);
    return [a] { a->run(); };
  }
  if (algo == "ring_chunked") {
    auto a = std::make_shared<gloo::AllreduceRingChunked<float>>(ctx, ptrs, count);
    return [a] { a->run(); };
  }
  if (algo == "halving_doubling") {
    auto a = std::make_shared<gloo::AllreduceHalvingDoubling<float>>(ctx, ptrs, count);
    return [a] { a->run(); };
  }
  return [ctx, data, count] {
    gloo::AllreduceOptions opts(ctx);
    opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
    opts.setInput(data, size_t(count));
    opts.setOutput(data, size_t(count));
    opts.setReduceFunction([](void* c, const void* a, const void* b, size_t n) { gloo::sum<float>(c, a, b, n); });
    gloo::allreduce(opts);
  };
}

// value combined over ranks with `fn` (max or sum), through a one-element ring allreduce.
double combine(const std::shared_ptr<gloo::Context>& ctx, double value, const gloo::ReductionFunction<double>* fn) {
  gloo::AllreduceRing<double> ar(ctx, {&value}, 1, fn);
  ar.run();
  return value;
}

void printTime(double us) { std::printf("  %7.*f", us >= 10000.0 ? 0 : us >= 100.0 ? 1 : 2, us); }

int run(const Options& o) {
  std::string device;
  std::shared_ptr<gloo::Context> ctx = connectMesh(o, &device);

  const size_t count = o.bytes / sizeof(float), bytes = count * sizeof(float);
  std::vector<float> data(count);
  auto fill = [&] {
    for (size_t i = 0; i < count; ++i) data[i] = inputValue(o.rank, i);
  };
  fill();  // also faults the pages in before anything is timed
  auto allreduce = makeAllreduce(o.algo, ctx, data.data(), int(count));
  gloo::BarrierAllToAll barrier(ctx);

  // In place, so the values grow by a factor n per call; after ~120 calls with n = 2 they reach inf,
  // which costs the CPU nothing extra (unlike denormals), so the timing is unaffected.
  for (int i = 0; i < o.warmup; ++i) allreduce();
  barrier.run();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < o.iters; ++i) allreduce();
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / o.iters;

  fill();
  allreduce();
  float expected[kPeriod] = {};  // element i's sum depends on i only through i % kPeriod
  for (size_t i = 0; i < kPeriod; ++i)
    for (int r = 0; r < o.size; ++r) expected[i] += inputValue(r, i);
  double wrong = 0;
  for (size_t i = 0; i < count; ++i)
    if (std::memcmp(&data[i], &expected[i % kPeriod], sizeof(float)) != 0) wrong += 1;
  const double timeUs = combine(ctx, us, gloo::ReductionFunction<double>::max);
  wrong = combine(ctx, wrong, gloo::ReductionFunction<double>::sum);

  if (o.rank == 0) {
    const double algbw = timeUs > 0 ? double(bytes) / (timeUs * 1e-6) / 1e9 : 0.0;
    const double busbw = algbw * 2.0 * (o.size - 1) / o.size;
    std::printf("# gloo-allreduce-ring: nranks %d, algo %s, %s, warmup %d iters %d, time = max over ranks\n", o.size,
                o.algo.c_str(), device.c_str(), o.warmup, o.iters);
    std::printf("#       size         count      type   redop    root     time   algbw   busbw #wrong\n");
    std::printf("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)\n");
    std::printf("%12zu  %12zu  %8s  %6s  %6d", bytes, count, "float", "sum", -1);
    printTime(timeUs);
    std::printf("  %6.2f  %6.2f  %5.0f\n", algbw, busbw, wrong);
    std::fflush(stdout);
  }
  return wrong > 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (const std::string err = parseOptions(argc, argv, &o); !err.empty()) {
    if (err != "help") std::fprintf(stderr, "gloo-allreduce-ring: %s\n", err.c_str());
    std::fprintf(stderr,
                 "usage: gloo-allreduce-ring --rank R --size N (--iface IF | --host ADDR) --store DIR [--prefix P]\n"
                 "       [-b BYTES] [-n ITERS] [-w WARMUP] [--algo ring|ring_chunked|halving_doubling|new_ring]"
                 " [--family 4|6]\n");
    return err == "help" ? 0 : 2;
  }
  try {
    return run(o);
  } catch (const std::exception& e) {  // gloo::Exception and its IoException derive from it
    std::fprintf(stderr, "gloo-allreduce-ring: rank %d: %s\n", o.rank, e.what());
    return 3;
  }
}

// bench-reduce: the reduce loop alone, per element type, one thread, in one run: how many elements
// a second `out = recv + src` takes through the vector loop of the 16- and 8-bit floats
// (algorithms/reduce_x86.h) and through the element loop every type had before it, beside float,
// int8 and a memcpy of the same bytes. Issue 42 asks for the codecs' element rate next to the
// AllReduce figures (docs/perf.md). Medians of --repeats timings of --count elements (in cache by
// default, 64 Ki; pass a larger count for memory). Then the wire formats' codecs
// (algorithms/block_formats.h, lesson 15) on bfloat16 data: quantize, dequantize, and the
// decode-and-add a ReduceScatter does per rank.
//
//   build/bin/bench-reduce [--count N] [--repeats R]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "block_formats.h"
#include "reduce_ops.h"

namespace {

using namespace baton;
using Clock = std::chrono::steady_clock;

template <typename F>
double medianSeconds(int repeats, F f) {
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = Clock::now();
    f();
    t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

constexpr Moves kSum{.recv = true, .send = true, .src = true};

template <typename T>
void elementLoop(const T* a, const T* b, T* out, size_t n) {
  const OpSum<T> op;
  for (size_t i = 0; i < n; ++i) out[i] = reduceElem<T, OpSum<T>, kSum>(op, a[i], b[i]);
}

template <typename T>
void row(const char* name, size_t n, int repeats) {
  std::vector<T> a(n), b(n), out(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = TypeTraits<T>::store(typename TypeTraits<T>::Compute(int(i % 7) - 3));
    b[i] = TypeTraits<T>::store(typename TypeTraits<T>::Compute(int(i % 5) - 2));
  }
  const double elem = medianSeconds(repeats, [&] { elementLoop(a.data(), b.data(), out.data(), n); });
  const double bytes = 3.0 * n * sizeof(T);  // two inputs read, one output written
  printf("%-9s %12.2f %10.1f", name, n / elem / 1e9, bytes / elem / 1e9);
#if defined(BATON_REDUCE_X86)
  if constexpr (kHasWideCodec<T>) {
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c")) {
      const double wide = medianSeconds(repeats, [&] {
        const size_t done = x86::reduceWide<T, OpSum<T>, true, true, false, false, false>(
            OpSum<T>{}, a.data(), b.data(), out.data(), nullptr, n);
        elementLoop(a.data() + done, b.data() + done, out.data() + done, n - done);
      });
      printf(" %12.2f %10.1f", n / wide / 1e9, bytes / wide / 1e9);
    }
  }
#endif
  printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  size_t n = 64 << 10;
  int repeats = 51;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--count")) n = strtoull(argv[i + 1], nullptr, 10);
    else if (!strcmp(argv[i], "--repeats")) repeats = atoi(argv[i + 1]);
  }
  if (n == 0 || repeats < 1) {
    fprintf(stderr, "usage: bench-reduce [--count N>0] [--repeats R>0]\n");
    return 2;
  }
  std::vector<char> src(3 * n * 4), dst(3 * n * 4, 1);
  const double mc = medianSeconds(repeats, [&] { memcpy(dst.data(), src.data(), src.size()); });
  printf("# out = recv + src, %zu elements, one thread, median of %d; memcpy of 12 B x count: %.1f GB/s\n", n, repeats,
         src.size() / mc / 1e9);
  printf("# %-7s %12s %10s %12s %10s\n", "type", "elem Gel/s", "GB/s", "vector Gel/s", "GB/s");
  row<float>("float", n, repeats);
  row<int8_t>("int8", n, repeats);
  row<bfloat16_t>("bfloat16", n, repeats);
  row<half_t>("half", n, repeats);
  row<fp8e4m3_t>("f8e4m3", n, repeats);
  row<fp8e5m2_t>("f8e5m2", n, repeats);
  printf(
      "# wire codecs on bfloat16, %zu elements (Gelem/s): quantize, dequantize to bfloat16, decode-and-add to fp32\n",
      n);
  std::vector<bfloat16_t> x(n);
  std::vector<float> acc(n, 0.f);
  for (size_t i = 0; i < n; ++i) x[i] = fromFloat<bfloat16_t>(float(int(i * 37 % 255) - 127) / 64.f);
  for (WireFormat f : {WireFormat::kMxfp8, WireFormat::kMxfp4, WireFormat::kNvfp4}) {
    std::vector<uint8_t> seg(wireSegmentBytes(f, n));
    std::vector<bfloat16_t> back(n);
    const double q = medianSeconds(repeats, [&] { quantizeSegment(f, x.data(), n, seg.data()); });
    const double d = medianSeconds(repeats, [&] { dequantizeSegment(f, seg.data(), n, back.data()); });
    const double a = medianSeconds(repeats, [&] { dequantizeAdd(f, seg.data(), n, acc.data()); });
    printf("  %-7s %9.2f %9.2f %9.2f\n",
           f == WireFormat::kMxfp8   ? "mxfp8"
           : f == WireFormat::kMxfp4 ? "mxfp4"
                                     : "nvfp4",
           n / q / 1e9, n / d / 1e9, n / a / 1e9);
  }
  return 0;
}

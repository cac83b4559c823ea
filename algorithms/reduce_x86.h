// The CPU backend's reduce loop for the 16- and 8-bit floats with AVX2 and F16C (issue 42's first
// goal: half, bfloat16 and fp8 at memory speed). It computes exactly what reduceCopy's scalar loop
// computes, bit for bit:
// widen 64 elements of each input to float with vector conversions, apply the operator in float
// (g++ vectorizes that loop over a stack tile), round back to the narrow type, store.
// tests/unit/narrow_reduce_test.cc holds it to the element loop.
//
// Per type:
//   half      vcvtph2ps / vcvtps2ph (round to nearest even): the IEEE conversions the codec spells out.
//   bfloat16  widen = shift left 16; narrow = the codec's rounding add, NaN kept quiet, then pack.
//   fp8       through half, 16 at a time in 16-bit lanes: the code shifted into a half widens with
//             vcvtph2ps; narrowing rounds to half (to odd), then shifts the code out, rounding to
//             nearest even (widen16 and narrow16 say why that is exact).
// A float denormal reaches a conversion only where the result is zero either way, so the
// caller's DAZ/FTZ modes change nothing; the default rounding mode (to nearest) is assumed, as the
// scalar encode assumes it.
//
// Host only, x86-64 only, and not under nvcc (whose host pass keeps the scalar loop). Chosen at
// run time when the CPU has AVX2 and F16C, unless BATON_CPU_SIMD=0 (read once per process).
// Introduced with issue 42 (no lesson yet; measured in docs/perf.md, "Half, bfloat16 and fp8").
// Memory-ordering contract: none, as reduceCopy's (plain memory the caller acquired).
#pragma once

#if defined(__x86_64__) && !defined(__CUDACC__)
#define BATON_REDUCE_X86 1

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "datatypes.h"
#include "moves.h"

namespace baton {

template <typename T>
struct OpProd;  // reduce_ops.h

// True when this CPU runs the wide loop and BATON_CPU_SIMD does not turn it off.
inline bool wideNarrowReduce() {
  static const bool on = [] {
    __builtin_cpu_init();
    const char* e = getenv("BATON_CPU_SIMD");
    if (e && e[0] == '0') return false;
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  }();
  return on;
}

template <typename T>
inline constexpr bool kHasWideCodec = std::is_same_v<T, half_t> || std::is_same_v<T, bfloat16_t> ||
                                      std::is_same_v<T, fp8e4m3_t> || std::is_same_v<T, fp8e5m2_t>;

namespace x86 {

#define BATON_WIDE __attribute__((target("avx2,f16c"), always_inline)) inline

// 8 half or bfloat16 words at p, widened to 8 floats.
template <typename T>
BATON_WIDE __m256 widen8(const void* p) {
  const __m128i w = _mm_loadu_si128(static_cast<const __m128i*>(p));
  if constexpr (std::is_same_v<T, half_t>) return _mm256_cvtph_ps(w);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(w), 16));
}

// 8 floats narrowed to half or bfloat16, stored at `out`.
template <typename T>
BATON_WIDE void narrow8(__m256 f, T* out) {
  __m128i w;
  if constexpr (std::is_same_v<T, half_t>) {
    w = _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT);
  } else {
    const __m256i x = _mm256_castps_si256(f);
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
    const __m256i rounded =
        _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), odd), 16);
    const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40));
    const __m256i isNaN =
        _mm256_cmpgt_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
    const __m256i r = _mm256_blendv_epi8(rounded, quiet, isNaN);
    // 8 x 32-bit -> 8 x 16-bit in order (packs work per 128-bit lane; the permute joins the lanes)
    w = _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08));
  }
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), w);
}

// fp8 goes through half, 16 elements in 16-bit lanes: every fp8 value is a half, and the half's
// bits shifted right give the fp8 code. e5m2 is a half's top byte. e4m3 shifted into a half is its
// value * 2^-8 (the bias differs by 8; subnormals included, since a half's subnormals are spaced
// alike): "scaled". Sums, maxima, minima, PreMulSum and averages commute with that power of two
// exactly, so those run on scaled values; a product is unscaled first (times 256, exact).

// 16 fp8 codes at p, widened to 16 floats (scaled for e4m3 when kScaled).
template <typename T, bool kScaled>
BATON_WIDE void widen16(const void* p, float* out) {
  const __m256i b = _mm256_cvtepu8_epi16(_mm_loadu_si128(static_cast<const __m128i*>(p)));
  __m256i h;
  if constexpr (std::is_same_v<T, fp8e5m2_t>) {
    h = _mm256_slli_epi16(b, 8);
  } else {
    const __m256i sign = _mm256_slli_epi16(_mm256_and_si256(b, _mm256_set1_epi16(0x80)), 8);
    const __m256i mag = _mm256_and_si256(b, _mm256_set1_epi16(0x7f));
    const __m256i nan = _mm256_cmpeq_epi16(mag, _mm256_set1_epi16(0x7f));  // e4m3's one NaN code
    h = _mm256_or_si256(sign, _mm256_blendv_epi8(_mm256_slli_epi16(mag, 7), _mm256_set1_epi16(0x7e00), nan));
  }
  __m256 lo = _mm256_cvtph_ps(_mm256_castsi256_si128(h)), hi = _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1));
  if constexpr (std::is_same_v<T, fp8e4m3_t> && !kScaled) {
    lo = _mm256_mul_ps(lo, _mm256_set1_ps(256.0f));
    hi = _mm256_mul_ps(hi, _mm256_set1_ps(256.0f));
  }
  _mm256_store_ps(out, lo);
  _mm256_store_ps(out + 8, hi);
}

// 16 floats (scaled for e4m3 when kScaled) narrowed to fp8 codes, rounded to nearest even. Two
// roundings in a row could round twice (float to half, half to fp8), so the first rounds to odd
// instead: truncate to half, and set the last bit where that lost anything. With 7 or more bits
// to spare, the second rounding then gives the one correct result.
template <typename T, bool kScaled>
BATON_WIDE __m128i narrow16(const float* in) {
  __m256 lo = _mm256_load_ps(in), hi = _mm256_load_ps(in + 8);
  if constexpr (std::is_same_v<T, fp8e4m3_t> && !kScaled) {
    lo = _mm256_mul_ps(lo, _mm256_set1_ps(1.0f / 256));
    hi = _mm256_mul_ps(hi, _mm256_set1_ps(1.0f / 256));
  }
  const __m128i h0 = _mm256_cvtps_ph(lo, _MM_FROUND_TO_ZERO), h1 = _mm256_cvtps_ph(hi, _MM_FROUND_TO_ZERO);
  const __m256i lost0 = _mm256_castps_si256(_mm256_cmp_ps(_mm256_cvtph_ps(h0), lo, _CMP_NEQ_UQ));
  const __m256i lost1 = _mm256_castps_si256(_mm256_cmp_ps(_mm256_cvtph_ps(h1), hi, _CMP_NEQ_UQ));
  const __m256i lost = _mm256_permute4x64_epi64(_mm256_packs_epi32(lost0, lost1), 0xd8);  // 16 x 16-bit, in order
  __m256i h = _mm256_set_m128i(h1, h0);
  h = _mm256_or_si256(h, _mm256_and_si256(lost, _mm256_set1_epi16(1)));  // round to odd
  const __m256i sign = _mm256_srli_epi16(_mm256_and_si256(h, _mm256_set1_epi16(int16_t(0x8000))), 8);
  const __m256i mag = _mm256_and_si256(h, _mm256_set1_epi16(0x7fff));
  const __m256i isNaN = _mm256_cmpgt_epi16(mag, _mm256_set1_epi16(0x7c00));
  __m256i code;
  if constexpr (std::is_same_v<T, fp8e5m2_t>) {
    // top byte, rounded to nearest even; overflow carries into inf; a NaN keeps its top bits
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi16(mag, 8), _mm256_set1_epi16(1));
    code = _mm256_srli_epi16(_mm256_add_epi16(_mm256_add_epi16(mag, _mm256_set1_epi16(0x7f)), odd), 8);
    code = _mm256_blendv_epi8(code, _mm256_srli_epi16(mag, 8), isNaN);
  } else {
    // 7 bits off, rounded to nearest even; past 448 (and inf) saturates to 448; NaN is 0x7f
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi16(mag, 7), _mm256_set1_epi16(1));
    code = _mm256_srli_epi16(_mm256_add_epi16(_mm256_add_epi16(mag, _mm256_set1_epi16(0x3f)), odd), 7);
    code = _mm256_min_epu16(code, _mm256_set1_epi16(0x7e));
    code = _mm256_blendv_epi8(code, _mm256_set1_epi16(0x7f), isNaN);
  }
  code = _mm256_or_si256(code, sign);
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi16(code, code), 0x08));
}

// One tile of m <= 64 elements (a multiple of 8, and of 16 bytes): widen, the operator in float
// (a loop g++ vectorizes), narrow into a stack tile, then out to each output. Inlined with m = 64
// for whole tiles, so those loops have a constant bound.
template <typename T, typename Op, bool kRecv, bool kSrc, bool kPre, bool kPost, bool kStream>
BATON_WIDE void reduceTile(const Op& op, const T* recv, const T* src, T* out0, T* out1, size_t m) {
  alignas(32) float a[64], b[64];  // b: src (else recv), then the result; a: recv beside src
  alignas(32) T t[64];
  // e4m3 runs scaled by 2^-8 under every operator but the product (see widen16)
  constexpr bool kScaled = std::is_same_v<T, fp8e4m3_t> && !std::is_same_v<Op, OpProd<T>>;
  constexpr size_t kStep = sizeof(T) == 1 ? 16 : 8;
  for (size_t k = 0; k < m; k += kStep) {
    if constexpr (sizeof(T) == 1) {
      if constexpr (kRecv && kSrc) widen16<T, kScaled>(recv + k, a + k);
      widen16<T, kScaled>(kSrc ? src + k : recv + k, b + k);
    } else {
      if constexpr (kRecv && kSrc) _mm256_store_ps(a + k, widen8<T>(recv + k));
      _mm256_store_ps(b + k, widen8<T>(kSrc ? src + k : recv + k));
    }
  }
  for (size_t k = 0; k < m; ++k) {
    float v = b[k];
    if constexpr (kSrc && kPre) v = op.pre(v);
    if constexpr (kRecv && kSrc) v = op(a[k], v);
    if constexpr (kPost) v = op.post(v);
    b[k] = v;
  }
  for (size_t k = 0; k < m; k += kStep) {
    if constexpr (sizeof(T) == 1) _mm_store_si128(reinterpret_cast<__m128i*>(t + k), narrow16<T, kScaled>(b + k));
    else narrow8<T>(_mm256_load_ps(b + k), t + k);
  }
  for (T* out : {out0, out1}) {
    if (!out) continue;
    for (size_t l = 0; l < m * sizeof(T) / 16; ++l) {
      const __m128i x = _mm_load_si128(reinterpret_cast<const __m128i*>(t) + l);
      if constexpr (kStream) _mm_stream_si128(reinterpret_cast<__m128i*>(out) + l, x);
      else _mm_storeu_si128(reinterpret_cast<__m128i*>(out) + l, x);
    }
  }
}

// out = post(recv (op) pre(src)) for a narrow float T; returns how many elements it did: all n.
// The last n % G (G = 16 bytes' worth and at least 8) go through one zero-padded tile whose extra
// lanes are dropped: an LL128 line of 120 bytes left 4 halves or 8 fp8 values to the element loop
// on every line. Each tile is read whole before it is written, so `recv` may be `out1`
// (ring_direct.h's in-place case). out0/out1: either may be null; kStream writes whole tiles with
// non-temporal stores, which needs both 16-byte aligned (the caller's fence orders them), and the
// padded tail with plain ones.
template <typename T, typename Op, bool kRecv, bool kSrc, bool kPre, bool kPost, bool kStream>
__attribute__((target("avx2,f16c"))) size_t reduceWide(const Op& op, const T* recv, const T* src, T* out0, T* out1,
                                                       size_t n) {
  constexpr size_t kTile = 64, kGrain = 16 / sizeof(T) > 8 ? 16 / sizeof(T) : 8;
  const size_t whole = n - n % kGrain;
  auto at = [](auto* p, size_t i) { return p ? p + i : p; };
  size_t i = 0;
  for (; i + kTile <= whole; i += kTile)
    reduceTile<T, Op, kRecv, kSrc, kPre, kPost, kStream>(op, at(recv, i), at(src, i), at(out0, i), at(out1, i), kTile);
  if (i < whole)
    reduceTile<T, Op, kRecv, kSrc, kPre, kPost, kStream>(op, at(recv, i), at(src, i), at(out0, i), at(out1, i),
                                                         whole - i);
  if (whole < n) {
    const size_t left = n - whole;
    alignas(16) T r[kGrain] = {}, s[kGrain] = {}, o[kGrain];
    if constexpr (kRecv || !kSrc) memcpy(r, recv + whole, left * sizeof(T));
    if constexpr (kSrc) memcpy(s, src + whole, left * sizeof(T));
    reduceTile<T, Op, kRecv, kSrc, kPre, kPost, false>(op, r, s, o, nullptr, kGrain);
    for (T* out : {out0, out1})
      if (out) memcpy(out + whole, o, left * sizeof(T));
  }
  return n;
}

#undef BATON_WIDE

}  // namespace x86
}  // namespace baton

#endif

#include <cstddef>

namespace baton {

// The one entry the element loops call: the vector loop where it applies (x86 with AVX2 and F16C,
// a 16- or 8-bit float, BATON_CPU_SIMD not 0). Returns how many leading elements it did; 0 where it
// does not apply, and the caller's element loop does them all. Host code only.
template <typename T, typename Op, bool kRecv, bool kSrc, bool kPre, bool kPost, bool kStream = false>
inline size_t reduceVectorPrefix(const Op& op, const T* recv, const T* src, T* out0, T* out1, size_t n) {
#if defined(BATON_REDUCE_X86)
  if constexpr (kHasWideCodec<T>)
    if (wideNarrowReduce())
      return x86::reduceWide<T, Op, kRecv, kSrc, kPre, kPost, kStream>(op, recv, src, out0, out1, n);
#endif
  (void)op, (void)recv, (void)src, (void)out0, (void)out1, (void)n;
  return 0;
}

}  // namespace baton

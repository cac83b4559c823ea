// The CPU backend's reduce loop for the 16- and 8-bit floats with AVX2 and F16C (issue 42's first
// goal: half, bfloat16 and fp8 at memory speed). It computes exactly what reduceCopy's scalar loop
// computes, bit for bit (tests/unit/datatypes_test.cc runs both on every pattern that matters):
// widen 64 elements of each input to float with vector conversions, apply the operator in float
// (g++ vectorizes that loop over a stack tile), round back to the narrow type, store.
//
// Per type, 8 elements at a time:
//   half      vcvtph2ps / vcvtps2ph (round to nearest even): the IEEE conversions the codec spells out.
//   bfloat16  widen = shift left 16; narrow = the codec's rounding add, NaN kept quiet, then pack.
//   e5m2      is the top byte of a half: widen through vcvtph2ps of (b << 8).
//   e4m3      b's 7 magnitude bits shifted into a half's exponent and mantissa give the value * 2^-8
//             (subnormals included); vcvtph2ps, times 256 (exact), and the one NaN code patched in.
//   fp8 narrow  the codec's branch-free encode (datatypes.h) on 8 lanes, then two packs.
// No float denormal is an operand, so the caller's DAZ/FTZ modes change nothing; the default
// rounding mode (to nearest) is assumed, as the scalar encode assumes it.
//
// Host only, x86-64 only, and not under nvcc (whose host pass keeps the scalar loop). Chosen at
// run time when the CPU has AVX2 and F16C, unless BATON_CPU_SIMD=0 (read once per process).
// Introduced with issue 42; lesson 15 draws the formats.
// Memory-ordering contract: none, as reduceCopy's (plain memory the caller acquired).
#pragma once

#if defined(__x86_64__) && !defined(__CUDACC__)
#define BATON_REDUCE_X86 1

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <type_traits>

#include "datatypes.h"
#include "moves.h"

namespace baton {

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

// 8 storage words at p, widened to 8 floats.
template <typename T>
BATON_WIDE __m256 widen8(const void* p) {
  if constexpr (std::is_same_v<T, half_t>) {
    return _mm256_cvtph_ps(_mm_loadu_si128(static_cast<const __m128i*>(p)));
  } else if constexpr (std::is_same_v<T, bfloat16_t>) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(static_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
  } else {
    const __m128i b = _mm_loadl_epi64(static_cast<const __m128i*>(p));
    const __m128i b16 = _mm_cvtepu8_epi16(b);
    if constexpr (std::is_same_v<T, fp8e5m2_t>) return _mm256_cvtph_ps(_mm_slli_epi16(b16, 8));
    const __m128i h = _mm_or_si128(_mm_slli_epi16(_mm_and_si128(b16, _mm_set1_epi16(0x7f)), 7),
                                   _mm_slli_epi16(_mm_and_si128(b16, _mm_set1_epi16(0x80)), 8));
    const __m256 v = _mm256_mul_ps(_mm256_cvtph_ps(h), _mm256_set1_ps(256.0f));
    const __m256i b32 = _mm256_cvtepu8_epi32(b);
    const __m256i nan = _mm256_cmpeq_epi32(_mm256_and_si256(b32, _mm256_set1_epi32(0x7f)), _mm256_set1_epi32(0x7f));
    const __m256i quiet = _mm256_or_si256(_mm256_set1_epi32(0x7fc00000),
                                          _mm256_slli_epi32(_mm256_and_si256(b32, _mm256_set1_epi32(0x80)), 24));
    return _mm256_blendv_ps(v, _mm256_castsi256_ps(quiet), _mm256_castsi256_ps(nan));
  }
}

// The fp8 codec's encode (datatypes.h, NarrowFloat::encode) on 8 lanes: 8 codes in 32-bit lanes.
template <typename F>
BATON_WIDE __m256i encodeFp8Lanes(__m256 f) {
  const __m256i x = _mm256_castps_si256(f);
  const __m256i ax = _mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff));
  const __m256i sign = _mm256_and_si256(_mm256_srli_epi32(x, F::kSignShift), _mm256_set1_epi32(int(F::kSignBit)));
  const __m256i rebiased = _mm256_sub_epi32(ax, _mm256_set1_epi32(int(uint32_t(127 - F::kBias) << 23)));
  const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(rebiased, F::kMantShift), _mm256_set1_epi32(1));
  const __m256i normal = _mm256_srli_epi32(
      _mm256_add_epi32(_mm256_add_epi32(rebiased, _mm256_set1_epi32((1 << (F::kMantShift - 1)) - 1)), odd),
      F::kMantShift);
  const __m256 magic = _mm256_set1_ps(F::kUnitMagic);
  const __m256i subnormal =
      _mm256_sub_epi32(_mm256_castps_si256(_mm256_add_ps(_mm256_castsi256_ps(ax), magic)), _mm256_castps_si256(magic));
  const __m256i isSub = _mm256_cmpgt_epi32(_mm256_set1_epi32(int(F::kMinNormalFloat)), ax);
  __m256i mag = _mm256_blendv_epi8(normal, subnormal, isSub);
  mag = _mm256_min_epu32(mag, _mm256_set1_epi32(int(F::kMaxOut)));
  const __m256i isNaN = _mm256_cmpgt_epi32(ax, _mm256_set1_epi32(0x7f800000));
  __m256i nan = _mm256_set1_epi32(int(F::kQuietNaN));
  if constexpr (F::kHasInfinity)  // IEEE-style formats keep the payload's top bits
    nan = _mm256_or_si256(nan,
                          _mm256_and_si256(_mm256_srli_epi32(ax, F::kMantShift), _mm256_set1_epi32(int(F::kMantMask))));
  return _mm256_or_si256(sign, _mm256_blendv_epi8(mag, nan, isNaN));
}

// 8 floats narrowed to T, stored at `out` (16-byte aligned: a stack tile).
template <typename T>
BATON_WIDE void narrow8(__m256 f, T* out) {
  if constexpr (std::is_same_v<T, half_t>) {
    _mm_store_si128(reinterpret_cast<__m128i*>(out), _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT));
  } else {
    __m256i w;
    if constexpr (std::is_same_v<T, bfloat16_t>) {
      const __m256i x = _mm256_castps_si256(f);
      const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
      const __m256i rounded =
          _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), odd), 16);
      const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40));
      const __m256i isNaN =
          _mm256_cmpgt_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
      w = _mm256_blendv_epi8(rounded, quiet, isNaN);
    } else if constexpr (std::is_same_v<T, fp8e4m3_t>) {
      w = encodeFp8Lanes<detail::Fp8E4M3Format>(f);
    } else {
      w = encodeFp8Lanes<detail::Fp8E5M2Format>(f);
    }
    // 8 x 32-bit -> 8 x 16-bit in order (packs work per 128-bit lane; the permute joins the lanes).
    const __m128i w16 = _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(w, w), 0x08));
    if constexpr (sizeof(T) == 2) _mm_store_si128(reinterpret_cast<__m128i*>(out), w16);
    else _mm_storel_epi64(reinterpret_cast<__m128i*>(out), _mm_packus_epi16(w16, w16));
  }
}

// One tile of m <= 64 elements (a multiple of 8, and of 16 bytes): widen, the operator in float
// (a loop g++ vectorizes), narrow into a stack tile, then out to each output. Inlined with m = 64
// for whole tiles, so those loops have a constant bound.
template <typename T, typename Op, bool kRecv, bool kSrc, bool kPre, bool kPost, bool kStream>
BATON_WIDE void reduceTile(const Op& op, const T* recv, const T* src, T* out0, T* out1, size_t m) {
  alignas(32) float a[64], b[64];  // b: src (else recv), then the result; a: recv beside src
  alignas(32) T t[64];
  for (size_t k = 0; k < m; k += 8) {
    if constexpr (kRecv && kSrc) _mm256_store_ps(a + k, widen8<T>(recv + k));
    _mm256_store_ps(b + k, widen8<T>(kSrc ? src + k : recv + k));
  }
  for (size_t k = 0; k < m; ++k) {
    float v = b[k];
    if constexpr (kSrc && kPre) v = op.pre(v);
    if constexpr (kRecv && kSrc) v = op(a[k], v);
    if constexpr (kPost) v = op.post(v);
    b[k] = v;
  }
  for (size_t k = 0; k < m; k += 8) narrow8<T>(_mm256_load_ps(b + k), t + k);
  for (T* out : {out0, out1}) {
    if (!out) continue;
    for (size_t l = 0; l < m * sizeof(T) / 16; ++l) {
      const __m128i x = _mm_load_si128(reinterpret_cast<const __m128i*>(t) + l);
      if constexpr (kStream) _mm_stream_si128(reinterpret_cast<__m128i*>(out) + l, x);
      else _mm_storeu_si128(reinterpret_cast<__m128i*>(out) + l, x);
    }
  }
}

// out = post(recv (op) pre(src)) for a narrow float T; returns how many elements it did: all but
// n % G, G = 16 bytes' worth and at least 8, which the caller's scalar loop finishes. Each tile is
// read whole before it is written, so `recv` may be `out1` (ring_direct.h's in-place case).
// out0/out1: either may be null; kStream writes them with non-temporal stores, which needs both
// 16-byte aligned (the caller's fence orders them).
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
  return whole;
}

#undef BATON_WIDE

}  // namespace x86
}  // namespace baton

#endif

// The wire formats' block codecs (block_formats.h, lesson 15) with AVX2 and F16C, eight elements at
// a time: the scalar NarrowFloat::encode and ::decode of datatypes.h written lane for lane (the
// same integer steps, the same float additions and products in the same order), so each result is
// bit for bit the scalar one. tests/unit/block_formats_test.cc holds them to it.
//
// Used for whole blocks rounded to nearest; the partial last block, a block holding a NaN or an
// infinity, and stochastic rounding stay scalar. Host only, x86-64 only, not under nvcc; chosen at
// run time with the reduce loop's test (reduce_x86.h's wideNarrowReduce: AVX2 and F16C, unless
// BATON_CPU_SIMD=0).
// Memory-ordering contract: none (pure value code; the caller publishes the bytes it writes).
#pragma once

#include "reduce_x86.h"

#if defined(BATON_REDUCE_X86)

#include <cstring>

namespace baton {
namespace x86 {

#define BATON_WIRE_WIDE __attribute__((target("avx2,f16c"), always_inline)) inline

// 8 elements of T (float, bfloat16, half) at p as floats.
template <typename T>
BATON_WIRE_WIDE __m256 load8(const T* p) {
  if constexpr (std::is_same_v<T, float>) return _mm256_loadu_ps(p);
  else return widen8<T>(p);
}

template <typename T>
BATON_WIRE_WIDE void store8(T* p, __m256 v) {
  if constexpr (std::is_same_v<T, float>) _mm256_storeu_ps(p, v);
  else narrow8<T>(v, p);
}

// NarrowFloat<...>::encode of 8 finite floats (codes in 32-bit lanes).
template <typename Fmt>
BATON_WIRE_WIDE __m256i encode8(__m256 f) {
  const __m256i x = _mm256_castps_si256(f);
  const __m256i sign = _mm256_and_si256(_mm256_srli_epi32(x, Fmt::kSignShift), _mm256_set1_epi32(int(Fmt::kSignBit)));
  const __m256i ax = _mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff));
  const __m256i rebiased = _mm256_sub_epi32(ax, _mm256_set1_epi32(int(uint32_t(127 - Fmt::kBias) << 23)));
  const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(rebiased, Fmt::kMantShift), _mm256_set1_epi32(1));
  const __m256i normal = _mm256_srli_epi32(
      _mm256_add_epi32(_mm256_add_epi32(rebiased, _mm256_set1_epi32((1 << (Fmt::kMantShift - 1)) - 1)), odd),
      Fmt::kMantShift);
  const __m256 magic = _mm256_set1_ps(Fmt::kUnitMagic);
  const __m256i subnormal =
      _mm256_sub_epi32(_mm256_castps_si256(_mm256_add_ps(_mm256_castsi256_ps(ax), magic)), _mm256_castps_si256(magic));
  const __m256i isSub = _mm256_cmpgt_epi32(_mm256_set1_epi32(int(Fmt::kMinNormalFloat)), ax);
  // Both candidates are below 2^31 where selected, so a signed minimum is the scalar's unsigned one.
  const __m256i mag =
      _mm256_min_epi32(_mm256_blendv_epi8(normal, subnormal, isSub), _mm256_set1_epi32(int(Fmt::kMaxOut)));
  return _mm256_or_si256(sign, mag);
}

// NarrowFloat<...>::decode of 8 codes in 32-bit lanes.
template <typename Fmt>
BATON_WIRE_WIDE __m256 decode8(__m256i b) {
  const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(b, _mm256_set1_epi32(int(Fmt::kSignBit))), Fmt::kSignShift);
  const __m256i exp = _mm256_srli_epi32(_mm256_and_si256(b, _mm256_set1_epi32(int(Fmt::kExpMask))), Fmt::kMantissaBits);
  const __m256i mant = _mm256_and_si256(b, _mm256_set1_epi32(int(Fmt::kMantMask)));
  const __m256i normal = _mm256_or_si256(
      sign, _mm256_or_si256(_mm256_slli_epi32(_mm256_add_epi32(exp, _mm256_set1_epi32(127 - Fmt::kBias)), 23),
                            _mm256_slli_epi32(mant, Fmt::kMantShift)));
  const __m256i subnormal =
      _mm256_or_si256(sign, _mm256_castps_si256(_mm256_mul_ps(_mm256_cvtepi32_ps(mant), _mm256_set1_ps(Fmt::kUnit))));
  __m256i r = _mm256_blendv_epi8(normal, subnormal, _mm256_cmpeq_epi32(exp, _mm256_setzero_si256()));
  static_assert(!Fmt::kHasInfinity, "the wire formats' elements and scales have no infinity");
  if constexpr (Fmt::kHasNaNCode) {  // e4m3's S.1111.111
    const __m256i mag = _mm256_and_si256(b, _mm256_set1_epi32(int(~Fmt::kSignBit)));
    const __m256i isNaN = _mm256_cmpeq_epi32(mag, _mm256_set1_epi32(int(Fmt::kExpMask | Fmt::kMantMask)));
    r = _mm256_blendv_epi8(r, _mm256_or_si256(sign, _mm256_set1_epi32(0x7fc00000)), isNaN);
  }
  return _mm256_castsi256_ps(r);
}

// 8 e4m3 codes at p decoded through F16C: an e4m3 code's 7 magnitude bits shifted left by 7 are a
// half whose value is the code's times 2^-8, subnormals included (the biases differ by 8, and a
// half's subnormals are spaced alike), so times 256 it is decode8's value exactly; S.1111.111 is
// e4m3's NaN, which the half would read as 1.875: those lanes take decode8's NaN bits instead.
BATON_WIRE_WIDE __m256 decodeE4m3x8(const uint8_t* p) {
  int64_t eight;
  memcpy(&eight, p, 8);
  const __m128i b = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(eight));
  const __m128i mag = _mm_and_si128(b, _mm_set1_epi16(0x7f));
  const __m128i h = _mm_or_si128(_mm_slli_epi16(_mm_and_si128(b, _mm_set1_epi16(0x80)), 8), _mm_slli_epi16(mag, 7));
  const __m256 f = _mm256_mul_ps(_mm256_cvtph_ps(h), _mm256_set1_ps(256.f));
  const __m256 isNaN = _mm256_castsi256_ps(_mm256_cvtepi16_epi32(_mm_cmpeq_epi16(mag, _mm_set1_epi16(0x7f))));
  const __m256 nan = _mm256_or_ps(_mm256_and_ps(f, _mm256_castsi256_ps(_mm256_set1_epi32(int(0x80000000u)))),
                                  _mm256_castsi256_ps(_mm256_set1_epi32(0x7fc00000)));
  return _mm256_blendv_ps(f, nan, isNaN);
}

// 8 fp4 codes from 4 bytes (element 2j in byte j's low nibble), in 32-bit lanes.
BATON_WIRE_WIDE __m256i unpackNibbles(const uint8_t* p) {
  int32_t four;
  memcpy(&four, p, 4);
  const __m128i bytes = _mm_cvtsi32_si128(four);
  const __m256i dup = _mm256_cvtepu8_epi32(_mm_unpacklo_epi8(bytes, bytes));  // b0 b0 b1 b1 b2 b2 b3 b3
  return _mm256_and_si256(_mm256_srlv_epi32(dup, _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4)), _mm256_set1_epi32(15));
}

// 8 fp4 codes in 32-bit lanes packed into 4 bytes at p.
BATON_WIRE_WIDE void packNibbles(__m256i c, uint8_t* p) {
  const __m256i pairs = _mm256_or_si256(c, _mm256_srli_epi64(c, 28));  // low word of each 64: even | odd << 4
  const __m128i four =
      _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(pairs, _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6)));
  const __m128i bytes = _mm_packus_epi16(_mm_packus_epi32(four, four), _mm_setzero_si128());
  const int32_t out = _mm_cvtsi128_si32(bytes);
  memcpy(p, &out, 4);
}

// 32 codes in four vectors of 32-bit lanes, stored as 32 bytes in order.
BATON_WIRE_WIDE void packBytes32(__m256i c0, __m256i c1, __m256i c2, __m256i c3, uint8_t* p) {
  const __m256i b = _mm256_packus_epi16(_mm256_packus_epi32(c0, c1), _mm256_packus_epi32(c2, c3));
  // Per 128-bit lane the packs interleave 4-byte groups: lane 0 holds c0 c1 c2 c3's first halves.
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                      _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}

// The largest |x| of 8 * vectors elements as ordered bits (>= 0x7f800000: inf or NaN among them);
// finiteOnly: infinities and NaNs count as 0 (NVFP4's segment amax).
template <typename T, bool kFiniteOnly>
BATON_WIRE_WIDE __m256i absMax8(const T* x, size_t vectors, __m256i m) {
  for (size_t k = 0; k < vectors; ++k) {
    __m256i a = _mm256_and_si256(_mm256_castps_si256(load8(x + 8 * k)), _mm256_set1_epi32(0x7fffffff));
    if constexpr (kFiniteOnly) a = _mm256_andnot_si256(_mm256_cmpgt_epi32(a, _mm256_set1_epi32(0x7f7fffff)), a);
    m = _mm256_max_epi32(m, a);
  }
  return m;
}

BATON_WIRE_WIDE uint32_t horizontalMax(__m256i m) {
  __m128i h = _mm_max_epi32(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
  h = _mm_max_epi32(h, _mm_shuffle_epi32(h, 0x4e));
  h = _mm_max_epi32(h, _mm_shuffle_epi32(h, 0xb1));
  return uint32_t(_mm_cvtsi128_si32(h));
}

// NVFP4's segment amax over the first `vectors` x 8 elements (the caller folds in the rest).
template <typename T>
__attribute__((target("avx2,f16c"))) uint32_t finiteAbsMaxWide(const T* x, size_t vectors) {
  return horizontalMax(absMax8<T, true>(x, vectors, _mm256_setzero_si256()));
}

// quantizeSegment's round-to-nearest work for the first `fullBlocks` blocks of a segment, each
// step as the scalar loop takes it: the block's amax, its scale (the scalar functions), then the
// elements times mul (divided by div: NVFP4) encoded eight at a time. A block holding an inf or a
// NaN gets the NaN scale and zero elements. Returns how many blocks held one.
template <typename T>
__attribute__((target("avx2,f16c"))) uint32_t quantizeBlocksWide(WireFormat f, const T* x, size_t fullBlocks,
                                                                 float segScale, uint8_t* scales, uint8_t* values) {
  const size_t B = f == WireFormat::kNvfp4 ? 16 : 32, vectors = B / 8,
               blockBytes = f == WireFormat::kMxfp8 ? 32 : B / 2;
  uint32_t nonFinite = 0;
  for (size_t b = 0; b < fullBlocks; ++b, x += B, values += blockBytes) {
    const uint32_t amaxBits = horizontalMax(absMax8<T, false>(x, vectors, _mm256_setzero_si256()));
    if (amaxBits >= 0x7f800000u) {
      ++nonFinite;
      scales[b] = f == WireFormat::kNvfp4 ? detail::kNvfp4ScaleNaN : detail::kE8m0NaN;
      memset(values, 0, blockBytes);
      continue;
    }
    const float amax = detail::bitsFloat(amaxBits);
    if (f == WireFormat::kNvfp4) {
      const uint32_t code = detail::nvfp4BlockScale(amax / (6.f * segScale));
      scales[b] = uint8_t(code);
      const __m256 m = _mm256_set1_ps(1.f / segScale);
      const __m256 d = _mm256_set1_ps(code ? detail::Fp8E4M3Format::decode(code) : 1.f);
      for (size_t k = 0; k < 2; ++k)
        packNibbles(encode8<detail::Fp4E2M1Format>(_mm256_div_ps(_mm256_mul_ps(load8(x + 8 * k), m), d)),
                    values + 4 * k);
      continue;
    }
    const int e = f == WireFormat::kMxfp8 ? detail::mxScaleExp(amax, 448.f, 8) : detail::mxScaleExp(amax, 6.f, 2);
    scales[b] = uint8_t(e + 127);
    const __m256 m = _mm256_set1_ps(detail::pow2(-e));
    if (f == WireFormat::kMxfp8) {
      __m256i c[4];
      for (int k = 0; k < 4; ++k) c[k] = encode8<detail::Fp8E4M3Format>(_mm256_mul_ps(load8(x + 8 * k), m));
      packBytes32(c[0], c[1], c[2], c[3], values);
    } else {
      for (int k = 0; k < 4; ++k)
        packNibbles(encode8<detail::Fp4E2M1Format>(_mm256_mul_ps(load8(x + 8 * k), m)), values + 4 * k);
    }
  }
  return nonFinite;
}

// The first `fullBlocks` blocks decoded: v = value(code) x block scale (x segScale: NVFP4, in that
// order), stored into out as T, or added to it (kAdd, fp32).
template <typename T, bool kAdd>
__attribute__((target("avx2,f16c"))) void decodeBlocksWide(WireFormat f, const uint8_t* scales, const uint8_t* values,
                                                           size_t fullBlocks, float segScale, T* out) {
  const size_t B = f == WireFormat::kNvfp4 ? 16 : 32, vectors = B / 8,
               blockBytes = f == WireFormat::kMxfp8 ? 32 : B / 2;
  const __m256 seg = _mm256_set1_ps(segScale);
  for (size_t b = 0; b < fullBlocks; ++b, values += blockBytes, out += B) {
    const __m256 sv = _mm256_set1_ps(detail::blockScale(f, scales[b]));
    for (size_t k = 0; k < vectors; ++k) {
      __m256 v;
      if (f == WireFormat::kMxfp8) {
        v = _mm256_mul_ps(decodeE4m3x8(values + 8 * k), sv);
      } else {
        v = _mm256_mul_ps(decode8<detail::Fp4E2M1Format>(unpackNibbles(values + 4 * k)), sv);
        if (f == WireFormat::kNvfp4) v = _mm256_mul_ps(v, seg);
      }
      if constexpr (kAdd) _mm256_storeu_ps(out + 8 * k, _mm256_add_ps(_mm256_loadu_ps(out + 8 * k), v));
      else store8(out + 8 * k, v);
    }
  }
}

#undef BATON_WIRE_WIDE

}  // namespace x86
}  // namespace baton

#endif  // BATON_REDUCE_X86

// Unit tests for algorithms/datatypes.h: exhaustive round trips of every half / bf16 / fp8 bit
// pattern, known values, round-to-nearest-even at every midpoint, overflow, NaN handling, and
// the TypeTraits table.
#include "datatypes.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

namespace baton {
namespace {

uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// Bit-pattern helpers so each test can be written once for all four types.
template <typename T>
using Bits = decltype(T{}.bits);
template <typename T>
T make(uint32_t b) {
  return T{Bits<T>(b)};
}
template <typename T>
constexpr uint32_t kPatterns = 1u << (8 * sizeof(T));
template <typename T>
constexpr uint32_t kSign = 1u << (8 * sizeof(T) - 1);

template <typename T>
bool isNaNBits(uint32_t b) {
  return std::isnan(toFloat(make<T>(b)));
}

// All finite non-negative values of T in increasing order of magnitude (bit order is value order).
template <typename T>
std::vector<uint32_t> finitePositivePatterns() {
  std::vector<uint32_t> out;
  for (uint32_t b = 0; b < kSign<T>; ++b)
    if (std::isfinite(toFloat(make<T>(b)))) out.push_back(b);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Exhaustive round trips.

template <typename T>
void checkRoundTripAll() {
  for (uint32_t b = 0; b < kPatterns<T>; ++b) {
    const float f = toFloat(make<T>(b));
    const uint32_t back = fromFloat<T>(f).bits;
    if (std::isnan(f)) {
      ASSERT_TRUE(isNaNBits<T>(back)) << std::hex << "pattern 0x" << b << " -> 0x" << back;
      ASSERT_EQ(back & kSign<T>, b & kSign<T>) << std::hex << "NaN sign, pattern 0x" << b;
    } else {
      ASSERT_EQ(back, b) << std::hex << "pattern 0x" << b << " value " << f;
    }
  }
}

TEST(DatatypesTest, RoundTripEveryFp8E4M3) { checkRoundTripAll<fp8e4m3_t>(); }
TEST(DatatypesTest, RoundTripEveryFp8E5M2) { checkRoundTripAll<fp8e5m2_t>(); }
TEST(DatatypesTest, RoundTripEveryHalf) { checkRoundTripAll<half_t>(); }
TEST(DatatypesTest, RoundTripEveryBfloat16) { checkRoundTripAll<bfloat16_t>(); }

// Decoding is monotonic in the bit pattern and symmetric in the sign: catches a wrong exponent
// or subnormal scale that a round trip alone would not.
template <typename T>
void checkMonotonicAndSymmetric() {
  const std::vector<uint32_t> pos = finitePositivePatterns<T>();
  for (size_t i = 1; i < pos.size(); ++i)
    ASSERT_LT(toFloat(make<T>(pos[i - 1])), toFloat(make<T>(pos[i]))) << std::hex << pos[i];
  for (uint32_t b : pos) {
    const float p = toFloat(make<T>(b));
    const float n = toFloat(make<T>(b | kSign<T>));
    ASSERT_EQ(bitsOf(n), bitsOf(p) | 0x80000000u) << std::hex << b;
  }
}

TEST(DatatypesTest, DecodeMonotonicFp8E4M3) { checkMonotonicAndSymmetric<fp8e4m3_t>(); }
TEST(DatatypesTest, DecodeMonotonicFp8E5M2) { checkMonotonicAndSymmetric<fp8e5m2_t>(); }
TEST(DatatypesTest, DecodeMonotonicHalf) { checkMonotonicAndSymmetric<half_t>(); }
TEST(DatatypesTest, DecodeMonotonicBfloat16) { checkMonotonicAndSymmetric<bfloat16_t>(); }

// ---------------------------------------------------------------------------------------------
// Rounding: at every midpoint between adjacent finite values (and one float ulp either side),
// from-float must pick the nearer value, ties to the even pattern.

template <typename T>
void checkMidpointRounding() {
  const std::vector<uint32_t> pos = finitePositivePatterns<T>();
  for (size_t i = 1; i < pos.size(); ++i) {
    const uint32_t lo = pos[i - 1], hi = pos[i];
    const float a = toFloat(make<T>(lo)), b = toFloat(make<T>(hi));
    const float mid = a + (b - a) / 2;  // exact: the narrow types have far fewer mantissa bits
    ASSERT_EQ(mid - a, b - mid);
    const uint32_t even = (lo & 1u) ? hi : lo;
    for (uint32_t sign : {0u, kSign<T>}) {
      const float s = sign ? -1.0f : 1.0f;
      ASSERT_EQ(fromFloat<T>(s * mid).bits, even | sign) << std::hex << "tie 0x" << lo << "/0x" << hi;
      ASSERT_EQ(fromFloat<T>(s * std::nextafter(mid, a)).bits, lo | sign) << std::hex << lo;
      ASSERT_EQ(fromFloat<T>(s * std::nextafter(mid, b)).bits, hi | sign) << std::hex << hi;
      ASSERT_EQ(fromFloat<T>(s * std::nextafter(a, b)).bits, lo | sign) << std::hex << lo;
      ASSERT_EQ(fromFloat<T>(s * std::nextafter(b, a)).bits, hi | sign) << std::hex << hi;
    }
  }
}

TEST(DatatypesTest, MidpointRoundingFp8E4M3) { checkMidpointRounding<fp8e4m3_t>(); }
TEST(DatatypesTest, MidpointRoundingFp8E5M2) { checkMidpointRounding<fp8e5m2_t>(); }
TEST(DatatypesTest, MidpointRoundingHalf) { checkMidpointRounding<half_t>(); }
TEST(DatatypesTest, MidpointRoundingBfloat16) { checkMidpointRounding<bfloat16_t>(); }

TEST(DatatypesTest, TiesToEvenExamples) {
  EXPECT_EQ(toFloat(fromFloat<half_t>(2049.0f)), 2048.0f);
  EXPECT_EQ(toFloat(fromFloat<half_t>(2051.0f)), 2052.0f);
  EXPECT_EQ(toFloat(fromFloat<half_t>(-2049.0f)), -2048.0f);
  EXPECT_EQ(toFloat(fromFloat<half_t>(2049.5f)), 2050.0f);
  EXPECT_EQ(toFloat(fromFloat<bfloat16_t>(257.0f)), 256.0f);
  EXPECT_EQ(toFloat(fromFloat<bfloat16_t>(259.0f)), 260.0f);
  EXPECT_EQ(toFloat(fromFloat<fp8e4m3_t>(17.0f)), 16.0f);  // 16 and 18 neighbours
  EXPECT_EQ(toFloat(fromFloat<fp8e4m3_t>(19.0f)), 20.0f);
  EXPECT_EQ(toFloat(fromFloat<fp8e5m2_t>(9.0f)), 8.0f);  // 8 and 10 neighbours
  EXPECT_EQ(toFloat(fromFloat<fp8e5m2_t>(11.0f)), 12.0f);
  // Subnormal ties: half of the smallest subnormal rounds to (even) zero; 1.5 units to 2.
  EXPECT_EQ(fromFloat<half_t>(std::ldexp(1.0f, -25)).bits, 0x0000);
  EXPECT_EQ(fromFloat<half_t>(std::ldexp(3.0f, -25)).bits, 0x0002);
  EXPECT_EQ(fromFloat<fp8e4m3_t>(std::ldexp(1.0f, -10)).bits, 0x00);
  EXPECT_EQ(fromFloat<fp8e4m3_t>(std::ldexp(3.0f, -10)).bits, 0x02);
  EXPECT_EQ(fromFloat<fp8e5m2_t>(std::ldexp(1.0f, -17)).bits, 0x00);
  EXPECT_EQ(fromFloat<fp8e5m2_t>(std::ldexp(3.0f, -17)).bits, 0x02);
  // Largest subnormal rounding up into the smallest normal.
  EXPECT_EQ(fromFloat<half_t>(std::ldexp(1.0f, -14) * (1.0f - 1.0f / 4096)).bits, 0x0400);
}

// ---------------------------------------------------------------------------------------------
// Known values.

TEST(DatatypesTest, KnownValuesHalf) {
  EXPECT_EQ(fromFloat<half_t>(1.0f).bits, 0x3c00);
  EXPECT_EQ(fromFloat<half_t>(-2.5f).bits, 0xc100);
  EXPECT_EQ(fromFloat<half_t>(65504.0f).bits, 0x7bff);
  EXPECT_EQ(fromFloat<half_t>(0.0f).bits, 0x0000);
  EXPECT_EQ(fromFloat<half_t>(-0.0f).bits, 0x8000);
  EXPECT_EQ(toFloat(half_t{0x3c00}), 1.0f);
  EXPECT_EQ(toFloat(half_t{0xc100}), -2.5f);
  EXPECT_EQ(toFloat(half_t{0x7bff}), 65504.0f);
  EXPECT_EQ(toFloat(half_t{0x0001}), std::ldexp(1.0f, -24));     // smallest subnormal
  EXPECT_EQ(toFloat(half_t{0x03ff}), std::ldexp(1023.0f, -24));  // largest subnormal
  EXPECT_EQ(toFloat(half_t{0x0400}), std::ldexp(1.0f, -14));     // smallest normal
  EXPECT_EQ(fromFloat<half_t>(std::ldexp(1.0f, -24)).bits, 0x0001);
  EXPECT_EQ(toFloat(half_t{0x7c00}), std::numeric_limits<float>::infinity());
  EXPECT_EQ(toFloat(half_t{0xfc00}), -std::numeric_limits<float>::infinity());
}

TEST(DatatypesTest, KnownValuesBfloat16) {
  EXPECT_EQ(fromFloat<bfloat16_t>(1.0f).bits, 0x3f80);
  EXPECT_EQ(fromFloat<bfloat16_t>(-2.5f).bits, 0xc020);
  EXPECT_EQ(toFloat(bfloat16_t{0x7f7f}), std::ldexp(255.0f, 120));  // max finite
  EXPECT_EQ(toFloat(bfloat16_t{0x0001}), std::ldexp(1.0f, -133));   // smallest subnormal
  EXPECT_EQ(fromFloat<bfloat16_t>(std::ldexp(1.0f, -133)).bits, 0x0001);
  EXPECT_EQ(fromFloat<bfloat16_t>(std::ldexp(1.0f, -134)).bits, 0x0000);  // tie -> even (0)
  EXPECT_EQ(toFloat(bfloat16_t{0x7f80}), std::numeric_limits<float>::infinity());
}

TEST(DatatypesTest, KnownValuesFp8E4M3) {
  EXPECT_EQ(fromFloat<fp8e4m3_t>(1.0f).bits, 0x38);
  EXPECT_EQ(fromFloat<fp8e4m3_t>(-2.5f).bits, 0xc2);
  EXPECT_EQ(fromFloat<fp8e4m3_t>(448.0f).bits, 0x7e);
  EXPECT_EQ(fromFloat<fp8e4m3_t>(-448.0f).bits, 0xfe);
  EXPECT_EQ(toFloat(fp8e4m3_t{0x7e}), 448.0f);
  EXPECT_EQ(toFloat(fp8e4m3_t{0x78}), 256.0f);                // all-ones exponent is finite in the FN variant
  EXPECT_EQ(toFloat(fp8e4m3_t{0x01}), std::ldexp(1.0f, -9));  // smallest subnormal
  EXPECT_EQ(toFloat(fp8e4m3_t{0x07}), std::ldexp(7.0f, -9));  // largest subnormal
  EXPECT_EQ(toFloat(fp8e4m3_t{0x08}), std::ldexp(1.0f, -6));  // smallest normal
  EXPECT_EQ(fromFloat<fp8e4m3_t>(std::ldexp(1.0f, -9)).bits, 0x01);
  EXPECT_TRUE(std::isnan(toFloat(fp8e4m3_t{0x7f})));
  EXPECT_TRUE(std::isnan(toFloat(fp8e4m3_t{0xff})));
  int nans = 0;
  for (uint32_t b = 0; b < 256; ++b) nans += isNaNBits<fp8e4m3_t>(b);
  EXPECT_EQ(nans, 2);  // only S.1111.111
  for (uint32_t b = 0; b < 256; ++b) EXPECT_FALSE(std::isinf(toFloat(fp8e4m3_t{uint8_t(b)}))) << b;
}

TEST(DatatypesTest, KnownValuesFp8E5M2) {
  EXPECT_EQ(fromFloat<fp8e5m2_t>(1.0f).bits, 0x3c);
  EXPECT_EQ(fromFloat<fp8e5m2_t>(-2.5f).bits, 0xc1);
  EXPECT_EQ(fromFloat<fp8e5m2_t>(57344.0f).bits, 0x7b);
  EXPECT_EQ(toFloat(fp8e5m2_t{0x7b}), 57344.0f);
  EXPECT_EQ(toFloat(fp8e5m2_t{0x01}), std::ldexp(1.0f, -16));  // smallest subnormal
  EXPECT_EQ(toFloat(fp8e5m2_t{0x04}), std::ldexp(1.0f, -14));  // smallest normal
  EXPECT_EQ(fromFloat<fp8e5m2_t>(std::ldexp(1.0f, -16)).bits, 0x01);
  EXPECT_EQ(toFloat(fp8e5m2_t{0x7c}), std::numeric_limits<float>::infinity());
  EXPECT_EQ(toFloat(fp8e5m2_t{0xfc}), -std::numeric_limits<float>::infinity());
  int nans = 0;
  for (uint32_t b = 0; b < 256; ++b) nans += isNaNBits<fp8e5m2_t>(b);
  EXPECT_EQ(nans, 6);  // S.11111.{01,10,11}
}

// ---------------------------------------------------------------------------------------------
// Overflow, infinities, NaN.

TEST(DatatypesTest, OverflowHalf) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(fromFloat<half_t>(65519.0f).bits, 0x7bff);  // below the midpoint to 65536
  EXPECT_EQ(fromFloat<half_t>(65520.0f).bits, 0x7c00);  // midpoint, odd max -> rounds to inf
  EXPECT_EQ(fromFloat<half_t>(1e6f).bits, 0x7c00);
  EXPECT_EQ(fromFloat<half_t>(-1e6f).bits, 0xfc00);
  EXPECT_EQ(fromFloat<half_t>(inf).bits, 0x7c00);
  EXPECT_EQ(fromFloat<half_t>(-inf).bits, 0xfc00);
  EXPECT_EQ(fromFloat<half_t>(std::numeric_limits<float>::max()).bits, 0x7c00);
  EXPECT_EQ(fromFloat<half_t>(std::numeric_limits<float>::denorm_min()).bits, 0x0000);
  EXPECT_EQ(fromFloat<half_t>(-std::numeric_limits<float>::denorm_min()).bits, 0x8000);
}

TEST(DatatypesTest, OverflowBfloat16) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(fromFloat<bfloat16_t>(std::numeric_limits<float>::max()).bits, 0x7f80);
  EXPECT_EQ(fromFloat<bfloat16_t>(-std::numeric_limits<float>::max()).bits, 0xff80);
  EXPECT_EQ(fromFloat<bfloat16_t>(inf).bits, 0x7f80);
  EXPECT_EQ(fromFloat<bfloat16_t>(-inf).bits, 0xff80);
  EXPECT_EQ(fromFloat<bfloat16_t>(std::ldexp(255.5f, 120)).bits, 0x7f80);  // tie above max (odd)
  EXPECT_EQ(fromFloat<bfloat16_t>(std::nextafter(std::ldexp(255.5f, 120), 0.0f)).bits, 0x7f7f);
}

TEST(DatatypesTest, OverflowFp8E4M3Saturates) {
  const float inf = std::numeric_limits<float>::infinity();
  for (float f : {449.0f, 464.0f, 465.0f, 480.0f, 1000.0f, 1e30f, std::numeric_limits<float>::max(), inf}) {
    EXPECT_EQ(fromFloat<fp8e4m3_t>(f).bits, 0x7e) << f;
    EXPECT_EQ(fromFloat<fp8e4m3_t>(-f).bits, 0xfe) << f;
  }
}

TEST(DatatypesTest, OverflowFp8E5M2ToInf) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(fromFloat<fp8e5m2_t>(60000.0f).bits, 0x7b);  // below the midpoint to 65536
  EXPECT_EQ(fromFloat<fp8e5m2_t>(std::nextafter(61440.0f, 0.0f)).bits, 0x7b);
  EXPECT_EQ(fromFloat<fp8e5m2_t>(61440.0f).bits, 0x7c);  // midpoint, odd max -> rounds to inf
  EXPECT_EQ(fromFloat<fp8e5m2_t>(1e6f).bits, 0x7c);
  EXPECT_EQ(fromFloat<fp8e5m2_t>(-1e6f).bits, 0xfc);
  EXPECT_EQ(fromFloat<fp8e5m2_t>(inf).bits, 0x7c);
  EXPECT_EQ(fromFloat<fp8e5m2_t>(-inf).bits, 0xfc);
}

template <typename T>
void checkNaNFromFloat() {
  const float nans[] = {std::numeric_limits<float>::quiet_NaN(),     -std::numeric_limits<float>::quiet_NaN(),
                        std::numeric_limits<float>::signaling_NaN(), std::bit_cast<float>(0x7f800001u),
                        std::bit_cast<float>(0xff800001u),           std::bit_cast<float>(0x7fffffffu)};
  for (float f : nans) {
    const uint32_t b = fromFloat<T>(f).bits;
    EXPECT_TRUE(isNaNBits<T>(b)) << std::hex << bitsOf(f) << " -> " << b;
    EXPECT_EQ(b & kSign<T>, (bitsOf(f) >> 31) ? kSign<T> : 0u) << std::hex << bitsOf(f);
    EXPECT_TRUE(std::isnan(toFloat(make<T>(b))));
  }
}

TEST(DatatypesTest, NaNFromFloat) {
  checkNaNFromFloat<half_t>();
  checkNaNFromFloat<bfloat16_t>();
  checkNaNFromFloat<fp8e4m3_t>();
  checkNaNFromFloat<fp8e5m2_t>();
  // Quiet NaNs: the quiet bit is set in the narrow encoding and in the widened float.
  EXPECT_EQ(fromFloat<bfloat16_t>(std::bit_cast<float>(0x7f800001u)).bits, 0x7fc0);
  EXPECT_EQ(fromFloat<half_t>(std::bit_cast<float>(0x7f800001u)).bits, 0x7e00);
  EXPECT_EQ(fromFloat<fp8e4m3_t>(std::bit_cast<float>(0xff800001u)).bits, 0xff);
  EXPECT_EQ(fromFloat<fp8e5m2_t>(std::bit_cast<float>(0x7f800001u)).bits, 0x7e);
  EXPECT_EQ(bitsOf(toFloat(half_t{0x7c01})) & 0x7fc00000u, 0x7fc00000u);
}

// ---------------------------------------------------------------------------------------------
// Small integers are exact.

template <typename T>
void checkIntegersExact(int maxInt) {
  for (int i = -maxInt; i <= maxInt; ++i) {
    const float f = float(i);
    ASSERT_EQ(toFloat(fromFloat<T>(f)), f) << i;
  }
}

TEST(DatatypesTest, IntegersExact) {
  checkIntegersExact<fp8e4m3_t>(16);
  checkIntegersExact<fp8e5m2_t>(8);
  checkIntegersExact<bfloat16_t>(256);
  checkIntegersExact<half_t>(2048);
  // And the next integer is the first that is not.
  EXPECT_NE(toFloat(fromFloat<fp8e4m3_t>(17.0f)), 17.0f);
  EXPECT_NE(toFloat(fromFloat<fp8e5m2_t>(9.0f)), 9.0f);
  EXPECT_NE(toFloat(fromFloat<bfloat16_t>(257.0f)), 257.0f);
  EXPECT_NE(toFloat(fromFloat<half_t>(2049.0f)), 2049.0f);
}

// ---------------------------------------------------------------------------------------------
// Cross-check against the compiler's own conversions where it has them.

#if defined(__FLT16_MAX__) && !defined(__CUDACC__)
TEST(DatatypesTest, HalfMatchesCompilerFloat16) {
  // Every half decodes as _Float16 does, and a sweep of float bit patterns (every 4099th, which
  // hits all exponents and many mantissas) encodes as the compiler's conversion does.
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const _Float16 h = std::bit_cast<_Float16>(uint16_t(b));
    const float ref = float(h);
    const float got = toFloat(half_t{uint16_t(b)});
    if (std::isnan(ref)) ASSERT_TRUE(std::isnan(got)) << b;
    else ASSERT_EQ(bitsOf(got), bitsOf(ref)) << std::hex << b;
  }
  for (uint64_t u = 0; u <= 0xffffffffull; u += 4099) {
    const float f = std::bit_cast<float>(uint32_t(u));
    const uint16_t ref = std::bit_cast<uint16_t>(_Float16(f));
    const uint16_t got = fromFloat<half_t>(f).bits;
    if (std::isnan(f)) ASSERT_TRUE(isNaNBits<half_t>(got));
    else ASSERT_EQ(got, ref) << std::hex << u;
  }
}
#endif

// ---------------------------------------------------------------------------------------------
// Constant evaluation and traits.

static_assert(toFloat(half_t{0x3c00}) == 1.0f);
static_assert(fromFloat<fp8e4m3_t>(1000.0f).bits == 0x7e);
static_assert(fromFloat<bfloat16_t>(1.0f).bits == 0x3f80);

template <typename T, typename C, bool F>
constexpr bool traitsAre() {
  return std::is_same_v<typename TypeTraits<T>::Compute, C> && TypeTraits<T>::isFloat == F;
}
static_assert(traitsAre<int8_t, int8_t, false>());
static_assert(traitsAre<uint8_t, uint8_t, false>());
static_assert(traitsAre<int32_t, int32_t, false>());
static_assert(traitsAre<uint32_t, uint32_t, false>());
static_assert(traitsAre<int64_t, int64_t, false>());
static_assert(traitsAre<uint64_t, uint64_t, false>());
static_assert(traitsAre<float, float, true>());
static_assert(traitsAre<double, double, true>());
static_assert(traitsAre<half_t, float, true>());
static_assert(traitsAre<bfloat16_t, float, true>());
static_assert(traitsAre<fp8e4m3_t, float, true>());
static_assert(traitsAre<fp8e5m2_t, float, true>());

TEST(DatatypesTest, TraitsLoadStore) {
  EXPECT_EQ(TypeTraits<int8_t>::load(int8_t(-7)), -7);
  EXPECT_EQ(TypeTraits<uint64_t>::store(~0ull), ~0ull);
  EXPECT_EQ(TypeTraits<double>::load(0.1), 0.1);
  EXPECT_EQ(TypeTraits<half_t>::load(half_t{0xc100}), -2.5f);
  EXPECT_EQ(TypeTraits<half_t>::store(-2.5f).bits, 0xc100);
  EXPECT_EQ(TypeTraits<bfloat16_t>::store(TypeTraits<bfloat16_t>::load(bfloat16_t{0x4049})).bits, 0x4049);
  EXPECT_EQ(TypeTraits<fp8e4m3_t>::store(3.0f * TypeTraits<fp8e4m3_t>::load(fp8e4m3_t{0x7e})).bits, 0x7e);
  EXPECT_EQ(TypeTraits<fp8e5m2_t>::store(TypeTraits<fp8e5m2_t>::load(fp8e5m2_t{0x3c}) + 1.0f).bits, 0x40);
}

}  // namespace
}  // namespace baton

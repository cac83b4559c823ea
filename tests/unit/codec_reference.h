// The scalar codecs of algorithms/datatypes.h as they were before issue 42 made them branch-free
// (git show 7169fe5:algorithms/datatypes.h): a readable oracle the tests hold today's codecs to,
// bit for bit. Test code only; the library has one codec per format.
#pragma once

#include <cstdint>

#include "datatypes.h"

namespace baton::reference {

using detail::bitsFloat;
using detail::floatBits;

// v >> s, rounded to nearest with ties to even. Requires 1 <= s and v < 2^31 (s >= 32 gives 0).
constexpr uint32_t shiftRne(uint32_t v, uint32_t s) {
  if (s >= 32) return 0;
  const uint32_t q = v >> s;
  const uint32_t rem = v & ((1u << s) - 1u);
  const uint32_t halfway = 1u << (s - 1);
  return q + ((rem > halfway || (rem == halfway && (q & 1u))) ? 1u : 0u);
}

// A binary float format narrower than float: 1 sign bit, kExpBits exponent bits (bias
// 2^(kExpBits-1)-1), kMantBits mantissa bits, with subnormals. kHasInf: IEEE-style (all-ones
// exponent = inf/NaN). Otherwise the "FN" style: all-ones exponent is finite except the single NaN
// encoding S.1...1.1...1, and overflow saturates to the largest finite value.
template <int kExpBits, int kMantBits, bool kHasInf>
struct NarrowFloat {
  static constexpr int kBias = (1 << (kExpBits - 1)) - 1;
  static constexpr uint32_t kSignBit = 1u << (kExpBits + kMantBits);
  static constexpr uint32_t kExpMask = ((1u << kExpBits) - 1u) << kMantBits;
  static constexpr uint32_t kMantMask = (1u << kMantBits) - 1u;
  static constexpr uint32_t kInf = kExpMask;  // meaningful only when kHasInf
  static constexpr uint32_t kMaxFinite = kHasInf ? kExpMask - 1u : (kExpMask | kMantMask) - 1u;
  static constexpr uint32_t kQuietNaN = kHasInf ? kExpMask | (1u << (kMantBits - 1)) : kExpMask | kMantMask;
  static constexpr int kSignShift = 31 - kExpBits - kMantBits;  // float sign bit -> format sign bit
  static constexpr int kMantShift = 23 - kMantBits;             // float mantissa -> format mantissa

  static constexpr bool isNaN(uint32_t b) {
    const uint32_t mag = b & ~kSignBit;
    return kHasInf ? mag > kInf : mag == (kExpMask | kMantMask);
  }

  // Exact widening to float.
  static constexpr float decode(uint32_t b) {
    const uint32_t sign = (b & kSignBit) << kSignShift;
    const uint32_t exp = (b & kExpMask) >> kMantBits;
    uint32_t mant = b & kMantMask;
    if (isNaN(b)) {
      const uint32_t payload = kHasInf ? mant << kMantShift : 0u;
      return bitsFloat(sign | 0x7fc00000u | payload);
    }
    if (kHasInf && exp == (kExpMask >> kMantBits)) return bitsFloat(sign | 0x7f800000u);
    if (exp == 0) {
      if (mant == 0) return bitsFloat(sign);
      // Subnormal: normalize. Every narrow subnormal is a normal float.
      uint32_t e = uint32_t(1 - kBias + 127);
      while (!(mant & (1u << kMantBits))) {
        mant <<= 1;
        --e;
      }
      return bitsFloat(sign | e << 23 | (mant & kMantMask) << kMantShift);
    }
    return bitsFloat(sign | (exp + uint32_t(127 - kBias)) << 23 | mant << kMantShift);
  }

  // float -> format, round to nearest even.
  static constexpr uint32_t encode(float f) {
    const uint32_t x = floatBits(f);
    const uint32_t sign = (x >> kSignShift) & kSignBit;
    const uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) {  // NaN
      if (kHasInf) return sign | kQuietNaN | ((ax >> kMantShift) & kMantMask);
      return sign | kQuietNaN;
    }
    const uint32_t fexp = ax >> 23;
    uint32_t mag;
    if (int(fexp) - 127 >= 1 - kBias) {
      // Normal in the target (or overflowing; float inf lands here too). Rebias the exponent and
      // round the mantissa; a mantissa carry correctly bumps the exponent.
      const uint32_t rebiased = (fexp - uint32_t(127 - kBias)) << 23 | (ax & 0x7fffffu);
      mag = shiftRne(rebiased, uint32_t(kMantShift));
    } else {
      // Subnormal (or zero) in the target: value = m * 2^(e-23), target unit = 2^(1-bias-M).
      const uint32_t m = (ax & 0x7fffffu) | (fexp ? 0x800000u : 0u);
      const int e = fexp ? int(fexp) - 127 : -126;
      mag = shiftRne(m, uint32_t(kMantShift + (1 - kBias) - e));
    }
    if (mag > kMaxFinite) mag = kHasInf ? kInf : kMaxFinite;
    return sign | mag;
  }
};

using Half = NarrowFloat<5, 10, true>;
using E4M3 = NarrowFloat<4, 3, false>;
using E5M2 = NarrowFloat<5, 2, true>;

// bfloat16: the top half of a float, rounded to nearest even; NaN kept quiet.
constexpr uint16_t bf16Encode(float f) {
  const uint32_t x = floatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);
  return uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
constexpr float bf16Decode(uint16_t b) { return bitsFloat(uint32_t(b) << 16); }

}  // namespace baton::reference

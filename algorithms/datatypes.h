// Device-portable narrow floating types (half, bfloat16, fp8 e4m3 / e5m2) and the per-element-type
// traits baton's reductions use: each element is loaded into a Compute type (float for the 16- and
// 8-bit floats, the type itself otherwise), reduced there, and stored back.
//
// Conversions are pure integer bit manipulation (no CUDA intrinsics, no <cuda_fp16.h>), so the CPU
// backend (g++) and the CUDA backend (nvcc) produce bit-identical results. float -> narrow rounds to
// nearest, ties to even, with subnormals, infinities and NaN handled:
//   half_t      IEEE binary16: max 65504, overflow -> inf, NaN -> quiet NaN (payload truncated).
//   bfloat16_t  top half of a float: overflow -> inf, NaN -> quiet NaN (payload truncated).
//   fp8e4m3_t   OCP E4M3 "FN": no inf, max 448, NaN = S.1111.111 only; finite overflow and +-inf
//               saturate to +-448 (like __NV_SATFINITE); NaN stays NaN.
//   fp8e5m2_t   IEEE-like E5M2: max 57344, overflow -> inf, NaN -> quiet NaN.
// narrow -> float is exact (NaN -> quiet NaN of the same sign).
//
// Introduced in lesson 01 (docs/lessons/01-naive-allreduce.md).
// Memory-ordering contract: none (pure value code, no shared memory).
#pragma once

#include <cstdint>
#include <type_traits>

#include "host_device.h"

namespace baton {

struct half_t {
  uint16_t bits;
};
struct bfloat16_t {
  uint16_t bits;
};
struct fp8e4m3_t {
  uint8_t bits;
};
struct fp8e5m2_t {
  uint8_t bits;
};

static_assert(sizeof(half_t) == 2 && sizeof(bfloat16_t) == 2);
static_assert(sizeof(fp8e4m3_t) == 1 && sizeof(fp8e5m2_t) == 1);
static_assert(std::is_trivially_copyable_v<half_t> && std::is_standard_layout_v<half_t>);
static_assert(std::is_trivially_copyable_v<bfloat16_t> && std::is_standard_layout_v<bfloat16_t>);
static_assert(std::is_trivially_copyable_v<fp8e4m3_t> && std::is_standard_layout_v<fp8e4m3_t>);
static_assert(std::is_trivially_copyable_v<fp8e5m2_t> && std::is_standard_layout_v<fp8e5m2_t>);

namespace detail {

BATON_HD constexpr uint32_t floatBits(float f) { return __builtin_bit_cast(uint32_t, f); }
BATON_HD constexpr float bitsFloat(uint32_t u) { return __builtin_bit_cast(float, u); }

// v >> s, rounded to nearest with ties to even. Requires 1 <= s and v < 2^31 (s >= 32 gives 0).
BATON_HD constexpr uint32_t shiftRne(uint32_t v, uint32_t s) {
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

  static BATON_HD constexpr bool isNaN(uint32_t b) {
    const uint32_t mag = b & ~kSignBit;
    return kHasInf ? mag > kInf : mag == (kExpMask | kMantMask);
  }

  // Exact widening to float.
  static BATON_HD constexpr float decode(uint32_t b) {
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
  static BATON_HD constexpr uint32_t encode(float f) {
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

using HalfFormat = NarrowFloat<5, 10, true>;
using Fp8E4M3Format = NarrowFloat<4, 3, false>;
using Fp8E5M2Format = NarrowFloat<5, 2, true>;

static_assert(HalfFormat::kMaxFinite == 0x7bffu && HalfFormat::kQuietNaN == 0x7e00u);
static_assert(Fp8E4M3Format::kMaxFinite == 0x7eu && Fp8E4M3Format::kQuietNaN == 0x7fu);
static_assert(Fp8E5M2Format::kMaxFinite == 0x7bu && Fp8E5M2Format::kQuietNaN == 0x7eu);

}  // namespace detail

// FloatCodec<T>::to(T) widens exactly to float; FloatCodec<T>::from(float) rounds to nearest even.
template <typename T>
struct FloatCodec;

template <>
struct FloatCodec<half_t> {
  static BATON_HD constexpr float to(half_t v) { return detail::HalfFormat::decode(v.bits); }
  static BATON_HD constexpr half_t from(float f) { return half_t{uint16_t(detail::HalfFormat::encode(f))}; }
};

template <>
struct FloatCodec<bfloat16_t> {
  static BATON_HD constexpr float to(bfloat16_t v) { return detail::bitsFloat(uint32_t(v.bits) << 16); }
  static BATON_HD constexpr bfloat16_t from(float f) {
    const uint32_t x = detail::floatBits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return bfloat16_t{uint16_t((x >> 16) | 0x40u)};  // quiet NaN
    // Round to nearest even; carries propagate into the exponent, and past the max finite to inf.
    return bfloat16_t{uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16)};
  }
};

template <>
struct FloatCodec<fp8e4m3_t> {
  static BATON_HD constexpr float to(fp8e4m3_t v) { return detail::Fp8E4M3Format::decode(v.bits); }
  static BATON_HD constexpr fp8e4m3_t from(float f) { return fp8e4m3_t{uint8_t(detail::Fp8E4M3Format::encode(f))}; }
};

template <>
struct FloatCodec<fp8e5m2_t> {
  static BATON_HD constexpr float to(fp8e5m2_t v) { return detail::Fp8E5M2Format::decode(v.bits); }
  static BATON_HD constexpr fp8e5m2_t from(float f) { return fp8e5m2_t{uint8_t(detail::Fp8E5M2Format::encode(f))}; }
};

// Shorthands: toFloat(h), fromFloat<half_t>(f).
template <typename T>
BATON_HD constexpr float toFloat(T v) {
  return FloatCodec<T>::to(v);
}
template <typename T>
BATON_HD constexpr T fromFloat(float f) {
  return FloatCodec<T>::from(f);
}

// Per element type: isFloat, the Compute type reductions run in, and load/store to and from it.
// Undefined for types baton does not reduce.
template <typename T>
struct TypeTraits;

namespace detail {

template <typename T, bool kIsFloat>
struct NativeTraits {
  static constexpr bool isFloat = kIsFloat;
  using Compute = T;
  static BATON_HD constexpr Compute load(T v) { return v; }
  static BATON_HD constexpr T store(Compute v) { return v; }
};

template <typename T>
struct NarrowFloatTraits {
  static constexpr bool isFloat = true;
  using Compute = float;
  static BATON_HD constexpr Compute load(T v) { return FloatCodec<T>::to(v); }
  static BATON_HD constexpr T store(Compute v) { return FloatCodec<T>::from(v); }
};

}  // namespace detail

template <>
struct TypeTraits<int8_t> : detail::NativeTraits<int8_t, false> {};
template <>
struct TypeTraits<uint8_t> : detail::NativeTraits<uint8_t, false> {};
template <>
struct TypeTraits<int32_t> : detail::NativeTraits<int32_t, false> {};
template <>
struct TypeTraits<uint32_t> : detail::NativeTraits<uint32_t, false> {};
template <>
struct TypeTraits<int64_t> : detail::NativeTraits<int64_t, false> {};
template <>
struct TypeTraits<uint64_t> : detail::NativeTraits<uint64_t, false> {};
template <>
struct TypeTraits<float> : detail::NativeTraits<float, true> {};
template <>
struct TypeTraits<double> : detail::NativeTraits<double, true> {};
template <>
struct TypeTraits<half_t> : detail::NarrowFloatTraits<half_t> {};
template <>
struct TypeTraits<bfloat16_t> : detail::NarrowFloatTraits<bfloat16_t> {};
template <>
struct TypeTraits<fp8e4m3_t> : detail::NarrowFloatTraits<fp8e4m3_t> {};
template <>
struct TypeTraits<fp8e5m2_t> : detail::NarrowFloatTraits<fp8e5m2_t> {};

}  // namespace baton

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

// c ? a : b by masks, not a branch: the float operations beside such a select then stay
// unconditional, so g++ vectorizes the loops around the codecs (it will not hoist a float operation
// out of a branch under the default -ftrapping-math).
BATON_HD constexpr uint32_t select(bool c, uint32_t a, uint32_t b) {
  const uint32_t m = 0u - uint32_t(c);
  return (a & m) | (b & ~m);
}

// A binary float format narrower than float: 1 sign bit, kExpBits exponent bits (bias
// 2^(kExpBits-1)-1), kMantBits mantissa bits, with subnormals. kHasInf: IEEE-style (all-ones
// exponent = inf/NaN). Otherwise the "FN" style: all-ones exponent is finite except the single NaN
// encoding S.1...1.1...1, and overflow saturates to the largest finite value. kHasNaN false (FP4
// e2m1): every code is finite, and a NaN input saturates like an overflow (the block codecs of
// block_formats.h catch NaN before an element is encoded).
template <int kExpBits, int kMantBits, bool kHasInf, bool kHasNaN = true>
struct NarrowFloat {
  static constexpr int kMantissaBits = kMantBits;
  static constexpr bool kHasInfinity = kHasInf;
  static constexpr bool kHasNaNCode = kHasNaN && !kHasInf;  // the FN style's single NaN code
  static constexpr int kBias = (1 << (kExpBits - 1)) - 1;
  static constexpr uint32_t kSignBit = 1u << (kExpBits + kMantBits);
  static constexpr uint32_t kExpMask = ((1u << kExpBits) - 1u) << kMantBits;
  static constexpr uint32_t kMantMask = (1u << kMantBits) - 1u;
  static constexpr uint32_t kInf = kExpMask;  // meaningful only when kHasInf
  static constexpr uint32_t kMaxFinite =
      kHasInf ? kExpMask - 1u : (kHasNaN ? (kExpMask | kMantMask) - 1u : kExpMask | kMantMask);
  static constexpr uint32_t kQuietNaN = kHasInf ? kExpMask | (1u << (kMantBits - 1)) : kExpMask | kMantMask;
  static constexpr int kSignShift = 31 - kExpBits - kMantBits;  // float sign bit -> format sign bit
  static constexpr int kMantShift = 23 - kMantBits;             // float mantissa -> format mantissa

  static BATON_HD constexpr bool isNaN(uint32_t b) {
    const uint32_t mag = b & ~kSignBit;
    return kHasInf ? mag > kInf : kHasNaN && mag == (kExpMask | kMantMask);
  }

  static constexpr uint32_t kAllOnesExp = kExpMask >> kMantBits;
  static constexpr uint32_t kMinNormalFloat = uint32_t(128 - kBias) << 23;  // |x| below: a subnormal (or 0)
  static constexpr uint32_t kMaxOut = kHasInf ? kInf : kMaxFinite;          // where overflow lands
  // One unit of the subnormal range, 2^(1-bias-M), and 2^23 units: a float whose last mantissa bit
  // is worth one subnormal unit.
  static constexpr float kUnit = bitsFloat(uint32_t(128 - kBias - kMantBits) << 23);
  static constexpr float kUnitMagic = bitsFloat(uint32_t(151 - kBias - kMantBits) << 23);

  // Exact widening to float. Branch-free (each case computed, one selected), so the reduce loops
  // vectorize; a subnormal is mant * 2^(1-bias-M) computed from an integer, so no float denormal
  // is ever an operand and a caller's flush-to-zero (DAZ/FTZ) modes cannot change the result.
  static BATON_HD constexpr float decode(uint32_t b) {
    const uint32_t sign = (b & kSignBit) << kSignShift;
    const uint32_t exp = (b & kExpMask) >> kMantBits;
    const uint32_t mant = b & kMantMask;
    const uint32_t normal = sign | (exp + uint32_t(127 - kBias)) << 23 | mant << kMantShift;
    const uint32_t subnormal = sign | floatBits(float(int32_t(mant)) * kUnit);
    // inf, or NaN made quiet (IEEE-style formats keep the payload; FN's single NaN has none)
    const uint32_t special =
        kHasInf ? sign | 0x7f800000u | mant << kMantShift | (mant ? 0x400000u : 0u) : sign | 0x7fc00000u;
    const bool isSpecial = kHasInf ? exp == kAllOnesExp : kHasNaN && (b & ~kSignBit) == (kExpMask | kMantMask);
    return bitsFloat(select(isSpecial, special, select(exp == 0, subnormal, normal)));
  }

  // float -> format, round to nearest even. Branch-free like decode.
  static BATON_HD constexpr uint32_t encode(float f) {
    const uint32_t x = floatBits(f);
    const uint32_t sign = (x >> kSignShift) & kSignBit;
    const uint32_t ax = x & 0x7fffffffu;
    // Normal in the target (or overflowing; float inf lands here too): rebias the exponent and round
    // the mantissa to nearest even; a mantissa carry correctly bumps the exponent.
    const uint32_t rebiased = ax - (uint32_t(127 - kBias) << 23);
    const uint32_t normal =
        (rebiased + ((1u << (kMantShift - 1)) - 1u) + ((rebiased >> kMantShift) & 1u)) >> kMantShift;
    // Subnormal (or zero) in the target: |x| + 2^23 units leaves round(|x| / unit) in the sum's low
    // bits, rounded to nearest even by the FPU (the default rounding mode; a float denormal input
    // rounds to 0 with or without DAZ, since the format's half unit is far above float's denormals).
    const uint32_t subnormal = floatBits(bitsFloat(ax) + kUnitMagic) - floatBits(kUnitMagic);
    uint32_t mag = select(ax < kMinNormalFloat, subnormal, normal);
    mag = select(mag < kMaxOut, mag, kMaxOut);  // IEEE-style: inf; FN: saturate to the largest finite
    const uint32_t nan = kHasInf ? kQuietNaN | ((ax >> kMantShift) & kMantMask) : kQuietNaN;
    return sign | (kHasNaN ? select(ax > 0x7f800000u, nan, mag) : mag);
  }

  // float -> format, rounded toward zero (the lower neighbour of |f|; the start of stochastic
  // rounding). Finite input only; saturates.
  static BATON_HD constexpr uint32_t encodeTowardZero(float f) {
    const uint32_t x = floatBits(f);
    const uint32_t sign = (x >> kSignShift) & kSignBit;
    const uint32_t ax = x & 0x7fffffffu;
    const uint32_t normal = (ax - (uint32_t(127 - kBias) << 23)) >> kMantShift;
    // Exact scaling, then truncation; a normal |f| is replaced by 0 first so the conversion is in range.
    const bool sub = ax < kMinNormalFloat;
    const uint32_t subnormal = uint32_t(bitsFloat(select(sub, ax, 0u)) * (1.f / kUnit));
    uint32_t mag = select(sub, subnormal, normal);
    mag = select(mag < kMaxFinite, mag, kMaxFinite);
    return sign | mag;
  }
};

using HalfFormat = NarrowFloat<5, 10, true>;
using Fp8E4M3Format = NarrowFloat<4, 3, false>;
using Fp8E5M2Format = NarrowFloat<5, 2, true>;
using Fp4E2M1Format = NarrowFloat<2, 1, false, false>;  // OCP MX's FP4: 0, 0.5, 1, 1.5, 2, 3, 4, 6

static_assert(HalfFormat::kMaxFinite == 0x7bffu && HalfFormat::kQuietNaN == 0x7e00u);
static_assert(Fp8E4M3Format::kMaxFinite == 0x7eu && Fp8E4M3Format::kQuietNaN == 0x7fu);
static_assert(Fp8E5M2Format::kMaxFinite == 0x7bu && Fp8E5M2Format::kQuietNaN == 0x7eu);
static_assert(Fp4E2M1Format::kMaxFinite == 0x7u && Fp4E2M1Format::decode(0x7u) == 6.f);

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
    // Round to nearest even; carries propagate into the exponent, and past the max finite to inf.
    // A NaN stays a NaN, made quiet (selected, not branched to, so the loops vectorize).
    const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
    return bfloat16_t{uint16_t(detail::select((x & 0x7fffffffu) > 0x7f800000u, (x >> 16) | 0x40u, rounded))};
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
  using Bits = T;
  static BATON_HD constexpr Compute load(T v) { return v; }
  static BATON_HD constexpr T store(Compute v) { return v; }
  static BATON_HD constexpr Compute loadBits(Bits v) { return v; }
  static BATON_HD constexpr Bits storeBits(Compute v) { return v; }
};

// Bits is the storage word (uint16_t, uint8_t): the CPU's reduce loop reads and writes arrays of
// it, since g++ vectorizes loops over integers but not over one-member structs.
template <typename T>
struct NarrowFloatTraits {
  static constexpr bool isFloat = true;
  using Compute = float;
  using Bits = decltype(T::bits);
  static BATON_HD constexpr Compute load(T v) { return FloatCodec<T>::to(v); }
  static BATON_HD constexpr T store(Compute v) { return FloatCodec<T>::from(v); }
  static BATON_HD constexpr Compute loadBits(Bits v) { return FloatCodec<T>::to(T{v}); }
  static BATON_HD constexpr Bits storeBits(Compute v) { return FloatCodec<T>::from(v).bits; }
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

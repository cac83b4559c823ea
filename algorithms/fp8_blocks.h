// FP8 (OCP e4m3) with one float scale per block of 128 elements: how MoE dispatch moves a token in
// about half a bfloat16 token's bytes (DeepEP's FP8 dispatch; the block scaling of DeepSeek-V3's
// paper, arXiv:2412.19437, section 3.3). Introduced in lesson 12 (docs/lessons/12-moe-all-to-all.md).
//
// A block's scale is s = amax / 448 (448: e4m3's largest finite value; s = 1 for an all-zero block)
// and each element x is stored as e4m3(x / s), rounded to nearest even, so x / s never saturates.
// Dequantized, q * s differs from x by at most half an e4m3 step:
//   |q * s - x| <= 2^-4 |x| + 2^-10 s
// (3 mantissa bits: relative 2^-4 for normal values; absolute 2^-10 s below e4m3's smallest normal
// 2^-6, where the step is 2^-9), plus float rounding of x / s and q * s. Inputs must be finite.
// The codec is datatypes.h's e4m3, the one every fp8 reduction uses (branch-free, so the quantize
// loop vectorizes).
//
// Memory-ordering contract: none (pure value code; the caller publishes the bytes it writes).
#pragma once

#include <cstddef>
#include <cstdint>

#include "datatypes.h"

namespace baton {

constexpr size_t kFp8Block = 128;
constexpr float kFp8E4M3Max = 448.f;

// A quantized token's bytes on the wire: its e4m3 elements, then its block scales.
BATON_HD constexpr size_t fp8TokenBytes(size_t hidden) { return hidden + hidden / kFp8Block * sizeof(float); }

// Quantizes one token of `hidden` elements (a multiple of kFp8Block) of T (float or bfloat16_t):
// q[0..hidden) the e4m3 bytes, scales[0..hidden/128) the block scales.
template <typename T>
BATON_HD void fp8QuantizeToken(const T* x, size_t hidden, uint8_t* q, float* scales) {
  for (size_t b = 0; b < hidden / kFp8Block; ++b) {
    // Each pass a plain loop over the block, so that a compiler can vectorize it.
    float v[kFp8Block];
    uint32_t amaxBits = 0;  // |v| as bits: ordered as the values are, and a max without NaN rules
    for (size_t e = 0; e < kFp8Block; ++e) {
      v[e] = TypeTraits<T>::load(x[b * kFp8Block + e]);
      const uint32_t a = detail::floatBits(v[e]) & 0x7fffffffu;
      amaxBits = a > amaxBits ? a : amaxBits;
    }
    const float amax = detail::bitsFloat(amaxBits);
    const float s = amax > 0.f ? amax / kFp8E4M3Max : 1.f;
    scales[b] = s;
    for (size_t e = 0; e < kFp8Block; ++e) q[b * kFp8Block + e] = FloatCodec<fp8e4m3_t>::from(v[e] / s).bits;
  }
}

// Element e of a quantized token, as a float.
BATON_HD float fp8Dequantize(const uint8_t* q, const float* scales, size_t e) {
  return FloatCodec<fp8e4m3_t>::to(fp8e4m3_t{q[e]}) * scales[e / kFp8Block];
}

}  // namespace baton

// Block-scaled wire formats: a run of float values stored as 8- or 4-bit elements that share one
// scale per block, so a collective moves about a quarter or an eighth of float's bytes. Introduced
// in lesson 15 (docs/lessons/15-fewer-bits-on-the-wire.md); include/baton/lowp.h moves them.
//
//   MXFP8  OCP Microscaling v1.0: 32 e4m3 elements share one e8m0 scale 2^e      (8.25 bits/elem)
//   MXFP4  OCP Microscaling v1.0: 32 e2m1 elements share one e8m0 scale 2^e      (4.25 bits/elem)
//   NVFP4  16 e2m1 elements share one e4m3 scale; one fp32 scale per segment     (4.5 bits/elem)
//
// A segment is n elements quantized together (a rank's part of an AllGather, one destination's
// chunk of a ReduceScatter). Its bytes: NVFP4's fp32 segment scale, one scale byte per block, then
// the elements (FP4: two per byte, element 2i in the low nibble), padded to 16 bytes. The last
// block may be partial. Decoded, element i is value(q_i) x block scale (x segment scale, NVFP4).
//
// Choices (docs/lessons/15-fewer-bits-on-the-wire.md derives the error bounds from them):
//   - Scales round up: the block scale is the smallest one at which amax / scale fits the element
//     format, so no element saturates. OCP v1.0's reference conversion rounds the exponent down
//     and clips the top of the block; NVIDIA's MXFP8 training recipe rounds up, as here. Either
//     way the bytes are valid MX: a decoder only reads the scale. NVFP4's segment scale is
//     amax / (6 x 448) so that the largest block scale is e4m3's 448; its block scales round up
//     to the next e4m3 value.
//   - Elements round to nearest even, or stochastically (WireRounding) with a counter-based
//     random number per element index and seed, so a result does not depend on thread layout.
//   - A NaN or an infinity in a block makes its scale NaN (e8m0 0xff, e4m3 0x7f): the whole block
//     decodes to NaN. The elements have no infinity, and finite inputs never overflow: e8m0
//     reaches 2^127, past float's range.
//   - The encoder writes e8m0 codes 1..254 (2^-126..2^127): a block whose amax is below
//     2^-126 x max keeps scale 2^-126 and loses precision; the decoder also reads code 0.
//
// Memory-ordering contract: none (pure value code; the caller publishes the bytes it writes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "datatypes.h"

namespace baton {

enum class WireFormat : int { kNone = 0, kMxfp8 = 1, kMxfp4 = 2, kNvfp4 = 3 };
constexpr int kNumWireFormats = 4;

struct WireSpec {
  uint32_t blockElems;   // elements per block scale
  uint32_t valueBits;    // 8 or 4
  uint32_t headerBytes;  // before the block scales: NVFP4's fp32 segment scale
};

BATON_HD constexpr WireSpec wireSpec(WireFormat f) {
  return f == WireFormat::kMxfp8   ? WireSpec{32, 8, 0}
         : f == WireFormat::kMxfp4 ? WireSpec{32, 4, 0}
         : f == WireFormat::kNvfp4 ? WireSpec{16, 4, 4}
                                   : WireSpec{1, 32, 0};
}

BATON_HD constexpr size_t wireBlocks(WireFormat f, size_t n) {
  return (n + wireSpec(f).blockElems - 1) / wireSpec(f).blockElems;
}

// Bytes of a segment of n elements (16-byte multiple, so segments laid end to end stay aligned).
BATON_HD constexpr size_t wireSegmentBytes(WireFormat f, size_t n) {
  const WireSpec s = wireSpec(f);
  const size_t bytes = s.headerBytes + wireBlocks(f, n) + (n * s.valueBits + 7) / 8;
  return (bytes + 15) / 16 * 16;
}

struct WireRounding {
  bool stochastic = false;
  uint64_t seed = 0;
  uint64_t index0 = 0;  // the segment's first element's number in the stream the seed numbers
};

namespace detail {

constexpr uint8_t kE8m0NaN = 0xff;
constexpr uint8_t kNvfp4ScaleNaN = 0x7f;  // e4m3's NaN

// 2^e as a float, e in [-126, 127].
BATON_HD constexpr float pow2(int e) { return bitsFloat(uint32_t(e + 127) << 23); }

// splitmix64's finalizer: a counter-based generator, the same number for the same (seed, index)
// on any thread of any device.
BATON_HD constexpr uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
BATON_HD constexpr float uniform01(uint64_t seed, uint64_t i) {  // [0, 1), 24 bits
  return float(mix64(seed ^ mix64(i + 0x9e3779b97f4a7c15ull)) >> 40) * 0x1p-24f;
}

// One element, already divided by its scale (|v| within the format's range, finite). Stochastic:
// rounds up in magnitude with probability (|v| - lower) / (upper - lower), so E[decoded] = v.
template <typename Fmt>
BATON_HD uint32_t encodeElement(float v, const WireRounding& r, uint64_t i) {
  if (!r.stochastic) return Fmt::encode(v);
  const uint32_t lo = Fmt::encodeTowardZero(v);
  const uint32_t mag = lo & ~Fmt::kSignBit;
  if (mag >= Fmt::kMaxFinite) return lo;
  const float a = bitsFloat(floatBits(v) & 0x7fffffffu);
  const float dlo = Fmt::decode(mag), dhi = Fmt::decode(mag + 1);
  return lo + (uniform01(r.seed, r.index0 + i) * (dhi - dlo) < a - dlo ? 1u : 0u);
}

// |x| as ordered bits over [begin, end): a max without NaN rules; >= 0x7f800000 means inf or NaN.
template <typename T>
BATON_HD uint32_t absMaxBits(const T* x, size_t begin, size_t end, bool finiteOnly) {
  uint32_t m = 0;
  for (size_t i = begin; i < end; ++i) {
    uint32_t a = floatBits(TypeTraits<T>::load(x[i])) & 0x7fffffffu;
    if (finiteOnly) a = select(a < 0x7f800000u, a, 0u);
    m = a > m ? a : m;
  }
  return m;
}

// The e8m0 exponent of an MX block: the smallest e in [-126, 127] with amax / 2^e <= maxValue.
BATON_HD constexpr int mxScaleExp(float amax, float maxValue, int emaxElem) {
  int e = int(floatBits(amax) >> 23) - 127 - emaxElem;  // floor(log2 amax) - emax, for a normal amax
  e = e < -126 ? -126 : e;
  return e + (amax > maxValue * pow2(e) ? 1 : 0);
}

// NVFP4's block scale as an e4m3 code, rounded up from `target` (<= 448 up to float rounding).
BATON_HD constexpr uint32_t nvfp4BlockScale(float target) {
  uint32_t c = Fp8E4M3Format::encode(target);
  c += Fp8E4M3Format::decode(c) < target ? 1u : 0u;
  return c < Fp8E4M3Format::kMaxFinite ? c : Fp8E4M3Format::kMaxFinite;
}

// A block's scale byte as a float: 2^e for MX (NaN for 0xff), the e4m3 value for NVFP4.
BATON_HD constexpr float blockScale(WireFormat f, uint8_t s) {
  if (f == WireFormat::kNvfp4) return Fp8E4M3Format::decode(s);
  return s == kE8m0NaN ? bitsFloat(0x7fc00000u) : s == 0 ? 0x1p-127f : pow2(int(s) - 127);
}

BATON_HD constexpr float e2m1Value(const uint8_t* values, size_t i) {
  return Fp4E2M1Format::decode((values[i / 2] >> (4 * (i & 1))) & 0xfu);
}

// Elements [begin, end) of x, times mul (and divided by div: NVFP4), rounded to nearest even into
// Fmt: a byte each for e4m3, two per byte for e2m1 (blocks start at even elements). Loops free of
// branches and of indexing by i / 2, so a compiler vectorizes them.
template <typename Fmt, bool kDivide, typename T>
BATON_HD void encodeBlock(const T* x, size_t begin, size_t end, float mul, float div, uint8_t* values) {
  auto scaled = [&](size_t i) {
    const float v = TypeTraits<T>::load(x[i]) * mul;
    return kDivide ? v / div : v;
  };
  if constexpr (std::is_same_v<Fmt, Fp8E4M3Format>) {
    for (size_t i = begin; i < end; ++i) values[i] = uint8_t(Fmt::encode(scaled(i)));
    return;
  }
  // Codes first (a plain loop), then packed two per byte.
  uint8_t codes[32];
  const size_t n = end - begin;
  for (size_t i = 0; i < n; ++i) codes[i] = uint8_t(Fmt::encode(scaled(begin + i)));
  uint8_t* pairs = values + begin / 2;
  for (size_t j = 0; j < n / 2; ++j) pairs[j] = uint8_t(codes[2 * j] | codes[2 * j + 1] << 4);
  if (n & 1) pairs[n / 2] = codes[n - 1];
}

}  // namespace detail

}  // namespace baton

// The AVX2 block codecs (host x86 only; they need WireFormat and the formats above).
#include "block_formats_x86.h"

namespace baton {

namespace detail {

// Whether this build and CPU encode and decode whole blocks of T eight elements at a time.
template <typename T>
BATON_HD bool wideBlocks() {
#if defined(BATON_REDUCE_X86)
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, bfloat16_t> || std::is_same_v<T, half_t>)
    return wideNarrowReduce();
#endif
  return false;
}

}  // namespace detail

// Quantizes x[0..n) of T (float, bfloat16_t, half_t) into one segment at out (wireSegmentBytes
// bytes). Returns how many blocks held a NaN or an infinity (each now decodes to NaN).
template <typename T>
BATON_HD uint32_t quantizeSegment(WireFormat f, const T* x, size_t n, uint8_t* out, const WireRounding& r = {}) {
  if (n == 0) return 0;  // an empty segment has no bytes
  const WireSpec spec = wireSpec(f);
  const size_t blocks = wireBlocks(f, n);
  uint8_t* scales = out + spec.headerBytes;
  uint8_t* values = scales + blocks;
  const size_t valueBytes = (n * spec.valueBits + 7) / 8;
  for (size_t i = blocks + valueBytes + spec.headerBytes; i < wireSegmentBytes(f, n); ++i) out[i] = 0;  // padding
  const bool wide = !r.stochastic && detail::wideBlocks<T>();
  const size_t fullBlocks = n / spec.blockElems;
  float segScale = 1.f;
  if (f == WireFormat::kNvfp4) {
    uint32_t amaxBits = detail::absMaxBits(x, wide ? fullBlocks * spec.blockElems : 0, n, true);
#if defined(BATON_REDUCE_X86)
    if (wide) {
      const uint32_t head = x86::finiteAbsMaxWide(x, fullBlocks * spec.blockElems / 8);
      amaxBits = head > amaxBits ? head : amaxBits;
    }
#endif
    const float amax = detail::bitsFloat(amaxBits);
    segScale = amax > 0.f ? amax / (6.f * 448.f) : 1.f;
    segScale = segScale < 0x1p-126f ? 0x1p-126f : segScale;
    memcpy(out, &segScale, sizeof segScale);
  }
  uint32_t nonFinite = 0;
  size_t firstBlock = 0;  // the whole blocks the AVX2 codecs took, if they did
#if defined(BATON_REDUCE_X86)
  if (wide) {
    nonFinite = x86::quantizeBlocksWide(f, x, fullBlocks, segScale, scales, values);
    firstBlock = fullBlocks;
  }
#endif
  for (size_t b = firstBlock; b < blocks; ++b) {
    const size_t begin = b * spec.blockElems, end = begin + spec.blockElems < n ? begin + spec.blockElems : n;
    const uint32_t amaxBits = detail::absMaxBits(x, begin, end, false);
    if (spec.valueBits == 4)  // stochastic rounding and NaN blocks OR into or skip their bytes
      for (size_t i = begin / 2; i < (end + 1) / 2; ++i) values[i] = 0;
    if (amaxBits >= 0x7f800000u) {  // inf or NaN: the block decodes to NaN
      ++nonFinite;
      scales[b] = f == WireFormat::kNvfp4 ? detail::kNvfp4ScaleNaN : detail::kE8m0NaN;
      if (spec.valueBits == 8)
        for (size_t i = begin; i < end; ++i) values[i] = 0;
      continue;
    }
    const float amax = detail::bitsFloat(amaxBits);
    // v = x / the block's scale: MX multiplies by 2^-e (exact); NVFP4 divides by the segment scale
    // (one rounding) and then by the e4m3 block scale (exact when the quotient is representable, so
    // decoded values re-encode to themselves; the two steps keep every factor a normal float).
    float mul = 1.f, div = 1.f;
    if (f == WireFormat::kNvfp4) {
      const uint32_t code = detail::nvfp4BlockScale(amax / (6.f * segScale));
      scales[b] = uint8_t(code);
      mul = 1.f / segScale;
      div = code ? detail::Fp8E4M3Format::decode(code) : 1.f;  // code 0: every element rounds to 0 anyway
    } else {
      const int e = f == WireFormat::kMxfp8 ? detail::mxScaleExp(amax, 448.f, 8) : detail::mxScaleExp(amax, 6.f, 2);
      scales[b] = uint8_t(e + 127);
      mul = detail::pow2(-e);  // e in [-126, 126]
    }
    // The partial last block, a block the AVX2 codecs did not take, or stochastic rounding.
    if (r.stochastic) {
      for (size_t i = begin; i < end; ++i) {
        const float v = TypeTraits<T>::load(x[i]) * mul / div;
        if (spec.valueBits == 8) {
          values[i] = uint8_t(detail::encodeElement<detail::Fp8E4M3Format>(v, r, i));
        } else {
          const uint32_t q = detail::encodeElement<detail::Fp4E2M1Format>(v, r, i);
          values[i / 2] |= uint8_t(q << (4 * (i & 1)));
        }
      }
    } else if (f == WireFormat::kMxfp8) {
      detail::encodeBlock<detail::Fp8E4M3Format, false>(x, begin, end, mul, div, values);
    } else if (f == WireFormat::kMxfp4) {
      detail::encodeBlock<detail::Fp4E2M1Format, false>(x, begin, end, mul, div, values);
    } else {
      detail::encodeBlock<detail::Fp4E2M1Format, true>(x, begin, end, mul, div, values);
    }
  }
  return nonFinite;
}

namespace detail {

// Calls sink(i, value of element i) for the elements [begin, end) of one block whose scale is s:
//   MXFP8, MXFP4: element x 2^e;   NVFP4: (element x e4m3 block scale, exact) x segment scale.
template <typename Sink>
BATON_HD void decodeBlock(WireFormat f, const uint8_t* values, size_t begin, size_t end, float s, float segScale,
                          Sink&& sink) {
  if (f == WireFormat::kMxfp8) {
    for (size_t i = begin; i < end; ++i) sink(i, Fp8E4M3Format::decode(values[i]) * s);
    return;
  }
  // The block's 16 values once (the same products as wireValue's), then one lookup per element.
  float table[16];
  for (uint32_t c = 0; c < 16; ++c)
    table[c] = f == WireFormat::kMxfp4 ? Fp4E2M1Format::decode(c) * s : Fp4E2M1Format::decode(c) * s * segScale;
  const uint8_t* pairs = values + begin / 2;
  const size_t len = end - begin;
  for (size_t j = 0; j < len / 2; ++j) {
    sink(begin + 2 * j, table[pairs[j] & 0xfu]);
    sink(begin + 2 * j + 1, table[pairs[j] >> 4]);
  }
  if (len & 1) sink(end - 1, table[pairs[len / 2] & 0xfu]);
}

// Decodes a segment block by block: whole blocks eight at a time where the CPU can (into T, or
// added to fp32 when kAdd), the rest through decodeBlock.
template <bool kAdd, typename T>
BATON_HD void decodeSegment(WireFormat f, const uint8_t* seg, size_t n, T* out) {
  const WireSpec spec = wireSpec(f);
  const size_t blocks = wireBlocks(f, n);
  const uint8_t* scales = seg + spec.headerBytes;
  const uint8_t* values = scales + blocks;
  float segScale = 1.f;
  if (f == WireFormat::kNvfp4) memcpy(&segScale, seg, sizeof segScale);
  size_t firstBlock = 0;  // the whole blocks the AVX2 codecs took, if they did
#if defined(BATON_REDUCE_X86)
  if (wideBlocks<T>()) {
    firstBlock = n / spec.blockElems;
    x86::decodeBlocksWide<T, kAdd>(f, scales, values, firstBlock, segScale, out);
  }
#endif
  for (size_t b = firstBlock; b < blocks; ++b) {
    const size_t begin = b * spec.blockElems, end = begin + spec.blockElems < n ? begin + spec.blockElems : n;
    const float s = blockScale(f, scales[b]);
    if constexpr (kAdd) decodeBlock(f, values, begin, end, s, segScale, [out](size_t i, float v) { out[i] += v; });
    else
      decodeBlock(f, values, begin, end, s, segScale, [out](size_t i, float v) { out[i] = TypeTraits<T>::store(v); });
  }
}

}  // namespace detail

// Element i of a segment of n elements, as a float (the same value the segment decoders give).
BATON_HD float wireValue(WireFormat f, const uint8_t* seg, size_t n, size_t i) {
  const WireSpec spec = wireSpec(f);
  const uint8_t* scales = seg + spec.headerBytes;
  const uint8_t* values = scales + wireBlocks(f, n);
  const float s = detail::blockScale(f, scales[i / spec.blockElems]);
  if (f == WireFormat::kMxfp8) return detail::Fp8E4M3Format::decode(values[i]) * s;
  if (f == WireFormat::kMxfp4) return detail::e2m1Value(values, i) * s;
  float segScale;
  memcpy(&segScale, seg, sizeof segScale);
  return detail::e2m1Value(values, i) * s * segScale;
}

// Decodes a segment: out[i] = T(value i), rounded once.
template <typename T>
BATON_HD void dequantizeSegment(WireFormat f, const uint8_t* seg, size_t n, T* out) {
  detail::decodeSegment<false>(f, seg, n, out);
}

// acc[i] += value i (fp32 accumulation, the ReduceScatter's sum).
BATON_HD void dequantizeAdd(WireFormat f, const uint8_t* seg, size_t n, float* acc) {
  detail::decodeSegment<true>(f, seg, n, acc);
}

}  // namespace baton

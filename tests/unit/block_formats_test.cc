// Unit tests for algorithms/block_formats.h (MXFP8, MXFP4, NVFP4) and FP4 e2m1 in datatypes.h:
// every FP4 code, every e4m3 code under every e8m0 scale and every NVFP4 block scale round trip
// exactly; random, outlier and all-equal blocks stay within the error bounds lesson 15 derives;
// NaN and infinity poison only their block; stochastic rounding is deterministic per seed and
// unbiased.
#include "block_formats.h"
#include "wire_codec_steps.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace baton {
namespace {

using detail::Fp4E2M1Format;
using detail::Fp8E4M3Format;

constexpr WireFormat kFormats[] = {WireFormat::kMxfp8, WireFormat::kMxfp4, WireFormat::kNvfp4};

std::vector<float> roundTrip(WireFormat f, const std::vector<float>& x, const WireRounding& r = {},
                             uint32_t* nonFinite = nullptr, std::vector<uint8_t>* bytes = nullptr) {
  std::vector<uint8_t> seg(wireSegmentBytes(f, x.size()), 0xcd);
  const uint32_t bad = quantizeSegment(f, x.data(), x.size(), seg.data(), r);
  if (nonFinite) *nonFinite = bad;
  std::vector<float> y(x.size());
  dequantizeSegment(f, seg.data(), x.size(), y.data());
  if (bytes) *bytes = seg;
  return y;
}

TEST(Fp4E2M1, EveryCodeDecodesToItsValue) {
  const float values[8] = {0.f, 0.5f, 1.f, 1.5f, 2.f, 3.f, 4.f, 6.f};
  for (uint32_t c = 0; c < 16; ++c) {
    const float v = (c & 8 ? -1.f : 1.f) * values[c & 7];
    EXPECT_EQ(Fp4E2M1Format::decode(c), v) << c;
    EXPECT_EQ(std::signbit(Fp4E2M1Format::decode(c)), (c & 8) != 0) << c;
    EXPECT_EQ(Fp4E2M1Format::encode(v), c) << c;  // -0 included
    EXPECT_FALSE(Fp4E2M1Format::isNaN(c));
  }
}

// The nearest code by brute force, ties to the even code; saturating at 6.
uint32_t nearestE2m1(float v) {
  const double a = std::fabs((double)v);
  uint32_t best = 0;
  for (uint32_t c = 1; c < 8; ++c) {
    const double d = std::fabs(a - Fp4E2M1Format::decode(c)), bd = std::fabs(a - Fp4E2M1Format::decode(best));
    if (d < bd || (d == bd && (c & 1) == 0)) best = c;
  }
  return (a > 6 ? 7u : best) | (std::signbit(v) ? 8u : 0u);
}

TEST(Fp4E2M1, RoundsToNearestEvenAndSaturates) {
  // Every midpoint between neighbours, and points around each.
  for (float v : {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.f, 7.f, 100.f, 1e30f, INFINITY})
    for (float s : {1.f, -1.f}) EXPECT_EQ(Fp4E2M1Format::encode(s * v), nearestE2m1(s * v)) << s * v;
  std::mt19937 g(7);
  std::uniform_real_distribution<float> u(-8.f, 8.f);
  for (int i = 0; i < 200000; ++i) {
    const float v = u(g);
    ASSERT_EQ(Fp4E2M1Format::encode(v), nearestE2m1(v)) << v;
  }
}

template <typename Fmt>
void checkTowardZero(float v) {
  const uint32_t c = Fmt::encodeTowardZero(v), mag = c & ~Fmt::kSignBit;
  const float a = std::fabs(v);
  ASSERT_LE(Fmt::decode(mag), a) << v;
  if (mag < Fmt::kMaxFinite) {
    ASSERT_GT(Fmt::decode(mag + 1), a) << v;
  }
  ASSERT_EQ((c & Fmt::kSignBit) != 0, std::signbit(v)) << v;
}

TEST(EncodeTowardZero, IsTheLowerNeighbourForE2m1AndE4m3) {
  std::mt19937 g(3);
  std::uniform_real_distribution<float> u4(-6.f, 6.f), u8(-448.f, 448.f);
  for (int i = 0; i < 100000; ++i) {
    checkTowardZero<Fp4E2M1Format>(u4(g));
    checkTowardZero<Fp8E4M3Format>(u8(g));
  }
  for (uint32_t c = 0; c < 0x7f; ++c) checkTowardZero<Fp8E4M3Format>(Fp8E4M3Format::decode(c));
  for (uint32_t c = 0; c < 8; ++c) checkTowardZero<Fp4E2M1Format>(Fp4E2M1Format::decode(c));
}

TEST(BlockFormats, SegmentBytes) {
  EXPECT_EQ(wireSegmentBytes(WireFormat::kMxfp8, 32), 48u);  // 1 scale + 32
  EXPECT_EQ(wireSegmentBytes(WireFormat::kMxfp4, 32), 32u);  // 1 + 16
  EXPECT_EQ(wireSegmentBytes(WireFormat::kNvfp4, 32), 32u);  // 4 + 2 + 16
  EXPECT_EQ(wireSegmentBytes(WireFormat::kMxfp8, 1024), 1056u);
  EXPECT_EQ(wireSegmentBytes(WireFormat::kMxfp4, 1024), 544u);
  EXPECT_EQ(wireSegmentBytes(WireFormat::kNvfp4, 1024), 592u);  // 4 + 64 + 512, padded
}

// MXFP8: every e4m3 code under every e8m0 scale whose block is finite. A block holds 448 x 2^e (so
// the scale is exactly 2^e) and 31 codes; it must decode exactly and re-encode to the same bytes.
TEST(BlockFormats, Mxfp8EveryCodeEveryScale) {
  for (int e = -126; e <= 119; ++e) {  // 448 x 2^120 overflows float
    const float s = std::ldexp(1.f, e);
    for (uint32_t c0 = 0; c0 < 256; c0 += 31) {
      std::vector<float> x(32);
      x[0] = 448.f * s;
      for (uint32_t i = 1; i < 32; ++i) {
        const uint32_t c = (c0 + i - 1) & 0xff;
        x[i] = Fp8E4M3Format::isNaN(c) ? 0.f : Fp8E4M3Format::decode(c) * s;
      }
      std::vector<uint8_t> bytes;
      const std::vector<float> y = roundTrip(WireFormat::kMxfp8, x, {}, nullptr, &bytes);
      ASSERT_EQ(bytes[0], uint8_t(e + 127)) << e;
      for (int i = 0; i < 32; ++i) ASSERT_EQ(y[i], x[i]) << "scale 2^" << e << " element " << i;
    }
  }
}

// Bytes a peer may send that the encoder never writes (e4m3's NaN codes, the NaN scale) decode as
// the scalar codec decodes them, bit for bit: every byte as an element under scales from 2^-127 to
// NaN, through dequantizeSegment (the F16C path for whole blocks) and dequantizeAdd.
TEST(BlockFormats, Mxfp8DecodesEveryByteAsTheScalarCodecDoes) {
  const uint8_t scales[] = {0, 1, 100, 127, 200, 254, 255, 127};
  const size_t n = 256;
  std::vector<uint8_t> seg(wireSegmentBytes(WireFormat::kMxfp8, n));
  for (size_t b = 0; b < n / 32; ++b) seg[b] = scales[b];
  for (size_t i = 0; i < n; ++i) seg[n / 32 + i] = uint8_t(i * 37 + 11);  // every byte once, mixed over blocks
  std::vector<float> out(n), acc(n, 0.f);
  dequantizeSegment(WireFormat::kMxfp8, seg.data(), n, out.data());
  dequantizeAdd(WireFormat::kMxfp8, seg.data(), n, acc.data());
  auto bits = [](float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    return u;
  };
  for (size_t i = 0; i < n; ++i) {
    const float v = wireValue(WireFormat::kMxfp8, seg.data(), n, i);
    ASSERT_EQ(bits(out[i]), bits(v)) << "element " << i << " byte " << int(seg[n / 32 + i]);
    ASSERT_EQ(bits(acc[i]), bits(0.f + v)) << "element " << i << " byte " << int(seg[n / 32 + i]);
  }
}

// The fused stage's FIFO steps (wire_codec_steps.h): MXFP8 and MXFP4 cut into steps of 256
// elements decode to the whole segment's values, rounded to nearest or stochastically (each step
// numbers its elements from the segment's start); the steps' bytes add up to wireTransferBytes.
TEST(BlockFormats, FusedStepsDecodeAsTheWholeSegment) {
  std::mt19937_64 g(7);
  std::normal_distribution<float> nd;
  const size_t n = 1000;  // three whole steps and a short one
  std::vector<float> x(n);
  for (float& v : x) v = nd(g);
  for (WireFormat f : {WireFormat::kMxfp8, WireFormat::kMxfp4})
    for (bool stochastic : {false, true}) {
      const WireRounding r{stochastic, 42, 0};
      std::vector<uint8_t> whole(wireSegmentBytes(f, n));
      quantizeSegment(f, x.data(), n, whole.data(), r);
      std::vector<float> want(n), got(n);
      dequantizeSegment(f, whole.data(), n, want.data());
      WireStepCodec c;
      c.wire = f, c.src = x.data(), c.dst = got.data(), c.elems = n, c.stepElems = 256, c.rounding = r;
      std::vector<uint8_t> slot(wireSegmentBytes(f, 256));
      size_t bytes = 0;
      for (size_t k = 0; k < wireSteps(c); ++k) {
        bytes += wireEncodeStep(c, k, slot.data());
        wireDecodeStep(c, k, slot.data());
      }
      EXPECT_EQ(bytes, wireTransferBytes(c));
      EXPECT_EQ(got, want) << "format " << int(f) << (stochastic ? " stochastic" : " nearest");
    }
}

TEST(BlockFormats, Mxfp4EveryCodeEveryScale) {
  for (int e = -126; e <= 125; ++e) {  // 6 x 2^126 overflows float
    const float s = std::ldexp(1.f, e);
    std::vector<float> x(32);
    x[0] = 6.f * s;
    for (uint32_t i = 1; i < 32; ++i) x[i] = Fp4E2M1Format::decode(i & 15) * s;
    std::vector<uint8_t> bytes;
    const std::vector<float> y = roundTrip(WireFormat::kMxfp4, x, {}, nullptr, &bytes);
    ASSERT_EQ(bytes[0], uint8_t(e + 127)) << e;
    for (int i = 0; i < 32; ++i) ASSERT_EQ(y[i], x[i]) << "scale 2^" << e << " element " << i;
    EXPECT_EQ(bytes[1], 0x17) << "element 0 (6: code 7) in the low nibble, element 1 (0.5: code 1) in the high";
  }
}

// NVFP4: every e4m3 block scale (under segment scales 2^k) times every e2m1 code. Block 0 holds
// 6 x 448 x 2^k so the segment scale is exactly 2^k; block b holds 6 x scale(b) and the 15 codes.
TEST(BlockFormats, Nvfp4EveryCodeEveryBlockScale) {
  for (int k : {-100, -10, 0, 10, 100}) {
    const float ts = std::ldexp(1.f, k);
    std::vector<float> x;
    for (uint32_t sc = 0x7e; sc >= 1; --sc) {
      const float d = Fp8E4M3Format::decode(sc) * ts;
      x.push_back(6.f * d);
      for (uint32_t c = 1; c < 16; ++c) x.push_back(Fp4E2M1Format::decode(c) * d);
    }
    std::vector<uint8_t> bytes;
    const std::vector<float> y = roundTrip(WireFormat::kNvfp4, x, {}, nullptr, &bytes);
    float seg;
    memcpy(&seg, bytes.data(), 4);
    ASSERT_EQ(seg, ts);
    for (uint32_t b = 0; b < 0x7e; ++b) ASSERT_EQ(bytes[4 + b], 0x7e - b) << "block " << b;
    for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], x[i]) << "2^" << k << " element " << i;
  }
}

// The bounds lesson 15 derives, per element: with block scale S (NVFP4: e4m3 scale x segment
// scale) and an element format of M mantissa bits whose smallest normal is 2^emin,
//   |y - x| <= max(2^-(M+1) |x|, 2^(emin-M-1) S)       (round to nearest)
// and S <= 2 amax / max (MX: the scale rounds up by at most a factor 2), S <= (1 + 2^-3) amax / 6 +
// 2^-9 x segment scale (NVFP4: the e4m3 scale rounds up by at most one e4m3 step).
double boundFor(WireFormat f, double x, double amaxBlock, double segScale) {
  switch (f) {
    case WireFormat::kMxfp8: return std::max(std::ldexp(std::fabs(x), -4), std::ldexp(2 * amaxBlock / 448, -10));
    case WireFormat::kMxfp4: return std::max(std::ldexp(std::fabs(x), -2), std::ldexp(2 * amaxBlock / 6, -2));
    default:
      return std::max(std::ldexp(std::fabs(x), -2), std::ldexp(1.125 * amaxBlock / 6 + std::ldexp(segScale, -9), -2));
  }
}

void checkBounds(WireFormat f, const std::vector<float>& x, const char* what) {
  const std::vector<float> y = roundTrip(f, x);
  const size_t B = wireSpec(f).blockElems;
  double amaxT = 0;
  for (float v : x) amaxT = std::max(amaxT, (double)std::fabs(v));
  const double seg = std::max(amaxT / 2688, 0x1p-126);
  for (size_t b = 0; b * B < x.size(); ++b) {
    double amax = 0;
    for (size_t i = b * B; i < std::min(x.size(), (b + 1) * B); ++i) amax = std::max(amax, (double)std::fabs(x[i]));
    for (size_t i = b * B; i < std::min(x.size(), (b + 1) * B); ++i) {
      const double err = std::fabs((double)y[i] - x[i]), bound = boundFor(f, x[i], amax, seg) * (1 + 1e-6);
      ASSERT_LE(err, bound) << what << " format " << int(f) << " element " << i << " x " << x[i] << " y " << y[i];
    }
  }
}

TEST(BlockFormats, ErrorWithinBoundOnNormalOutlierAndEqualBlocks) {
  std::mt19937 g(11);
  std::normal_distribution<float> nd;
  for (WireFormat f : kFormats)
    for (size_t n : {size_t(0), size_t(1), size_t(15), size_t(17), size_t(33), size_t(1000), size_t(4096)}) {
      std::vector<float> x(n);
      for (float& v : x) v = nd(g);
      checkBounds(f, x, "normal");
      for (size_t i = 0; i < n; i += 16) x[i] *= 1e4f;  // an outlier in every block
      checkBounds(f, x, "outliers");
      for (float& v : x) v = 3.3f;
      checkBounds(f, x, "all equal");
      for (size_t i = 0; i < n; ++i) x[i] = std::ldexp(nd(g), int(i % 61) - 30);  // wide range
      checkBounds(f, x, "wide");
    }
}

TEST(BlockFormats, AllZeroAndTinyBlocks) {
  for (WireFormat f : kFormats) {
    std::vector<float> zeros(40, 0.f);
    EXPECT_EQ(roundTrip(f, zeros), zeros);
    std::vector<float> tiny(40, 0x1p-140f);  // a float denormal: the scale stops at 2^-126
    const std::vector<float> y = roundTrip(f, tiny);
    for (float v : y) EXPECT_TRUE(std::isfinite(v) && std::fabs(v - 0x1p-140f) <= 0x1p-140f);
  }
}

TEST(BlockFormats, NaNAndInfinityPoisonOnlyTheirBlock) {
  for (WireFormat f : kFormats) {
    const size_t B = wireSpec(f).blockElems;
    for (float bad : {NAN, INFINITY, -INFINITY}) {
      std::vector<float> x(3 * B + 5, 1.5f);
      x[B + 3] = bad;
      x[3 * B + 1] = bad;  // in the partial last block
      uint32_t nonFinite = 0;
      const std::vector<float> y = roundTrip(f, x, {}, &nonFinite);
      EXPECT_EQ(nonFinite, 2u);
      for (size_t i = 0; i < x.size(); ++i) {
        const bool poisoned = (i >= B && i < 2 * B) || i >= 3 * B;
        if (poisoned) ASSERT_TRUE(std::isnan(y[i])) << int(f) << " " << i;
        else
          ASSERT_NEAR(y[i], 1.5f, 1e-6f) << int(f) << " "
                                         << i;  // NVFP4's fp32 segment scale rounds; it ignored the bad value
      }
    }
  }
}

TEST(BlockFormats, HalfAndBfloat16Inputs) {
  std::mt19937 g(5);
  std::normal_distribution<float> nd;
  for (WireFormat f : kFormats) {
    std::vector<float> x(100);
    std::vector<bfloat16_t> b(100);
    std::vector<half_t> h(100);
    for (size_t i = 0; i < x.size(); ++i) {
      b[i] = fromFloat<bfloat16_t>(nd(g));
      x[i] = toFloat(b[i]);
      h[i] = fromFloat<half_t>(x[i]);  // bfloat16's values with |x| < 65504 are halves' too, give or take rounding
    }
    std::vector<uint8_t> a(wireSegmentBytes(f, 100)), c(a.size());
    quantizeSegment(f, x.data(), 100, a.data());
    quantizeSegment(f, b.data(), 100, c.data());
    EXPECT_EQ(a, c) << "bfloat16 input quantizes as its float value";
    std::vector<bfloat16_t> back(100);
    dequantizeSegment(f, a.data(), 100, back.data());
    std::vector<float> y = roundTrip(f, x);
    for (size_t i = 0; i < 100; ++i) EXPECT_EQ(toFloat(back[i]), toFloat(fromFloat<bfloat16_t>(y[i])));
    quantizeSegment(f, h.data(), 100, c.data());  // runs; values differ slightly from bfloat16's
  }
}

TEST(BlockFormats, StochasticRoundingIsDeterministicAndUnbiased) {
  for (WireFormat f : kFormats) {
    std::vector<float> x(64);
    for (size_t i = 0; i < x.size(); ++i) x[i] = 0.1f + 0.37f * float(i % 7);
    x[0] = 6.f;  // fixes the block scale
    WireRounding r{true, 42, 0};
    EXPECT_EQ(roundTrip(f, x, r), roundTrip(f, x, r)) << "same seed, same bytes";
    std::vector<double> mean(x.size(), 0.0);
    constexpr int kSeeds = 4000;
    bool anyDiffers = false;
    const std::vector<float> first = roundTrip(f, x, r);
    for (int s = 0; s < kSeeds; ++s) {
      r.seed = 1000 + s;
      const std::vector<float> y = roundTrip(f, x, r);
      for (size_t i = 0; i < x.size(); ++i) {
        mean[i] += y[i] / kSeeds;
        anyDiffers |= y[i] != first[i];
        // Never further than one step: the two neighbours of x.
        ASSERT_LE(std::fabs(y[i] - x[i]), 2 * boundFor(f, x[i], 6.0, 6.0 / 2688)) << i;
      }
    }
    EXPECT_TRUE(anyDiffers);
    for (size_t i = 0; i < x.size(); ++i) {
      // Each rounding is one of two neighbours a step d apart: the mean's standard deviation is at
      // most d / (2 sqrt(kSeeds)); allow 5 of them.
      const double d = 4 * boundFor(f, x[i], 6.0, 6.0 / 2688);
      EXPECT_NEAR(mean[i], x[i], 5 * d / (2 * std::sqrt(double(kSeeds)))) << "format " << int(f) << " element " << i;
    }
  }
}

// Each code against the scalar encode of its element over the block's scale, and each decoded value
// against wireValue, element by element: where the CPU takes the AVX2 block codecs
// (block_formats_x86.h), they must give the scalar codecs' bits. Values span every binade the
// elements reach, subnormals included, in float, bfloat16 and half.
template <typename T>
void checkAgainstScalar(WireFormat f, uint64_t seed) {
  std::mt19937 g{uint32_t(seed)};
  std::normal_distribution<float> nd;
  const size_t n = 32 * 40 + 7;
  std::vector<T> x(n);
  std::vector<float> xf(n);
  for (size_t i = 0; i < n; ++i) {
    x[i] = TypeTraits<T>::store(std::ldexp(nd(g), int(g() % 24) - 12));
    xf[i] = TypeTraits<T>::load(x[i]);
  }
  std::vector<uint8_t> seg(wireSegmentBytes(f, n));
  quantizeSegment(f, x.data(), n, seg.data());
  const WireSpec spec = wireSpec(f);
  const uint8_t* scales = seg.data() + spec.headerBytes;
  const uint8_t* values = scales + wireBlocks(f, n);
  float segScale = 1.f;
  if (f == WireFormat::kNvfp4) memcpy(&segScale, seg.data(), 4);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t s = scales[i / spec.blockElems];
    uint32_t want, got;
    if (f == WireFormat::kNvfp4) {
      want = Fp4E2M1Format::encode(xf[i] * (1.f / segScale) / (s ? Fp8E4M3Format::decode(s) : 1.f));
    } else {
      const float v = xf[i] * detail::pow2(127 - int(s));
      want = f == WireFormat::kMxfp8 ? Fp8E4M3Format::encode(v) : Fp4E2M1Format::encode(v);
    }
    got = spec.valueBits == 8 ? values[i] : (values[i / 2] >> (4 * (i & 1))) & 15u;
    ASSERT_EQ(got, want) << "format " << int(f) << " element " << i << " x " << xf[i];
  }
  std::vector<T> back(n);
  std::vector<float> acc(n, 0.5f);
  dequantizeSegment(f, seg.data(), n, back.data());
  dequantizeAdd(f, seg.data(), n, acc.data());
  for (size_t i = 0; i < n; ++i) {
    const float v = wireValue(f, seg.data(), n, i);
    ASSERT_EQ(TypeTraits<T>::load(back[i]), TypeTraits<T>::load(TypeTraits<T>::store(v))) << int(f) << " " << i;
    ASSERT_EQ(acc[i], 0.5f + v) << int(f) << " " << i;
  }
}

TEST(BlockFormats, BlockCodecsGiveTheScalarCodecsBits) {
  for (WireFormat f : kFormats)
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      checkAgainstScalar<float>(f, seed);
      checkAgainstScalar<bfloat16_t>(f, seed);
      checkAgainstScalar<half_t>(f, seed);
    }
}

}  // namespace
}  // namespace baton

// Issue 42's first step holds bit for bit: the branch-free codecs of algorithms/datatypes.h against
// the scalar codecs they replaced (codec_reference.h), and the CPU's vector reduce loop for the
// 16- and 8-bit floats (algorithms/reduce_x86.h) against the element loop, for every operator,
// every input/output shape the primitives use, and bit patterns that include NaN, infinities,
// subnormals and values past each format's range. Bit for bit, except which NaN survives where two
// NaNs meet (IEEE 754 leaves that open): there a NaN is all that is required.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "codec_reference.h"
#include "reduce_ops.h"

namespace baton {
namespace {

uint32_t bitsOf(float f) { return std::bit_cast<uint32_t>(f); }

// Every decode of every code, bit for bit (NaN payloads included).
template <typename Ref, typename T>
void checkDecodeAll() {
  for (uint32_t b = 0; b < (1u << (8 * sizeof(T))); ++b)
    ASSERT_EQ(bitsOf(TypeTraits<T>::loadBits(decltype(T::bits)(b))), bitsOf(Ref::decode(b))) << std::hex << b;
}
TEST(NarrowCodec, DecodeMatchesReferenceHalf) { checkDecodeAll<reference::Half, half_t>(); }
TEST(NarrowCodec, DecodeMatchesReferenceE4M3) { checkDecodeAll<reference::E4M3, fp8e4m3_t>(); }
TEST(NarrowCodec, DecodeMatchesReferenceE5M2) { checkDecodeAll<reference::E5M2, fp8e5m2_t>(); }
TEST(NarrowCodec, DecodeMatchesReferenceBfloat16) {
  for (uint32_t b = 0; b < 0x10000; ++b)
    ASSERT_EQ(bitsOf(toFloat(bfloat16_t{uint16_t(b)})), bitsOf(reference::bf16Decode(uint16_t(b)))) << b;
}

// Encode: every float whose low 12 bits are one of the patterns where rounding decides (zero,
// one, just below, at and above the halfway point of every shift these formats use, all ones),
// i.e. all 2^20 sign/exponent/high-mantissa prefixes times 8 tails, plus 2^22 random floats.
template <typename F>
void forEncodeProbes(F check) {
  static constexpr uint32_t kTails[] = {0x000, 0x001, 0x7ff, 0x800, 0x801, 0xfff, 0x400, 0xc00};
  for (uint32_t hi = 0; hi < (1u << 20); ++hi)
    for (uint32_t t : kTails) check(hi << 12 | t);
  std::mt19937 rng(42);
  for (int i = 0; i < (1 << 22); ++i) check(uint32_t(rng()));
}
template <typename Ref, typename T>
void checkEncode() {
  uint64_t bad = 0, first = 0;
  forEncodeProbes([&](uint32_t x) {
    const float f = std::bit_cast<float>(x);
    if (TypeTraits<T>::storeBits(f) != Ref::encode(f) && bad++ == 0) first = x;
  });
  EXPECT_EQ(bad, 0u) << "first mismatch at float bits 0x" << std::hex << first;
}
TEST(NarrowCodec, EncodeMatchesReferenceHalf) { checkEncode<reference::Half, half_t>(); }
TEST(NarrowCodec, EncodeMatchesReferenceE4M3) { checkEncode<reference::E4M3, fp8e4m3_t>(); }
TEST(NarrowCodec, EncodeMatchesReferenceE5M2) { checkEncode<reference::E5M2, fp8e5m2_t>(); }
TEST(NarrowCodec, EncodeMatchesReferenceBfloat16) {
  uint64_t bad = 0;
  forEncodeProbes([&](uint32_t x) {
    const float f = std::bit_cast<float>(x);
    bad += fromFloat<bfloat16_t>(f).bits != reference::bf16Encode(f);
  });
  EXPECT_EQ(bad, 0u);
}

#if defined(BATON_REDUCE_X86)
// Inputs for the loop tests: random codes (so NaN, infinities and subnormals occur), every 7th a
// code near the top of the range (sums past the maximum saturate or overflow), every 5th a small
// integer (sums of those are exact, a case a wrong rounding would still pass).
template <typename T>
std::vector<T> inputs(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) {
    constexpr uint32_t kSign = 1u << (8 * sizeof(T) - 1);
    uint32_t b = rng();
    if (i % 7 == 0) b = (b & kSign) | (kSign - 1 - (b & 7));  // the top 8 magnitudes: max, inf, NaN
    if (i % 5 == 0) v[i] = TypeTraits<T>::store(float(int(b % 9) - 4));
    else v[i].bits = decltype(T::bits)(b);
  }
  return v;
}

// The vector narrowing alone (narrow8/narrow16) on the encode probes, 16 floats at a time, against
// the scalar encode; for e4m3 also its scaled form (the input times 2^-8, see widen16).
template <typename T, bool kScaled>
__attribute__((target("avx2,f16c"))) void narrowProbes(const float* in, T* out) {
  if constexpr (sizeof(T) == 1) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), x86::narrow16<T, kScaled>(in));
  } else {
    alignas(16) T t[16];
    x86::narrow8<T>(_mm256_load_ps(in), t);
    x86::narrow8<T>(_mm256_load_ps(in + 8), t + 8);
    memcpy(out, t, sizeof t);
  }
}
template <typename T, bool kScaled = false>
void checkVectorNarrow() {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("f16c"))
    GTEST_SKIP() << "this CPU has no AVX2/F16C: the vector loop never runs here";
  alignas(32) float in[16];
  alignas(32) float x[16];
  T out[16];
  int filled = 0;
  uint64_t bad = 0, first = 0;
  forEncodeProbes([&](uint32_t bits) {
    x[filled] = std::bit_cast<float>(bits);
    in[filled] = kScaled ? x[filled] * (1.0f / 256) : x[filled];
    if (++filled < 16) return;
    filled = 0;
    narrowProbes<T, kScaled>(in, out);
    for (int i = 0; i < 16; ++i)
      if (out[i].bits != TypeTraits<T>::storeBits(x[i]) && bad++ == 0) first = bitsOf(x[i]);
  });
  EXPECT_EQ(bad, 0u) << "first mismatch at float bits 0x" << std::hex << first;
}
TEST(NarrowReduce, VectorNarrowMatchesEncodeHalf) { checkVectorNarrow<half_t>(); }
TEST(NarrowReduce, VectorNarrowMatchesEncodeBfloat16) { checkVectorNarrow<bfloat16_t>(); }
TEST(NarrowReduce, VectorNarrowMatchesEncodeE4M3) { checkVectorNarrow<fp8e4m3_t>(); }
TEST(NarrowReduce, VectorNarrowMatchesEncodeE4M3Scaled) { checkVectorNarrow<fp8e4m3_t, true>(); }
TEST(NarrowReduce, VectorNarrowMatchesEncodeE5M2) { checkVectorNarrow<fp8e5m2_t>(); }

// The element loop's answer for one output element (reduce_ops.h, reduceElem).
template <typename T, typename Op, bool kRecv, bool kSrc, bool kPre, bool kPost>
T scalarOne(const Op& op, T r, T s) {
  constexpr Moves M{.recv = kRecv, .send = true, .src = kSrc, .preSrc = kPre, .post = kPost};
  return reduceElem<T, Op, M>(op, r, s);
}

template <typename T, typename Op, bool kRecv, bool kSrc, bool kPre, bool kPost, bool kStream>
void checkShape(const Op& op, const std::string& what) {
  if constexpr (!(kRecv && kSrc) && !kPre && !kPost) return;  // a copy: reduceCopy moves the bytes itself
  for (size_t n : {size_t(1), size_t(7), size_t(8), size_t(15), size_t(16), size_t(60), size_t(63), size_t(64),
                   size_t(65), size_t(120), size_t(200), size_t(1000)}) {
    for (size_t skew : {size_t(0), size_t(1), size_t(3)}) {  // unaligned inputs (streams need aligned outputs)
      const auto recv = inputs<T>(n + skew, uint32_t(n * 31 + skew));
      const auto src = inputs<T>(n + skew, uint32_t(n * 17 + skew + 1));
      alignas(64) T out0[1024 + 16], out1[1024 + 16];
      const size_t o = kStream ? 0 : skew;
      memset(out0, 0xa5, sizeof out0);
      memset(out1, 0x5a, sizeof out1);
      const size_t done = x86::reduceWide<T, Op, kRecv, kSrc, kPre, kPost, kStream>(
          op, recv.data() + skew, src.data() + skew, out0 + o, out1 + o, n);
      ASSERT_EQ(done, n) << what;  // the tail too, through a padded tile
      for (size_t i = 0; i < done; ++i) {
        const T want = scalarOne<T, Op, kRecv, kSrc, kPre, kPost>(op, recv[skew + i], src[skew + i]);
        // Where two NaNs meet, which payload survives is the compiler's operand order (IEEE 754
        // leaves it open, as do NCCL and the GPU); a NaN result must be a NaN, all else bit for bit.
        const auto same = [&](T got) {
          return std::isnan(TypeTraits<T>::load(want)) ? std::isnan(TypeTraits<T>::load(got)) : got.bits == want.bits;
        };
        ASSERT_TRUE(same(out0[o + i]) && same(out1[o + i]))
            << what << " n=" << n << " skew=" << skew << " i=" << i << std::hex << ": recv 0x" << recv[skew + i].bits
            << " src 0x" << src[skew + i].bits << " gave 0x" << out0[o + i].bits << ", 0x" << out1[o + i].bits
            << ", the element loop 0x" << want.bits;
      }
      for (size_t i = o + done; i < sizeof out0 / sizeof(T); ++i)  // nothing past what it did
        ASSERT_EQ(reinterpret_cast<const unsigned char*>(out0 + i)[0], 0xa5) << what;
    }
  }
}

template <typename T, typename Op>
void checkOp(const Op& op, const char* name) {
  const std::string what = std::string(name) + " " + std::to_string(sizeof(T)) + "-byte";
  // The shapes reduceCopy, the LL128 lines and the direct ring's streaming combine use.
  checkShape<T, Op, true, true, !Op::kPreIdentity, false, false>(op, what + " recv+src");
  checkShape<T, Op, true, true, !Op::kPreIdentity, !Op::kPostIdentity, false>(op, what + " recv+src, post");
  checkShape<T, Op, true, true, !Op::kPreIdentity, !Op::kPostIdentity, true>(op, what + " streamed");
  checkShape<T, Op, false, true, !Op::kPreIdentity, false, false>(op, what + " src, pre");
  checkShape<T, Op, true, false, false, !Op::kPostIdentity, false>(op, what + " recv, post");
}

template <typename T>
void checkAllOps() {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("f16c"))
    GTEST_SKIP() << "this CPU has no AVX2/F16C: the vector loop never runs here";
  OpParams p;
  p.nRanks = 3;
  checkOp<T>(makeOp<T, OpSum>(p), "sum");
  checkOp<T>(makeOp<T, OpProd>(p), "prod");
  checkOp<T>(makeOp<T, OpMax>(p), "max");
  checkOp<T>(makeOp<T, OpMin>(p), "min");
  checkOp<T>(makeOp<T, OpSumPostDiv>(p), "avg");
  const T scalar = TypeTraits<T>::store(-1.5f);
  memcpy(p.scalar, &scalar, sizeof scalar);
  checkOp<T>(makeOp<T, OpPreMulSum>(p), "premulsum");
}
TEST(NarrowReduce, VectorLoopMatchesElementLoopHalf) { checkAllOps<half_t>(); }
TEST(NarrowReduce, VectorLoopMatchesElementLoopBfloat16) { checkAllOps<bfloat16_t>(); }
TEST(NarrowReduce, VectorLoopMatchesElementLoopE4M3) { checkAllOps<fp8e4m3_t>(); }
TEST(NarrowReduce, VectorLoopMatchesElementLoopE5M2) { checkAllOps<fp8e5m2_t>(); }

// reduceCopy takes the vector loop (so a silent fallback to the element loop would show in the
// benchmarks, not here): on this CPU, unless BATON_CPU_SIMD=0 turned it off.
TEST(NarrowReduce, ReduceCopyTakesTheVectorLoop) {
  const char* e = getenv("BATON_CPU_SIMD");
  const bool cpu = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  EXPECT_EQ(wideNarrowReduce(), cpu && !(e && e[0] == '0'));
}
#endif

}  // namespace
}  // namespace baton

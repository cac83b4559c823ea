// The two loops every MoE combine is made of (moe_routing.h): the weighted row sum dst += w * row
// in fp32, the row in float or bfloat16, and the last step at a token's rank, its partials summed
// and rounded once into the output. Combine reads every received row once through the first and
// writes every output row once through the second, so both are built twice, for AVX2 and for any
// x86-64, and the loader picks one (GCC's target_clones): eight lanes instead of SSE2's four. No
// FMA in either (AVX2 alone does not allow the compiler to contract), so every build and every
// stage rounds the same products and sums: results stay bit-identical.
#include <cstdint>
#include <cstring>

#include "moe/moe_routing.h"

namespace baton {

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define BATON_MOE_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define BATON_MOE_CLONES
#endif

BATON_MOE_CLONES void moeAccumulate(ncclDataType_t type, const char* row, float w, float* dst, size_t h, bool first,
                                    const char* next) {
  // A 64-byte line of this row at a time, and with each the same line of the next row requested:
  // rows are read in token order, not in the order they lie in, so the hardware prefetcher starts
  // over on every row; one row ahead is far enough for the line to arrive in time.
  const size_t elemBytes = type == ncclFloat ? 4 : 2;
  auto run = [&](auto load, size_t line) {
    for (size_t e0 = 0; e0 < h; e0 += line) {
      if (next) __builtin_prefetch(next + e0 * elemBytes);
      if (e0 + line <= h) {  // a whole line: a fixed count, vectorised without a remainder
        if (first)
          for (size_t e = e0; e < e0 + line; ++e) dst[e] = w * load(e);
        else
          for (size_t e = e0; e < e0 + line; ++e) dst[e] += w * load(e);
      } else {
        for (size_t e = e0; e < h; ++e) dst[e] = first ? w * load(e) : dst[e] + w * load(e);
      }
    }
  };
  if (type == ncclFloat) {
    const float* x = reinterpret_cast<const float*>(row);
    run([x](size_t e) { return x[e]; }, 16);
    return;
  }
  const uint16_t* x = reinterpret_cast<const uint16_t*>(row);  // bfloat16: the top half of a float
  run(
      [x](size_t e) {
        const uint32_t bits = uint32_t(x[e]) << 16;
        float v;
        memcpy(&v, &bits, 4);
        return v;
      },
      32);
}

BATON_MOE_CLONES void moeSumRound(ncclDataType_t type, const float* const* parts, int count, size_t h, void* out) {
  // A block at a time, summed in an L1-resident buffer and rounded from there: one pass over the
  // output instead of a copy, count-1 adds and a rounding pass over a whole row.
  constexpr size_t kBlock = 1024;
  float acc[kBlock];
  for (size_t e0 = 0; e0 < h; e0 += kBlock) {
    const size_t c = h - e0 < kBlock ? h - e0 : kBlock;
    float* sum = type == ncclFloat ? static_cast<float*>(out) + e0 : acc;
    if (count == 0)
      for (size_t e = 0; e < c; ++e) sum[e] = 0.f;
    else
      for (size_t e = 0; e < c; ++e) sum[e] = parts[0][e0 + e];
    for (int i = 1; i < count; ++i)
      for (size_t e = 0; e < c; ++e) sum[e] += parts[i][e0 + e];
    if (type == ncclFloat) continue;
    // bfloat16, rounded to nearest even (NaN stays a quiet NaN), as algorithms/datatypes.h rounds:
    // written without a branch so that it vectorises.
    uint16_t* dst = static_cast<uint16_t*>(out) + e0;
    for (size_t e = 0; e < c; ++e) {
      uint32_t x;
      memcpy(&x, &acc[e], 4);
      const bool nan = (x & 0x7fffffffu) > 0x7f800000u;
      const uint16_t rounded = uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
      dst[e] = nan ? uint16_t((x >> 16) | 0x40u) : rounded;
    }
  }
}

}  // namespace baton

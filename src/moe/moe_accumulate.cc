// The weighted row sum every MoE combine is made of (moe_routing.h): dst += w * row in fp32, the
// row in float or bfloat16. Combine reads every received row once through here, so it is built
// twice, for AVX2 and for any x86-64, and the loader picks one (GCC's target_clones): eight lanes
// instead of SSE2's four. No FMA in either (AVX2 alone does not allow the compiler to contract),
// so every build and every stage rounds the same products and sums: results stay bit-identical.
#include <cstdint>
#include <cstring>

#include "moe/moe_routing.h"

namespace baton {

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define BATON_MOE_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define BATON_MOE_CLONES
#endif

BATON_MOE_CLONES void moeAccumulate(ncclDataType_t type, const char* row, float w, float* dst, size_t h, bool first) {
  if (type == ncclFloat) {
    const float* x = reinterpret_cast<const float*>(row);
    if (first)
      for (size_t e = 0; e < h; ++e) dst[e] = w * x[e];
    else
      for (size_t e = 0; e < h; ++e) dst[e] += w * x[e];
    return;
  }
  const uint16_t* x = reinterpret_cast<const uint16_t*>(row);  // bfloat16: the top half of a float
  auto wide = [&](size_t e) {
    const uint32_t bits = uint32_t(x[e]) << 16;
    float v;
    memcpy(&v, &bits, 4);
    return v;
  };
  if (first)
    for (size_t e = 0; e < h; ++e) dst[e] = w * wide(e);
  else
    for (size_t e = 0; e < h; ++e) dst[e] += w * wide(e);
}

}  // namespace baton

// The last step of an MoE combine (src/moe/moe_routing.h's moeSumRound): a token's fp32 partials
// summed in order and rounded once. It is built for AVX2 and for any x86-64 and works a block at a
// time, so it is checked here bit for bit against the plain loop and the bfloat16 codec of
// algorithms/datatypes.h: values that are not integers, ties, NaN, infinities, the largest finite
// floats (which round to infinity) and rows that end inside a block, or span several.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "datatypes.h"
#include "moe/moe_routing.h"

namespace baton {
namespace {

std::vector<float> row(std::mt19937& rng, size_t h) {
  std::uniform_real_distribution<float> u(-1000.f, 1000.f);
  std::vector<float> v(h);
  for (float& x : v) x = u(rng);
  // Values whose rounding is on an edge, sprinkled through the row.
  const float edges[] = {std::numeric_limits<float>::quiet_NaN(),    std::numeric_limits<float>::infinity(),
                         -std::numeric_limits<float>::infinity(),    std::numeric_limits<float>::max(),
                         1.00390625f /* 1 + 2^-8: a tie, to even */, 1.01171875f /* 1 + 3 * 2^-8: a tie, up */};
  for (size_t i = 0; i < h; i += 97) v[i] = edges[(i / 97) % 6];
  return v;
}

TEST(MoeSumRound, EqualsTheOrderedSumRoundedOnce) {
  std::mt19937 rng(7);
  for (size_t h : {size_t(0), size_t(1), size_t(7), size_t(1024), size_t(1025), size_t(3000)})
    for (int count = 0; count <= 5; ++count) {
      std::vector<std::vector<float>> parts;
      std::vector<const float*> at;
      for (int i = 0; i < count; ++i) parts.push_back(row(rng, h));
      for (const auto& p : parts) at.push_back(p.data());
      std::vector<float> want(h, 0.f);
      for (size_t e = 0; e < h; ++e)
        for (int i = 0; i < count; ++i) want[e] = i == 0 ? parts[0][e] : want[e] + parts[i][e];

      std::vector<float> gotF(h + 1, -7.f);
      moeSumRound(ncclFloat, at.data(), count, h, gotF.data());
      EXPECT_EQ(0, memcmp(gotF.data(), want.data(), h * sizeof(float))) << "float, h " << h << ", count " << count;
      EXPECT_EQ(-7.f, gotF[h]) << "wrote past the row";

      std::vector<uint16_t> gotB(h + 1, 0xabcd);
      moeSumRound(ncclBfloat16, at.data(), count, h, gotB.data());
      for (size_t e = 0; e < h; ++e)
        ASSERT_EQ(FloatCodec<bfloat16_t>::from(want[e]).bits, gotB[e])
            << "bfloat16, h " << h << ", count " << count << ", element " << e << " (" << want[e] << ")";
      EXPECT_EQ(0xabcd, gotB[h]) << "wrote past the row";
    }
}

}  // namespace
}  // namespace baton

// MoE dispatch and combine cases with their expected results computed here, without communication
// (shared by tests/collectives/moe_test.cc and the process worker tests/process/coll_check.cc).
//
// Every value is a small integer, so every stage's sums are exact in fp32 and bfloat16 holds every
// input and output exactly: a stage is right only if it equals the reference bit for bit. The
// "expert" multiplies a row by (global expert id % 3 + 1). The backward passes' expectations too.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "nccl.h"

namespace bt {

enum class MoePattern { kRandom, kOneExpert, kHalfTheRanks };

struct MoeCase {
  int nRanks = 2, experts = 4, topk = 2;
  size_t hidden = 16;
  ncclDataType_t type = ncclFloat;
  MoePattern pattern = MoePattern::kRandom;
  uint64_t seed = 1;
  bool weights = true;  // false: topkWeights NULL (every weight 1)
  // Tokens of 8-bit mantissas over 2^-10..2^2 (exact in bfloat16, not in e4m3): for FP8 dispatch's
  // error bound. Only the dispatch expectations hold then (the sums no longer fit bfloat16).
  bool fine = false;
};

struct MoeRank {
  size_t numTokens = 0;
  std::vector<char> tokens;  // [numTokens x hidden] of the type
  std::vector<int32_t> ids;  // [numTokens x topk]
  std::vector<float> weights;
  std::vector<char> wantRecv;  // expected recvTokens, [wantNumRecv x hidden]
  std::vector<size_t> wantPerExpert;
  size_t wantNumRecv = 0;
  std::vector<char> wantOut;  // expected combine output, [numTokens x hidden]
  // Backward: gradOut is combine's output gradient; dispatch's backward gets expertOut's rows as
  // its gradient, so wantGradTokens is combine's output with every weight 1.
  std::vector<char> gradOut;            // [numTokens x hidden]
  std::vector<char> wantGradExpertOut;  // [wantNumRecv x hidden], dispatch's row order
  std::vector<float> wantGradWeights;   // [numTokens x topk]
  std::vector<char> wantGradTokens;     // [numTokens x hidden]
};

inline size_t moeElemSize(ncclDataType_t t) { return t == ncclBfloat16 ? 2 : 4; }
inline void moeStore(ncclDataType_t t, char* p, float v) {
  if (t == ncclBfloat16) {
    uint32_t b;
    memcpy(&b, &v, 4);
    const uint16_t h = (uint16_t)(b >> 16);  // exact: every value here fits bfloat16
    memcpy(p, &h, 2);
  } else {
    memcpy(p, &v, 4);
  }
}
inline float moeLoad(ncclDataType_t t, const char* p) {
  float v;
  if (t == ncclBfloat16) {
    uint16_t h;
    memcpy(&h, p, 2);
    const uint32_t b = (uint32_t)h << 16;
    memcpy(&v, &b, 4);
  } else {
    memcpy(&v, p, 4);
  }
  return v;
}
inline float moeExpertFactor(int globalExpert) { return (float)(globalExpert % 3 + 1); }
inline float moeFineValue(int s, size_t t, size_t e) {
  return std::ldexp((float)((int)((s * 31 + t * 7 + e * 13) % 511) - 255), (int)((t + e) % 13) - 10);
}

// OCP e4m3 "FN" to float, written here from the format (1 sign, 4 exponent bits of bias 7, 3
// mantissa bits; exponent 0: subnormal; S.1111.111: NaN), independently of baton's codec.
inline float moeE4m3ToFloat(uint8_t b) {
  const int exp = (b >> 3) & 15, mant = b & 7;
  if (exp == 15 && mant == 7) return NAN;
  const float mag = exp == 0 ? std::ldexp((float)mant, -9) : std::ldexp(1.f + (float)mant / 8.f, exp - 7);
  return (b & 0x80) ? -mag : mag;
}

// The expert compute of rank `rank`: out row = in row * factor of the row's expert.
inline void moeRunExperts(const MoeCase& c, int rank, const char* in, const size_t* perExpert, char* out) {
  const int per = c.experts / c.nRanks;
  const size_t es = moeElemSize(c.type);
  size_t row = 0;
  for (int e = 0; e < per; ++e)
    for (size_t i = 0; i < perExpert[e]; ++i, ++row)
      for (size_t h = 0; h < c.hidden; ++h) {
        const size_t at = (row * c.hidden + h) * es;
        moeStore(c.type, out + at, moeLoad(c.type, in + at) * moeExpertFactor(rank * per + e));
      }
}

// Every rank's inputs and expected results.
inline std::vector<MoeRank> moeMake(const MoeCase& c) {
  const int n = c.nRanks, k = c.topk, per = c.experts / n;
  const size_t h = c.hidden, es = moeElemSize(c.type);
  uint64_t x = c.seed * 0x9e3779b97f4a7c15ull + 1;
  auto rnd = [&](uint64_t m) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return m ? x % m : 0;
  };
  std::vector<MoeRank> ranks(n);
  for (int s = 0; s < n; ++s) {
    MoeRank& r = ranks[s];
    r.numTokens = s == 1 ? 0 : 1 + rnd(40);  // rank 1 has no tokens; the others uneven counts
    r.tokens.resize(r.numTokens * h * es);
    r.ids.assign(r.numTokens * k, -1);
    r.weights.resize(r.numTokens * k);
    r.gradOut.resize(r.numTokens * h * es);
    for (size_t i = 0; i < r.numTokens * h; ++i) moeStore(c.type, &r.gradOut[i * es], (float)((s + i * 3) % 5) - 2.f);
    for (size_t t = 0; t < r.numTokens; ++t) {
      for (size_t e = 0; e < h; ++e)
        moeStore(c.type, &r.tokens[(t * h + e) * es],
                 c.fine ? moeFineValue(s, t, e) : (float)((s * 31 + t * 7 + e * 3) % 5) - 2.f);
      for (int j = 0; j < k; ++j) {
        r.weights[t * k + j] = c.weights ? (float)((t + j) % 2 + 1) : 1.f;
        int32_t id = -1;
        if (c.pattern == MoePattern::kOneExpert) id = j == 0 ? 0 : -1;
        else if (rnd(8) != 0) {  // about one slot in eight stays empty
          const int span = c.pattern == MoePattern::kHalfTheRanks ? std::max(1, n / 2) * per : c.experts;
          id = (int32_t)rnd(span);
          for (int i = 0; i < j; ++i)
            if (r.ids[t * k + i] == id) id = -1;  // an expert once per token
        }
        r.ids[t * k + j] = id;
      }
    }
  }
  // Dispatch: rank p's rows by local expert, then source rank, then token.
  for (int p = 0; p < n; ++p) {
    MoeRank& r = ranks[p];
    r.wantPerExpert.assign(per, 0);
    for (int e = 0; e < per; ++e)
      for (int s = 0; s < n; ++s)
        for (size_t t = 0; t < ranks[s].numTokens; ++t)
          for (int j = 0; j < k; ++j)
            if (ranks[s].ids[t * k + j] == p * per + e) {
              const char* row = &ranks[s].tokens[t * h * es];
              r.wantRecv.insert(r.wantRecv.end(), row, row + h * es);
              ++r.wantPerExpert[e], ++r.wantNumRecv;
              const size_t at = r.wantGradExpertOut.size();
              r.wantGradExpertOut.resize(at + h * es);
              for (size_t x = 0; x < h; ++x)
                moeStore(c.type, &r.wantGradExpertOut[at + x * es],
                         ranks[s].weights[t * k + j] * moeLoad(c.type, &ranks[s].gradOut[(t * h + x) * es]));
            }
  }
  // Combine: each token's weighted expert outputs, summed in fp32.
  for (int s = 0; s < n; ++s) {
    MoeRank& r = ranks[s];
    r.wantOut.resize(r.numTokens * h * es);
    r.wantGradTokens.resize(r.numTokens * h * es);
    r.wantGradWeights.assign(r.numTokens * k, 0.f);
    for (size_t t = 0; t < r.numTokens; ++t)
      for (size_t e = 0; e < h; ++e) {
        float sum = 0, plain = 0;
        for (int j = 0; j < k; ++j) {
          const int32_t id = r.ids[t * k + j];
          if (id < 0) continue;
          const float y = moeLoad(c.type, &r.tokens[(t * h + e) * es]) * moeExpertFactor(id);
          sum += r.weights[t * k + j] * y, plain += y;
          r.wantGradWeights[t * k + j] += y * moeLoad(c.type, &r.gradOut[(t * h + e) * es]);
        }
        moeStore(c.type, &r.wantOut[(t * h + e) * es], sum);
        moeStore(c.type, &r.wantGradTokens[(t * h + e) * es], plain);
      }
  }
  return ranks;
}

}  // namespace bt

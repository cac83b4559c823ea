// Exact checks of the tensor-parallel fused operations (include/baton/fused.h), for one rank.
//
// Every matrix is integer-valued in [-2, 2] and generated from (seed, owner) alone, so each rank
// can build every other rank's operands and compute every expected output itself, in double,
// without communication; products of such values sum exactly in fp32, so every stage must equal
// the reference bit for bit after the one rounding to the datatype (the same rounding here).
// Header-only: the thread suite (collective_tests) and the process worker (fused_worker) share it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "baton/fused.h"
#include "datatypes.h"
#include "nccl.h"

namespace tpcheck {

struct Shape {
  size_t m, n, k;  // m: rows of the sharded operand, all ranks together
};

inline std::vector<double> matrix(uint64_t seed, int owner, size_t elems) {
  std::vector<double> v(elems);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + (uint64_t)owner * 0xBF58476D1CE4E5B9ull + 1;
  for (double& e : v) {
    x ^= x >> 30, x *= 0xBF58476D1CE4E5B9ull, x ^= x >> 27, x *= 0x94D049BB133111EBull, x ^= x >> 31;
    e = (double)(x % 5) - 2.0;
  }
  return v;
}

// out[rows x cols] = op(a) * op(b), op(X) = X or Xᵀ, stored row-major as given.
inline std::vector<double> gemm(const std::vector<double>& a, bool ta, const std::vector<double>& b, bool tb,
                                size_t rows, size_t cols, size_t inner) {
  std::vector<double> out(rows * cols, 0.0);
  for (size_t i = 0; i < rows; ++i)
    for (size_t j = 0; j < cols; ++j) {
      double s = 0;
      for (size_t p = 0; p < inner; ++p)
        s += (ta ? a[p * rows + i] : a[i * inner + p]) * (tb ? b[j * inner + p] : b[p * cols + j]);
      out[i * cols + j] = s;
    }
  return out;
}

inline std::vector<double> rowsOf(const std::vector<double>& v, size_t first, size_t count, size_t cols) {
  return {v.begin() + first * cols, v.begin() + (first + count) * cols};
}

inline void add(std::vector<double>& acc, const std::vector<double>& v) {
  for (size_t i = 0; i < acc.size(); ++i) acc[i] += v[i];
}

inline size_t elemSize(ncclDataType_t t) { return t == ncclFloat ? 4 : 2; }

// The datatype's bytes of v, rounded as the library rounds.
inline std::vector<unsigned char> encode(const std::vector<double>& v, ncclDataType_t t) {
  std::vector<unsigned char> out(v.size() * elemSize(t));
  for (size_t i = 0; i < v.size(); ++i) {
    const float f = (float)v[i];
    if (t == ncclFloat) memcpy(&out[i * 4], &f, 4);
    else if (t == ncclFloat16) {
      const baton::half_t h = baton::fromFloat<baton::half_t>(f);
      memcpy(&out[i * 2], &h, 2);
    } else {
      const baton::bfloat16_t h = baton::fromFloat<baton::bfloat16_t>(f);
      memcpy(&out[i * 2], &h, 2);
    }
  }
  return out;
}

// "" or the first difference between got and the expected values.
inline std::string compare(const char* what, const std::vector<unsigned char>& got, const std::vector<double>& want,
                           ncclDataType_t t) {
  const std::vector<unsigned char> w = encode(want, t);
  if (got.size() != w.size()) return std::string(what) + ": size differs";
  const size_t es = elemSize(t);
  for (size_t i = 0; i < want.size(); ++i)
    if (memcmp(&got[i * es], &w[i * es], es) != 0) {
      char buf[160];
      snprintf(buf, sizeof buf, "%s: element %zu differs (expected %g)", what, i, want[i]);
      return buf;
    }
  return "";
}

inline std::string result(const char* what, ncclResult_t r) {
  return r == ncclSuccess ? "" : std::string(what) + ": " + ncclGetErrorString(r) + ": " + ncclGetLastError(nullptr);
}

// Runs the four operations on this rank and checks every output. Returns "" or the first failure.
// Every call is made whatever an earlier one gave: a rank that skipped one would leave its peers
// waiting in it.
// skip: 0 computes both gradients of each backward pass; 1 passes NULL for the data gradient
// (dAShard, dA), 2 for the weight gradient (dB, dBShard): the other must still be exact.
inline std::string checkRank(ncclComm_t comm, int rank, int nRanks, Shape s, ncclDataType_t t, uint64_t seed,
                             int skip = 0) {
  const size_t m = s.m, n = s.n, k = s.k, rows = m / nRanks, first = rows * rank;
  std::string err;
  auto note = [&](const std::string& e) {
    if (err.empty()) err = e;
  };
  auto buf = [&](size_t elems) { return std::vector<unsigned char>(elems * elemSize(t), 0xA5); };
  // AllGather+GEMM: A [m x k] shared, B_r [k x n] this rank's; dC_r [m x n] this rank's.
  const std::vector<double> A = matrix(seed, -1, m * k);
  std::vector<std::vector<double>> B(nRanks), dC(nRanks);
  for (int q = 0; q < nRanks; ++q) B[q] = matrix(seed + 1, q, k * n), dC[q] = matrix(seed + 2, q, m * n);
  {
    auto aShard = encode(rowsOf(A, first, rows, k), t), b = encode(B[rank], t);
    auto c = buf(m * n), g = buf(m * k);
    note(result("batonAllGatherGemm",
                batonAllGatherGemm(aShard.data(), b.data(), c.data(), g.data(), m, n, k, t, comm, nullptr)));
    note(compare("AllGather+GEMM C", c, gemm(A, false, B[rank], false, m, n, k), t));
    note(compare("AllGather+GEMM aGathered", g, A, t));
    auto dCb = encode(dC[rank], t), dA = buf(rows * k), dB = buf(k * n);
    note(result("batonAllGatherGemmBackward",
                batonAllGatherGemmBackward(aShard.data(), b.data(), dCb.data(), skip == 1 ? nullptr : dA.data(),
                                           skip == 2 ? nullptr : dB.data(), m, n, k, t, comm, nullptr)));
    std::vector<double> wantDA(rows * k, 0.0);
    for (int q = 0; q < nRanks; ++q) add(wantDA, rowsOf(gemm(dC[q], false, B[q], true, m, k, n), first, rows, k));
    if (skip != 1) note(compare("AllGather+GEMM backward dAShard", dA, wantDA, t));
    if (skip != 2) note(compare("AllGather+GEMM backward dB", dB, gemm(A, true, dC[rank], false, k, n, m), t));
  }
  // GEMM+ReduceScatter: A_r [m x k], B_r [k x n] this rank's; dC [m x n] shared, sharded by rows.
  {
    std::vector<std::vector<double>> Aq(nRanks);
    for (int q = 0; q < nRanks; ++q) Aq[q] = matrix(seed + 3, q, m * k);
    const std::vector<double> dCfull = matrix(seed + 4, -1, m * n);
    auto a = encode(Aq[rank], t), b = encode(B[rank], t), c = buf(rows * n);
    note(result("batonGemmReduceScatter",
                batonGemmReduceScatter(a.data(), b.data(), c.data(), m, n, k, t, comm, nullptr)));
    std::vector<double> want(rows * n, 0.0);
    for (int q = 0; q < nRanks; ++q) add(want, rowsOf(gemm(Aq[q], false, B[q], false, m, n, k), first, rows, n));
    note(compare("GEMM+ReduceScatter cShard", c, want, t));
    auto dCs = encode(rowsOf(dCfull, first, rows, n), t), dA = buf(m * k), dB = buf(k * n);
    note(result("batonGemmReduceScatterBackward",
                batonGemmReduceScatterBackward(a.data(), b.data(), dCs.data(), skip == 1 ? nullptr : dA.data(),
                                               skip == 2 ? nullptr : dB.data(), m, n, k, t, comm, nullptr)));
    if (skip != 1) note(compare("GEMM+ReduceScatter backward dA", dA, gemm(dCfull, false, B[rank], true, m, k, n), t));
    if (skip != 2)
      note(compare("GEMM+ReduceScatter backward dBShard", dB, gemm(Aq[rank], true, dCfull, false, k, n, m), t));
  }
  return err;
}

}  // namespace tpcheck

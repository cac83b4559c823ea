// Exact test data for the collective suites: per (datatype, operator, nranks) inputs whose reduction
// is exactly representable in the datatype however the ranks' contributions are grouped, so the
// expected output is known bit for bit and compared bitwise (DataSelfTest checks this claim).
//
//   integers   full-range values (products: +-1..+-3, so they do not all collapse to 0): sums and
//              products wrap mod 2^bits, which is associative and commutative. Expected values are
//              computed in uint64 and truncated; avg = wrapped sum / nranks, truncating division.
//   floats     integer-valued inputs in [-R, R], R = M / nranks where M is the largest integer with
//              every integer in [-M, M] exact in the type (8, 16, 256, 2048, 2^24, 2^53), so every
//              partial sum is exact; products use {+-1, +-2} (|product| <= 2^8); max/min use
//              [-M, M] (M capped at 2^30); PreMulSum's scalar is 0.5 (a power of two keeps partial
//              sums exact). Avg mirrors baton's definition: the exact sum divided by nranks once, in
//              the compute type (float for the 16- and 8-bit floats), rounded to the type.
//   payloads   non-reducing collectives and p2p move arbitrary bit patterns (NaNs included).
// Everything derives from a hash of (seed, rank, index), so any slice of any rank's data, or of the
// expected result, can be produced on its own.
//
// Header-only (public API + algorithms/datatypes.h) so tests/process/coll_check.cc can share it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "collectives/test_memory.h"
#include "datatypes.h"
#include "nccl.h"

namespace bt {

enum class Op { Sum, Prod, Max, Min, Avg, PreMulSum };
inline constexpr Op kAllOps[] = {Op::Sum, Op::Prod, Op::Max, Op::Min, Op::Avg, Op::PreMulSum};
inline constexpr ncclDataType_t kAllTypes[] = {ncclInt8,    ncclUint8,    ncclInt32,      ncclUint32,
                                               ncclInt64,   ncclUint64,   ncclFloat16,    ncclFloat32,
                                               ncclFloat64, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2};

inline const char* opName(Op op) {
  static const char* const k[] = {"sum", "prod", "max", "min", "avg", "premulsum"};
  return k[(int)op];
}
inline const char* typeName(ncclDataType_t t) {
  static const char* const k[] = {"int8", "uint8", "int32",  "uint32",   "int64",  "uint64",
                                  "half", "float", "double", "bfloat16", "f8e4m3", "f8e5m2"};
  return (int)t >= 0 && (int)t < ncclNumTypes ? k[(int)t] : "?";
}
inline size_t typeSize(ncclDataType_t t) {
  static const size_t k[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return k[(int)t];
}
inline ncclRedOp_t builtinOp(Op op) {
  switch (op) {
    case Op::Sum: return ncclSum;
    case Op::Prod: return ncclProd;
    case Op::Max: return ncclMax;
    case Op::Min: return ncclMin;
    case Op::Avg: return ncclAvg;
    default: return ncclNumOps;  // PreMulSum: created per communicator
  }
}

// Calls f(T{}) with the C++ element type of `t`.
template <typename F>
decltype(auto) withType(ncclDataType_t t, F&& f) {
  switch (t) {
    case ncclInt8: return f(int8_t{});
    case ncclUint8: return f(uint8_t{});
    case ncclInt32: return f(int32_t{});
    case ncclUint32: return f(uint32_t{});
    case ncclInt64: return f(int64_t{});
    case ncclUint64: return f(uint64_t{});
    case ncclFloat16: return f(baton::half_t{});
    case ncclFloat32: return f(float{});
    case ncclFloat64: return f(double{});
    case ncclBfloat16: return f(baton::bfloat16_t{});
    case ncclFloat8e4m3: return f(baton::fp8e4m3_t{});
    default: return f(baton::fp8e5m2_t{});
  }
}

inline uint64_t mix64(uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
inline uint64_t hashAt(uint64_t seed, int rank, size_t j) {
  return mix64(seed * 0x100000001b3ull + (uint64_t)rank * 0x9e3779b97f4a7c15ull + j);
}

// Random bytes: byte b of the (seed, rank) stream is byte b % 8 of hashAt(seed, rank, b / 8), so any
// range can be produced on its own at one hash per 8 bytes.
inline void fillStream(uint64_t seed, int rank, size_t byte0, size_t nbytes, void* dst) {
  char* d = static_cast<char*>(dst);
  for (size_t b = byte0, end = byte0 + nbytes; b < end;) {
    const uint64_t w = hashAt(seed, rank, b / 8);  // little-endian bytes of w
    const size_t off = b % 8, take = 8 - off < end - b ? 8 - off : end - b;
    memcpy(d, reinterpret_cast<const char*>(&w) + off, take);
    d += take;
    b += take;
  }
}

constexpr size_t kGenBlock = 2048;  // elements generated and reduced per pass

template <typename T>
struct Gen {
  static constexpr bool kInt = std::is_integral_v<T>;
  using S = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;  // integers: widened type
  // Largest M with every integer in [-M, M] exact in T.
  static constexpr int64_t exactLimit() {
    if constexpr (std::is_same_v<T, baton::fp8e5m2_t>) return 8;
    else if constexpr (std::is_same_v<T, baton::fp8e4m3_t>) return 16;
    else if constexpr (std::is_same_v<T, baton::bfloat16_t>) return 256;
    else if constexpr (std::is_same_v<T, baton::half_t>) return 2048;
    else if constexpr (std::is_same_v<T, float>) return int64_t(1) << 24;
    else return int64_t(1) << 53;
  }
  static T fromDouble(double d) {
    if constexpr (std::is_same_v<T, double>) return d;
    else if constexpr (std::is_same_v<T, float>) return (float)d;
    else return baton::FloatCodec<T>::from((float)d);
  }
  // The integer k in [-M, M] as a T (narrow floats through a table: the codec is slow per element).
  static T fromInt(int64_t k) {
    if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>) {
      return (T)k;
    } else {
      static const std::vector<T> table = [] {
        std::vector<T> t(2 * exactLimit() + 1);
        for (int64_t i = -exactLimit(); i <= exactLimit(); ++i) t[i + exactLimit()] = fromDouble((double)i);
        return t;
      }();
      return table[k + exactLimit()];
    }
  }
  static T scalar() {
    if constexpr (kInt) return T(3);
    else return fromDouble(0.5);
  }
  // 32 random bits mapped onto [0, n), n <= 2^32 (multiply-shift).
  static int64_t below(uint32_t bits, int64_t n) { return (int64_t)(((uint64_t)bits * (uint64_t)n) >> 32); }
  // Float inputs as exact integers, m <= kGenBlock elements, from 32 random bits each.
  static void floatInts(Op op, int nranks, uint64_t seed, int rank, size_t j0, size_t m, int64_t* out) {
    uint32_t bits[kGenBlock];
    fillStream(seed, rank, j0 * 4, m * 4, bits);
    const int64_t lim = exactLimit() < (int64_t(1) << 30) ? exactLimit() : int64_t(1) << 30;
    const int64_t r = op == Op::Max || op == Op::Min ? lim : (lim / nranks > 0 ? lim / nranks : 1);
    static const int64_t kProd[] = {1, -1, 2, -2};
    for (size_t k = 0; k < m; ++k) out[k] = op == Op::Prod ? kProd[bits[k] & 3] : below(bits[k], 2 * r + 1) - r;
  }
  // Rank `rank`'s inputs [j0, j0+n).
  static void inputs(Op op, int nranks, uint64_t seed, int rank, size_t j0, size_t n, T* dst) {
    if constexpr (kInt) {
      if (op != Op::Prod) return fillStream(seed, rank, j0 * sizeof(T), n * sizeof(T), dst);  // full range
      static const int64_t kProd[] = {-3, -2, -1, 1, 2, 3};
      uint32_t bits[kGenBlock];
      for (size_t b = 0; b < n; b += kGenBlock) {
        const size_t m = n - b < kGenBlock ? n - b : kGenBlock;
        fillStream(seed, rank, (j0 + b) * 4, m * 4, bits);
        for (size_t k = 0; k < m; ++k) dst[b + k] = (T)kProd[below(bits[k], 6)];
      }
    } else {
      int64_t ks[kGenBlock];
      for (size_t b = 0; b < n; b += kGenBlock) {
        const size_t m = n - b < kGenBlock ? n - b : kGenBlock;
        floatInts(op, nranks, seed, rank, j0 + b, m, ks);
        for (size_t k = 0; k < m; ++k) dst[b + k] = fromInt(ks[k]);
      }
    }
  }
  // The reduction over all ranks of elements [j0, j0+n).
  static void expected(Op op, int nranks, uint64_t seed, size_t j0, size_t n, T* dst) {
    for (size_t b = 0; b < n; b += kGenBlock) {
      const size_t m = n - b < kGenBlock ? n - b : kGenBlock;
      if constexpr (kInt) {
        T v[kGenBlock], best[kGenBlock];
        uint64_t acc[kGenBlock];
        for (int r = 0; r < nranks; ++r) {
          inputs(op, nranks, seed, r, j0 + b, m, v);
          for (size_t k = 0; k < m; ++k) {
            const uint64_t w = (uint64_t)(S)v[k];  // sign-extended: the same value mod 2^bits
            if (r == 0) acc[k] = op == Op::Prod ? 1 : 0, best[k] = v[k];
            switch (op) {
              case Op::Prod: acc[k] *= w; break;
              case Op::PreMulSum: acc[k] += w * (uint64_t)(S)scalar(); break;
              case Op::Max: best[k] = v[k] > best[k] ? v[k] : best[k]; break;
              case Op::Min: best[k] = v[k] < best[k] ? v[k] : best[k]; break;
              default: acc[k] += w; break;
            }
          }
        }
        for (size_t k = 0; k < m; ++k) {
          if (op == Op::Max || op == Op::Min) dst[b + k] = best[k];
          else if (op == Op::Avg) dst[b + k] = (T)((S)(T)acc[k] / (S)nranks);  // wrapped sum, truncating division
          else dst[b + k] = (T)acc[k];
        }
      } else {
        int64_t ks[kGenBlock];
        double acc[kGenBlock];
        for (int r = 0; r < nranks; ++r) {
          floatInts(op, nranks, seed, r, j0 + b, m, ks);
          for (size_t k = 0; k < m; ++k) {
            const double v = (double)ks[k];
            if (r == 0) acc[k] = op == Op::Prod ? 1 : op == Op::Max || op == Op::Min ? v : 0;
            switch (op) {
              case Op::Prod: acc[k] *= v; break;
              case Op::PreMulSum: acc[k] += v * 0.5; break;
              case Op::Max: acc[k] = v > acc[k] ? v : acc[k]; break;
              case Op::Min: acc[k] = v < acc[k] ? v : acc[k]; break;
              default: acc[k] += v; break;
            }
          }
        }
        for (size_t k = 0; k < m; ++k) {
          if (op != Op::Avg) dst[b + k] = fromDouble(acc[k]);  // exact
          else if constexpr (std::is_same_v<T, double>) dst[b + k] = acc[k] / nranks;
          else dst[b + k] = fromDouble((double)((float)acc[k] / (float)nranks));  // in float, then rounded
        }
      }
    }
  }
};

// Rank `rank`'s reducing input, elements [j0, j0+n) of the global index space.
inline void fillInput(ncclDataType_t t, Op op, int nranks, uint64_t seed, int rank, size_t j0, size_t n, void* dst) {
  withType(t, [&](auto z) { Gen<decltype(z)>::inputs(op, nranks, seed, rank, j0, n, static_cast<decltype(z)*>(dst)); });
}
// The reduction over all ranks of elements [j0, j0+n).
inline void fillExpected(ncclDataType_t t, Op op, int nranks, uint64_t seed, size_t j0, size_t n, void* dst) {
  withType(t, [&](auto z) { Gen<decltype(z)>::expected(op, nranks, seed, j0, n, static_cast<decltype(z)*>(dst)); });
}
// Arbitrary bits for data movement (NaN patterns included): rank `rank`'s elements [j0, j0+n).
inline void fillPayload(size_t typeBytes, uint64_t seed, int rank, size_t j0, size_t n, void* dst) {
  fillStream(seed ^ 0x5eedull, rank, j0 * typeBytes, n * typeBytes, dst);
}
// The PreMulSum scalar of type t (8 bytes, the first typeSize(t) used).
inline void fillScalar(ncclDataType_t t, void* dst) {
  withType(t, [&](auto z) {
    using T = decltype(z);
    const T s = Gen<T>::scalar();
    memcpy(dst, &s, sizeof s);
  });
}

// A heap buffer with guard bytes on both sides; the data starts 64-byte aligned.
class GuardedBuffer {
 public:
  static constexpr size_t kGuard = 256;
  static constexpr unsigned char kGuardByte = 0xA7, kPoisonByte = 0xCD;
  GuardedBuffer() = default;
  explicit GuardedBuffer(size_t bytes)
      : bytes_(bytes), mem_(new (std::align_val_t(64)) unsigned char[bytes + 2 * kGuard]) {
    memset(mem_, kGuardByte, kGuard);
    memset(mem_ + kGuard + bytes, kGuardByte, kGuard);
    memset(mem_ + kGuard, kPoisonByte, bytes);
  }
  // In a test arena (test_memory.h: registered buffers or a window, lesson 09).
  GuardedBuffer(size_t bytes, Arena* arena)
      : bytes_(bytes), mem_(reinterpret_cast<unsigned char*>(arena->alloc(bytes + 2 * kGuard))), arena_(arena) {
    memset(mem_, kGuardByte, kGuard);
    memset(mem_ + kGuard + bytes, kGuardByte, kGuard);
    memset(mem_ + kGuard, kPoisonByte, bytes);
  }
  GuardedBuffer(GuardedBuffer&& o) noexcept { *this = std::move(o); }
  GuardedBuffer& operator=(GuardedBuffer&& o) noexcept {
    std::swap(bytes_, o.bytes_);
    std::swap(mem_, o.mem_);
    std::swap(arena_, o.arena_);
    return *this;
  }
  ~GuardedBuffer() {
    if (arena_) arena_->free(mem_);
    else operator delete[](mem_, std::align_val_t(64));
  }
  char* data() const { return reinterpret_cast<char*>(mem_ + kGuard); }
  size_t bytes() const { return bytes_; }
  // Empty string if both guards are intact, else which side and where.
  std::string checkGuards() const {
    if (!mem_) return "";  // never allocated
    for (size_t i = 0; i < kGuard; ++i) {
      if (mem_[i] != kGuardByte) return "guard before the buffer overwritten at byte -" + std::to_string(kGuard - i);
      if (mem_[kGuard + bytes_ + i] != kGuardByte)
        return "guard after the buffer overwritten at byte +" + std::to_string(i) + " past the end";
    }
    return "";
  }

 private:
  size_t bytes_ = 0;
  unsigned char* mem_ = nullptr;
  Arena* arena_ = nullptr;
};

// Bitwise comparison of n elements of typeBytes. Empty string if equal, else the first mismatch
// (element index, both values in hex) and how many elements differ.
inline std::string compareBits(const void* got, const void* want, size_t n, size_t typeBytes, const char* what) {
  if (n == 0 || memcmp(got, want, n * typeBytes) == 0) return "";
  const unsigned char* g = static_cast<const unsigned char*>(got);
  const unsigned char* w = static_cast<const unsigned char*>(want);
  size_t first = n, bad = 0;
  for (size_t i = 0; i < n; ++i) {
    if (memcmp(g + i * typeBytes, w + i * typeBytes, typeBytes) == 0) continue;
    if (first == n) first = i;
    ++bad;
  }
  auto hex = [&](const unsigned char* p) {  // the element's value, most significant byte first
    std::string s = "0x";
    char b[3];
    for (size_t k = typeBytes; k-- > 0;) {
      snprintf(b, sizeof b, "%02x", p[k]);
      s += b;
    }
    return s;
  };
  return std::string(what) + ": " + std::to_string(bad) + " of " + std::to_string(n) + " elements differ; first at " +
         std::to_string(first) + ": got " + hex(g + first * typeBytes) + ", expected " + hex(w + first * typeBytes);
}

}  // namespace bt

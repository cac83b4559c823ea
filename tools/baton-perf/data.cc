// Inputs, expected outputs and the bitwise check.
//
// Every input element is a function of (seed, rank, index): the seed changes with the size, the
// datatype, the operator, the root, in-place vs out-of-place and the check iteration, so an output
// that lands at a wrong offset, comes from a wrong rank or from a previous call is caught.
//
// Collectives that only move data get random bit patterns (NaN payloads included: moving data must
// not change a bit). Reductions get integers chosen per (type, op, nranks) so that every partial
// result, in any order, is exact and in range; the expected value is then computed in int64 on the
// host and compared bit for bit:
//   sum, mulsum  at most `A` ranks (A = min(nranks, limit)) contribute a value in [0, limit / A] to an
//                element, the others 0; mulsum's limit is halved because inputs are doubled first.
//   prod         at most maxTwos ranks contribute a factor 2, the others 1; signed types also flip
//                signs with -1 factors.
//   max, min     any value in [-maxExact, maxExact] ([0, maxExact] for unsigned types).
//   avg          base b + k on one rank, b - k on the next, b elsewhere: the sum is exactly n*b, and
//                n*b / n = b for integer (truncating) and floating division alike. For signed types
//                k may exceed b, so even where b must be 0 (fp8 with many ranks) inputs still vary.
#include <algorithm>
#include <cstring>

#include "baton_perf.h"

namespace batonperf {
namespace {

uint64_t mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t elementHash(const DataSpec& d, int rank, size_t idx) {
  return mix(d.seed ^ mix(uint64_t(rank) * 0xd1b54a32d192ed03ull + uint64_t(idx)));
}

// A value in [0, range) from 64 random bits (multiply-high: no division in the hot loop).
int64_t uniform(uint64_t h, uint64_t range) { return int64_t((unsigned __int128)h * range >> 64); }

// Element idx's rotation in [0, nranks): which ranks are "active" for it, and avg's +k rank.
int rotation(const DataSpec& d, size_t idx) { return int((uint64_t(idx) + d.seed) % uint64_t(d.nranks)); }

int64_t inputInt(const DataSpec& d, int rank, size_t idx, int rot) {
  const TypeInfo& t = *d.type;
  const int64_t n = d.nranks;
  int pos = rank + rot;  // rank's place in this element's rotation
  if (pos >= n) pos -= int(n);
  const uint64_t h = elementHash(d, rank, idx);
  switch (d.op) {
    case Op::Sum:
    case Op::MulSum: {
      const int64_t limit = d.op == Op::MulSum ? t.maxExact / 2 : t.maxExact;
      const int64_t active = std::min(n, limit);
      return pos < active ? uniform(h, uint64_t(limit / active + 1)) : 0;
    }
    case Op::Prod: {
      const int64_t active = std::min<int64_t>(n, t.maxTwos);
      const int64_t v = pos < active && (h & 1) ? 2 : 1;
      return isSigned(t) && (h & 2) ? -v : v;
    }
    case Op::Max:
    case Op::Min:
      if (isSigned(t)) return uniform(h, uint64_t(2 * t.maxExact + 1)) - t.maxExact;
      return uniform(h, uint64_t(t.maxExact + 1));
    case Op::Avg: {
      const uint64_t hb = mix(d.seed ^ (uint64_t(idx) * 0x9e3779b97f4a7c15ull));  // same on every rank
      const int64_t base = uniform(hb, uint64_t(t.maxExact / (n + 1) + 1));
      if (n == 1) return base;
      // Partial sums lie in [-k, n*base + k]: signed types may go below zero, unsigned ones not.
      const int64_t kMax = isSigned(t) ? t.maxExact - n * base : std::min(base, t.maxExact - n * base);
      const int64_t k = uniform(mix(hb), uint64_t(kMax + 1));
      return base + (pos == 0 ? k : 0) - (pos == 1 ? k : 0);
    }
    case Op::None: break;
  }
  return 0;
}

}  // namespace

uint64_t inputBits(const DataSpec& d, int rank, size_t idx) {
  if (d.op == Op::None) return elementHash(d, rank, idx);
  return encodeInt(*d.type, inputInt(d, rank, idx, rotation(d, idx)));
}

uint64_t reducedBits(const DataSpec& d, size_t idx) {
  const int rot = rotation(d, idx);
  int64_t acc = inputInt(d, 0, idx, rot);
  for (int r = 1; r < d.nranks; ++r) {
    const int64_t v = inputInt(d, r, idx, rot);
    switch (d.op) {
      case Op::Sum:
      case Op::MulSum:
      case Op::Avg: acc += v; break;
      case Op::Prod: acc *= v; break;
      case Op::Max: acc = std::max(acc, v); break;
      case Op::Min: acc = std::min(acc, v); break;
      case Op::None: break;
    }
  }
  if (d.op == Op::MulSum) acc *= 2;
  if (d.op == Op::Avg) acc /= d.nranks;  // exact: the sum is a multiple of nranks
  return encodeInt(*d.type, acc);
}

void storeBits(void* base, size_t idx, size_t size, uint64_t bits) {
  std::memcpy(static_cast<char*>(base) + idx * size, &bits, size);  // little-endian: the low bytes
}

void fillInputs(const DataSpec& d, const Counts& c, int rank, void* send) {
  const size_t sz = d.type->size;
  for (size_t i = 0; i < c.send; ++i) storeBits(send, i, sz, inputBits(d, rank, i));
}

bool fillExpected(Coll coll, const DataSpec& d, const Counts& c, int rank, int root, void* out) {
  const size_t sz = d.type->size;
  const size_t p = c.param;
  const int n = d.nranks;
  auto put = [&](size_t i, uint64_t bits) { storeBits(out, i, sz, bits); };
  switch (coll) {
    case Coll::AllReduce:
      for (size_t i = 0; i < p; ++i) put(i, reducedBits(d, i));
      return true;
    case Coll::Reduce:
      if (rank != root) return false;
      for (size_t i = 0; i < p; ++i) put(i, reducedBits(d, i));
      return true;
    case Coll::ReduceScatter:
      for (size_t i = 0; i < p; ++i) put(i, reducedBits(d, size_t(rank) * p + i));
      return true;
    case Coll::AllGather:
    case Coll::HyperCube:
      for (int j = 0; j < n; ++j)
        for (size_t i = 0; i < p; ++i) put(size_t(j) * p + i, inputBits(d, j, i));
      return true;
    case Coll::Gather:
      if (rank != root) return false;
      for (int j = 0; j < n; ++j)
        for (size_t i = 0; i < p; ++i) put(size_t(j) * p + i, inputBits(d, j, i));
      return true;
    case Coll::Broadcast:
      for (size_t i = 0; i < p; ++i) put(i, inputBits(d, root, i));
      return true;
    case Coll::Scatter:
      for (size_t i = 0; i < p; ++i) put(i, inputBits(d, root, size_t(rank) * p + i));
      return true;
    case Coll::AlltoAll:
      for (int j = 0; j < n; ++j)
        for (size_t i = 0; i < p; ++i) put(size_t(j) * p + i, inputBits(d, j, size_t(rank) * p + i));
      return true;
    case Coll::SendRecv: {
      const int prev = (rank + n - 1) % n;
      for (size_t i = 0; i < p; ++i) put(i, inputBits(d, prev, i));
      return true;
    }
  }
  return false;
}

void fillSentinel(void* p, size_t n) { std::memset(p, 0xa5, n); }

size_t countWrong(const void* actual, const void* expected, size_t n, size_t size) {
  if (n == 0 || std::memcmp(actual, expected, n) == 0) return 0;
  const char* a = static_cast<const char*>(actual);
  const char* e = static_cast<const char*>(expected);
  size_t wrong = 0;
  for (size_t off = 0; off < n; off += size) wrong += std::memcmp(a + off, e + off, std::min(size, n - off)) != 0;
  return wrong;
}

}  // namespace batonperf

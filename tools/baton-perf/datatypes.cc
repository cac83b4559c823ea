// Datatype and reduction-operator tables, and exact small integers as bit patterns.
//
// The check never converts a computed float to a narrow type: every value baton-perf feeds to a
// reduction is an integer (or a power of two) that the type holds exactly, and so is every partial
// result in any summation order. encodeInt builds such an integer's bit pattern directly from its
// binary expansion, so no rounding mode is involved.
#include <bit>
#include <cstring>

#include "baton_perf.h"

namespace batonperf {
namespace {

// maxExact: the largest integer magnitude such that all integers up to it are exact and the sum
// stays far from overflow. maxTwos: products are kept to at most this many factors of two.
const TypeInfo kTypes[] = {
    {ncclInt8, "int8", 1, Fmt::Int, 127, 6},
    {ncclUint8, "uint8", 1, Fmt::Uint, 255, 7},
    {ncclInt32, "int32", 4, Fmt::Int, int64_t(1) << 30, 30},
    {ncclUint32, "uint32", 4, Fmt::Uint, int64_t(1) << 31, 31},
    {ncclInt64, "int64", 8, Fmt::Int, int64_t(1) << 52, 62},
    {ncclUint64, "uint64", 8, Fmt::Uint, int64_t(1) << 53, 62},
    {ncclFloat16, "half", 2, Fmt::Half, 2048, 15},  // 11-bit significand; max 65504
    {ncclFloat32, "float", 4, Fmt::Float, int64_t(1) << 24, 62},
    {ncclFloat64, "double", 8, Fmt::Double, int64_t(1) << 53, 62},
    {ncclBfloat16, "bfloat16", 2, Fmt::Bf16, 256, 62},  // 8-bit significand
    {ncclFloat8e4m3, "f8e4m3", 1, Fmt::E4m3, 16, 8},    // 4-bit significand; max 448
    {ncclFloat8e5m2, "f8e5m2", 1, Fmt::E5m2, 8, 15},    // 3-bit significand; max 57344
};

struct Alias {
  const char* name;
  ncclDataType_t type;
};
const Alias kTypeAliases[] = {
    {"char", ncclInt8},          {"int", ncclInt32},       {"fp16", ncclFloat16},       {"float16", ncclFloat16},
    {"fp32", ncclFloat32},       {"float32", ncclFloat32}, {"fp64", ncclFloat64},       {"float64", ncclFloat64},
    {"bf16", ncclBfloat16},      {"e4m3", ncclFloat8e4m3}, {"fp8e4m3", ncclFloat8e4m3}, {"e5m2", ncclFloat8e5m2},
    {"fp8e5m2", ncclFloat8e5m2},
};

const char* const kOpNames[] = {"sum", "prod", "max", "min", "avg", "mulsum", "none"};

// IEEE-style binary format with expBits exponent bits and mantBits stored significand bits.
uint64_t encodeBinary(int64_t x, int expBits, int mantBits) {
  const uint64_t sign = x < 0 ? uint64_t(1) << (expBits + mantBits) : 0;
  const uint64_t a = x < 0 ? uint64_t(0) - uint64_t(x) : uint64_t(x);
  if (a == 0) return sign;
  const int e = 63 - std::countl_zero(a);  // a = 1.f * 2^e
  const uint64_t frac = a - (uint64_t(1) << e);
  const uint64_t mant = e <= mantBits ? frac << (mantBits - e) : frac >> (e - mantBits);
  const uint64_t bias = (uint64_t(1) << (expBits - 1)) - 1;
  return sign | (uint64_t(e) + bias) << mantBits | mant;
}

}  // namespace

const TypeInfo& typeInfo(ncclDataType_t t) {
  for (const TypeInfo& ti : kTypes)
    if (ti.type == t) return ti;
  return kTypes[7];  // not reached: every ncclDataType_t is in the table
}

const std::vector<ncclDataType_t>& allTypes() {
  static const std::vector<ncclDataType_t> all = [] {
    std::vector<ncclDataType_t> v;
    for (const TypeInfo& ti : kTypes) v.push_back(ti.type);
    return v;
  }();
  return all;
}

bool parseType(const std::string& s, ncclDataType_t* out) {
  for (const TypeInfo& ti : kTypes)
    if (s == ti.name) return *out = ti.type, true;
  for (const Alias& a : kTypeAliases)
    if (s == a.name) return *out = a.type, true;
  return false;
}

const char* opName(Op op) { return kOpNames[int(op)]; }

const std::vector<Op>& allOps() {
  static const std::vector<Op> all = {Op::Sum, Op::Prod, Op::Max, Op::Min, Op::Avg, Op::MulSum};
  return all;
}

bool parseOp(const std::string& s, Op* out) {
  for (Op op : allOps())
    if (s == opName(op)) return *out = op, true;
  if (s == "premulsum") return *out = Op::MulSum, true;
  return false;
}

bool isSigned(const TypeInfo& t) { return t.fmt != Fmt::Uint; }

uint64_t encodeInt(const TypeInfo& t, int64_t x) {
  switch (t.fmt) {
    case Fmt::Int:
    case Fmt::Uint: return uint64_t(x);  // the store keeps the low t.size bytes
    case Fmt::Half: return encodeBinary(x, 5, 10);
    case Fmt::Bf16: return encodeBinary(x, 8, 7);
    case Fmt::E4m3: return encodeBinary(x, 4, 3);
    case Fmt::E5m2: return encodeBinary(x, 5, 2);
    case Fmt::Float: {
      const float f = float(x);
      return std::bit_cast<uint32_t>(f);
    }
    case Fmt::Double: {
      const double d = double(x);
      return std::bit_cast<uint64_t>(d);
    }
  }
  return 0;
}

}  // namespace batonperf

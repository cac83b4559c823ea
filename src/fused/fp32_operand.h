// fp32 views of a fused operation's operands (lesson 11): BLAS computes in fp32, so half and
// bfloat16 matrices are widened before a GEMM and outputs rounded once after it; float matrices
// are used where they are, with no copy.
#pragma once

#include <cstddef>
#include <vector>

#include "fused/blas.h"
#include "fused/fused_call.h"

namespace baton {

// A read-only fp32 view of `elems` elements in the call's datatype.
class Fp32In {
 public:
  explicit Fp32In(const FusedCall& call) : type_(call.type) {}
  Fp32In(const FusedCall& call, const void* p, size_t elems) : type_(call.type) { load(p, elems); }
  const float* load(const void* p, size_t elems) {
    if (type_ == ncclFloat) return ptr_ = (const float*)p;
    own_.resize(elems);
    if (p) widenToFloat(type_, p, own_.data(), elems);
    return ptr_ = own_.data();
  }
  const float* get() const { return ptr_; }

 private:
  ncclDataType_t type_;
  std::vector<float> own_;
  const float* ptr_ = nullptr;
};

// An fp32 destination for `elems` elements of an output in the call's datatype: the output itself
// for float; otherwise scratch that store() rounds into the output.
class Fp32Out {
 public:
  Fp32Out(const FusedCall& call, void* p, size_t elems) : type_(call.type), out_(p), elems_(elems) {
    if (type_ != ncclFloat && p) own_.resize(elems);
  }
  float* get() { return type_ == ncclFloat ? (float*)out_ : own_.data(); }
  void store() {
    if (type_ != ncclFloat && out_) roundFromFloat(type_, own_.data(), out_, elems_);
  }

 private:
  ncclDataType_t type_;
  void* out_;
  size_t elems_;
  std::vector<float> own_;
};

}  // namespace baton

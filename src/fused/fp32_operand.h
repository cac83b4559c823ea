// fp32 views of a fused operation's operands (lesson 11): BLAS computes in fp32, so half and
// bfloat16 matrices are widened before a GEMM and outputs rounded once after it; float matrices
// are used where they are, with no copy; widened copies live in the communicator's scratch.
#pragma once

#include <cstddef>

#include "fused/blas.h"
#include "fused/fused_call.h"

namespace baton {

// A read-only fp32 view of `elems` elements in the call's datatype; widened copies live in the
// communicator's scratch slot `slot`.
class Fp32In {
 public:
  Fp32In(const FusedCall& call, FusedScratch::Slot slot) : call_(call), slot_(slot) {}
  Fp32In(const FusedCall& call, FusedScratch::Slot slot, const void* p, size_t elems) : Fp32In(call, slot) {
    load(p, elems);
  }
  const float* load(const void* p, size_t elems) {
    if (call_.type == ncclFloat || !p) return ptr_ = (const float*)p;
    float* wide = (float*)call_.scratch->get(slot_, elems * sizeof(float));
    widenToFloat(call_.type, p, wide, elems);
    return ptr_ = wide;
  }
  const float* get() const { return ptr_; }

 private:
  const FusedCall& call_;
  FusedScratch::Slot slot_;
  const float* ptr_ = nullptr;
};

// An fp32 destination for `elems` elements of an output in the call's datatype: the output itself
// for float; otherwise scratch slot `slot`, which store() rounds into the output.
class Fp32Out {
 public:
  Fp32Out(const FusedCall& call, FusedScratch::Slot slot, void* p, size_t elems)
      : type_(call.type), out_(p), elems_(elems) {
    wide_ = type_ == ncclFloat || !p ? (float*)p : (float*)call.scratch->get(slot, elems * sizeof(float));
  }
  float* get() { return wide_; }
  void store() {
    if (type_ != ncclFloat && out_) roundFromFloat(type_, wide_, out_, elems_);
  }

 private:
  ncclDataType_t type_;
  void* out_;
  size_t elems_;
  float* wide_;
};

}  // namespace baton

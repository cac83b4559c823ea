// Reading a fuzz target's input: small numbers from its front, the rest as text or bytes.
//
// libFuzzer mutates bytes; the targets turn the first few into choices (which parser, how many
// ranks) so one input reaches every branch, and pass the rest on unchanged. Running out of bytes
// is never an error: a reader then yields zeros and empty strings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "misc/debug.h"
#include "nccl.h"

namespace baton_fuzz {

// Runs a parser that may reject its input and checks the contract every rejection keeps: an error
// code and a message (ncclGetLastError's) saying why. Returns the code.
template <class F>
ncclResult_t rejectsWithMessage(F&& parse) {
  batonError(ncclSuccess, "%s", "");  // clears the last message
  const ncclResult_t res = parse();
  if (res != ncclSuccess && res != ncclInProgress && baton::lastError()[0] == 0) __builtin_trap();
  return res;
}

class Input {
 public:
  Input(const uint8_t* data, size_t size) : p_(data), n_(size) {}
  size_t left() const { return n_; }
  uint8_t u8() {
    if (n_ == 0) return 0;
    --n_;
    return *p_++;
  }
  // A number in [lo, hi] from one byte.
  int range(int lo, int hi) { return lo + u8() % (hi - lo + 1); }
  // Up to the next `sep` (consumed) or the end.
  std::string until(char sep) {
    const void* at = memchr(p_, sep, n_);
    const size_t len = at ? (size_t)(static_cast<const uint8_t*>(at) - p_) : n_;
    std::string s(reinterpret_cast<const char*>(p_), len);
    take(at ? len + 1 : len);
    return s;
  }
  std::string_view bytes(size_t len) {
    len = len < n_ ? len : n_;
    std::string_view v(reinterpret_cast<const char*>(p_), len);
    take(len);
    return v;
  }
  std::string_view all() { return bytes(n_); }
  // Fills `obj` from the input (zeros past its end).
  template <class T>
  void fill(T* obj) {
    memset(obj, 0, sizeof *obj);
    const std::string_view b = bytes(sizeof *obj);
    memcpy(obj, b.data(), b.size());
  }

 private:
  void take(size_t k) { p_ += k, n_ -= k; }
  const uint8_t* p_;
  size_t n_;
};

}  // namespace baton_fuzz

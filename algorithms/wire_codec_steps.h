// The wire-format codecs inside the point-to-point copy loop: the fused stage of the wire-format
// collectives (include/baton/lowp.h, lesson 15). A transfer with a WireStepCodec
// (sendrecv_progress.h) does not copy bytes into and out of the FIFO slot: the sender quantizes
// the next stepElems elements of its source straight into the slot, and the receiver decodes the
// slot straight into its output (or adds the decoded values to an fp32 sum). No quantized buffer
// is written and read again, which is the pass over memory the naive stage spends.
//
// Computes: step k of a transfer is one segment (block_formats.h) of the elements
// [k * stepElems, min((k + 1) * stepElems, elems)). stepElems is a multiple of 32, so every block
// but the last is whole and an MX segment cut into steps has the bytes, scale for scale, of the
// whole one; NVFP4's fp32 segment scale is per step. Stochastic rounding numbers elements from
// the transfer's start (rounding.index0 + element), so a step rounds as the whole segment would.
// Introduced in lesson 15.
//
// Memory-ordering contract: none of its own; the transfer's (sendrecv_progress.h): the encoder's
// plain stores into the slot are released by the sender's tail store, the decoder reads the slot
// only after acquiring that tail and gives it back with the head store.
#pragma once

#include <cstddef>
#include <cstdint>

#include "block_formats.h"

namespace baton {

// The element types a wire collective reads and writes (ncclFloat, ncclBfloat16, ncclHalf).
enum class WireElem : int { kFloat, kBfloat16, kHalf };

struct WireStepCodec {
  WireFormat wire = WireFormat::kMxfp8;
  WireElem srcElem = WireElem::kFloat;  // encoder: the type of src
  WireElem dstElem = WireElem::kFloat;  // decoder that stores: the type of dst
  const void* src = nullptr;            // encoder: the elements to quantize
  void* dst = nullptr;                  // decoder: elements of dstElem, or the fp32 sum when `add`;
                                        // an encoder that has one also decodes what it wrote there
                                        // (an AllGather's own block: quantized once, sent, decoded)
  bool add = false;                     // decoder: acc[i] += value (fp32), instead of dst[i] = T(value)
  size_t elems = 0;
  size_t stepElems = 32;  // a multiple of 32
  WireRounding rounding;
  float divideBy = 1.f;    // encoder of fp32 sums (srcElem kFloat): src[i] /= divideBy first (ncclAvg)
  uint64_t nonFinite = 0;  // encoder: blocks that held a NaN or an infinity
  // A local transfer (no connector): quantize src and decode the bytes into dst in place of a
  // receive; `scratch` holds one step's segment.
  uint8_t* scratch = nullptr;
};

BATON_HD size_t wireSteps(const WireStepCodec& c) { return (c.elems + c.stepElems - 1) / c.stepElems; }
// The elements of step k.
BATON_HD size_t wireStepLen(const WireStepCodec& c, size_t k) {
  const size_t begin = k * c.stepElems;
  return begin >= c.elems ? 0 : (c.elems - begin < c.stepElems ? c.elems - begin : c.stepElems);
}
// Bytes on the wire of step k and of the whole transfer.
BATON_HD size_t wireStepBytes(const WireStepCodec& c, size_t k) { return wireSegmentBytes(c.wire, wireStepLen(c, k)); }
BATON_HD size_t wireTransferBytes(const WireStepCodec& c) {
  const size_t full = c.elems / c.stepElems, rest = c.elems - full * c.stepElems;
  return full * wireSegmentBytes(c.wire, c.stepElems) + (rest ? wireSegmentBytes(c.wire, rest) : 0);
}
// The step that starts `done` bytes into the transfer (every step but the last is full).
BATON_HD size_t wireStepAt(const WireStepCodec& c, size_t done) { return done / wireSegmentBytes(c.wire, c.stepElems); }

// The largest multiple of 32 elements whose segment fits `slotBytes` (0 if not even 32 do).
BATON_HD constexpr size_t wireElemsPerSlot(WireFormat f, size_t slotBytes) {
  size_t m = (slotBytes * 8 / wireSpec(f).valueBits) / 32 * 32;
  while (m > 0 && wireSegmentBytes(f, m) > slotBytes) m -= 32;
  return m;
}

namespace detail {
template <typename F>
BATON_HD void withWireElem(WireElem e, F&& f) {
  if (e == WireElem::kFloat) f(float{});
  else if (e == WireElem::kBfloat16) f(bfloat16_t{});
  else f(half_t{});
}
}  // namespace detail

// Quantizes step k of c.src into `slot`; returns its bytes.
BATON_HD size_t wireEncodeStep(WireStepCodec& c, size_t k, uint8_t* slot) {
  const size_t begin = k * c.stepElems, len = wireStepLen(c, k);
  WireRounding r = c.rounding;
  r.index0 += begin;
  if (c.divideBy != 1.f)  // the sums are this rank's own scratch; divided once, as they go out
    for (size_t i = 0; i < len; ++i) static_cast<float*>(const_cast<void*>(c.src))[begin + i] /= c.divideBy;
  detail::withWireElem(c.srcElem, [&](auto tag) {
    using T = decltype(tag);
    c.nonFinite += quantizeSegment(c.wire, static_cast<const T*>(c.src) + begin, len, slot, r);
  });
  return wireSegmentBytes(c.wire, len);
}

// Decodes step k from `slot` into c.dst (or adds it to the fp32 sum).
BATON_HD void wireDecodeStep(const WireStepCodec& c, size_t k, const uint8_t* slot) {
  const size_t begin = k * c.stepElems, len = wireStepLen(c, k);
  if (c.add) return dequantizeAdd(c.wire, slot, len, static_cast<float*>(c.dst) + begin);
  detail::withWireElem(c.dstElem, [&](auto tag) {
    using T = decltype(tag);
    dequantizeSegment(c.wire, slot, len, static_cast<T*>(c.dst) + begin);
  });
}

// A local step: step k of c.src quantized into c.scratch and decoded from it, where a receive would
// have decoded a peer's segment (this rank's own block, rounded as its peers see it).
BATON_HD void wireLocalStep(WireStepCodec& c, size_t k) {
  wireEncodeStep(c, k, c.scratch);
  wireDecodeStep(c, k, c.scratch);
}

}  // namespace baton

// The wire-format collectives' cases (include/baton/lowp.h, lesson 15), shared by the threads suite
// (wire_format_test.cc) and the process checks (tests/process/coll_check.cc): each rank's input as
// a function of (rank, index), and the result every rank must hold, computed without communication
// by the codecs of algorithms/block_formats.h: every input segment quantized and decoded, the sums
// in fp32 in rank order, rounded once to the datatype.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "baton/lowp.h"
#include "block_formats.h"
#include "collectives/data.h"

namespace bt {

enum class WireColl {
  kAllGather,
  kReduceScatter,
  kAllReduceRsag,
  kAllReduceOneShot,
  kReduceScatterRing,
  kAllReduceRing
};

inline size_t wireElemSize(ncclDataType_t t) { return t == ncclFloat ? 4 : 2; }

inline float wireLoad(ncclDataType_t t, const char* p) {
  if (t == ncclFloat) {
    float f;
    memcpy(&f, p, 4);
    return f;
  }
  uint16_t b;
  memcpy(&b, p, 2);
  return t == ncclBfloat16 ? baton::toFloat(baton::bfloat16_t{b}) : baton::toFloat(baton::half_t{b});
}

inline void wireStore(ncclDataType_t t, char* p, float v) {
  if (t == ncclFloat) return (void)memcpy(p, &v, 4);
  const uint16_t b =
      t == ncclBfloat16 ? baton::fromFloat<baton::bfloat16_t>(v).bits : baton::fromFloat<baton::half_t>(v).bits;
  memcpy(p, &b, 2);
}

// Element i of rank r's input. integers: {0, +-1, +-2, +-3, +-4, +-6} with a 6 at the start of
// every 16 (each block's scale is then 1 in MXFP8 and MXFP4, which carry them exactly); otherwise
// values of about unit size with 7 significant bits, one in 97 fifty times larger (an outlier).
inline float wireInput(int r, size_t i, bool integers) {
  const uint64_t h = hashAt(15, r, i);
  if (integers) {
    const float ints[] = {0, 1, 2, 3, 4, 6, -1, -2, -3, -4, -6};
    return i % 16 == 0 ? 6.f : ints[h % 11];
  }
  const float v = float(int(h % 255) - 127) / 64.f;
  return i % 97 == 0 ? v * 50.f : v;
}

inline std::vector<char> wireInputs(ncclDataType_t t, size_t count, int r, bool integers) {
  std::vector<char> v(count * wireElemSize(t));
  for (size_t i = 0; i < count; ++i) wireStore(t, &v[i * wireElemSize(t)], wireInput(r, i, integers));
  return v;
}

// Quantize -> dequantize of count elements at p, as floats: one segment, or (segElems > 0)
// segments of segElems elements, as the fused stage's FIFO steps cut it.
inline std::vector<float> viaWire(batonWireFormat_t w, ncclDataType_t t, const char* p, size_t count,
                                  size_t segElems = 0) {
  std::vector<float> in(count), out(count);
  if (count == 0) return out;
  for (size_t i = 0; i < count; ++i) in[i] = wireLoad(t, p + i * wireElemSize(t));
  const size_t per = segElems ? segElems : count;
  std::vector<uint8_t> seg(batonWireBytes(per, w));
  for (size_t b = 0; b < count; b += per) {
    const size_t len = std::min(per, count - b);
    baton::quantizeSegment(baton::WireFormat(w), in.data() + b, len, seg.data());
    baton::dequantizeSegment(baton::WireFormat(w), seg.data(), len, out.data() + b);
  }
  return out;
}

// What rank r holds after the collective (count: AllGather's sendcount, ReduceScatter's recvcount,
// AllReduce's count), given every rank's input.
// segElems > 0: the fused stage, whose segments are its FIFO steps of segElems elements (AllGather,
// ReduceScatter and rsag only).
inline std::vector<char> wireExpected(WireColl coll, batonWireFormat_t w, ncclDataType_t t, bool avg, int n,
                                      size_t count, int r, const std::vector<std::vector<char>>& inputs,
                                      size_t segElems = 0) {
  const size_t es = wireElemSize(t);
  std::vector<float> res;
  auto sumOf = [&](size_t begin, size_t len) {  // sum over ranks of the decoded segment [begin, begin + len)
    std::vector<float> acc(len, 0.f);
    for (int p = 0; p < n; ++p) {
      const std::vector<float> v = viaWire(w, t, &inputs[p][begin * es], len, segElems);
      for (size_t i = 0; i < len; ++i) acc[i] += v[i];
    }
    if (avg)
      for (float& a : acc) a /= float(n);
    return acc;
  };
  // The ring: chunk j's partial sum starts at rank j+1 and goes around to rank j, quantized and
  // decoded at every hop, each rank adding its own part in fp32 after the decode.
  auto ringSum = [&](int j, size_t begin, size_t len) {
    std::vector<float> acc(len);
    for (size_t i = 0; i < len; ++i) acc[i] = wireLoad(t, &inputs[(j + 1) % n][(begin + i) * es]);
    for (int k = 2; k <= n; ++k) {
      const std::vector<float> got = viaWire(w, ncclFloat, reinterpret_cast<const char*>(acc.data()), len);
      const int at = (j + k) % n;
      for (size_t i = 0; i < len; ++i) acc[i] = got[i] + wireLoad(t, &inputs[at][(begin + i) * es]);
    }
    if (avg)
      for (float& a : acc) a /= float(n);
    return acc;
  };
  if (coll == WireColl::kReduceScatterRing) {
    res = ringSum(r, size_t(r) * count, count);
  } else if (coll == WireColl::kAllReduceRing) {
    const size_t chunk = (count + n - 1) / n;
    for (int j = 0; j < n; ++j) {
      const size_t c0 = std::min(count, size_t(j) * chunk), len = std::min(chunk, count - c0);
      std::vector<float> acc = ringSum(j, c0, len);
      const std::vector<float> again = viaWire(w, ncclFloat, reinterpret_cast<const char*>(acc.data()), len);
      res.insert(res.end(), again.begin(), again.end());
    }
  } else if (coll == WireColl::kAllGather) {
    for (int p = 0; p < n; ++p) {
      const std::vector<float> v = viaWire(w, t, inputs[p].data(), count, segElems);
      res.insert(res.end(), v.begin(), v.end());
    }
  } else if (coll == WireColl::kReduceScatter) {
    res = sumOf(size_t(r) * count, count);
  } else if (coll == WireColl::kAllReduceOneShot) {
    res = sumOf(0, count);
  } else {  // rsag: each chunk's fp32 sums quantized again
    const size_t chunk = (count + n - 1) / n;
    for (size_t c0 = 0; c0 < count; c0 += chunk) {
      const size_t len = std::min(chunk, count - c0);
      std::vector<float> acc = sumOf(c0, len);
      const std::vector<float> again = viaWire(w, ncclFloat, reinterpret_cast<const char*>(acc.data()), len, segElems);
      res.insert(res.end(), again.begin(), again.end());
    }
  }
  std::vector<char> out(res.size() * es);
  for (size_t i = 0; i < res.size(); ++i) wireStore(t, &out[i * es], res[i]);
  return out;
}

// The pipelined stage's result: wireExpected on each piece of pieceBytes of data (rounded down to a
// multiple of 32 x n elements, at least that), as src/lowp/wire_pipelined.cc cuts them; one-shot
// and the ring run whole.
inline std::vector<char> wireExpectedPieces(WireColl coll, batonWireFormat_t w, ncclDataType_t t, bool avg, int n,
                                            size_t count, int r, const std::vector<std::vector<char>>& inputs,
                                            size_t pieceBytes) {
  if (coll == WireColl::kAllReduceOneShot || coll == WireColl::kReduceScatterRing || coll == WireColl::kAllReduceRing)
    return wireExpected(coll, w, t, avg, n, count, r, inputs);  // these run whole (the naive stage)
  const size_t es = wireElemSize(t), unit = 32 * size_t(n);
  const size_t per = std::max(unit, pieceBytes / es / unit * unit);
  std::vector<char> out(wireExpected(coll, w, t, avg, n, count, r, inputs).size());
  for (size_t b = 0; b < count; b += per) {
    const size_t len = std::min(per, count - b);
    std::vector<std::vector<char>> sliced(n);
    for (int p = 0; p < n; ++p) {
      if (coll == WireColl::kReduceScatter)  // every destination's part of this piece
        for (int q = 0; q < n; ++q)
          sliced[p].insert(sliced[p].end(), inputs[p].begin() + (q * count + b) * es,
                           inputs[p].begin() + (q * count + b + len) * es);
      else sliced[p].assign(inputs[p].begin() + b * es, inputs[p].begin() + (b + len) * es);
    }
    const std::vector<char> part = wireExpected(coll, w, t, avg, n, len, r, sliced);
    if (coll == WireColl::kAllGather)
      for (int p = 0; p < n; ++p)
        std::copy(part.begin() + p * len * es, part.begin() + (p + 1) * len * es, out.begin() + (p * count + b) * es);
    else std::copy(part.begin(), part.end(), out.begin() + b * es);
  }
  return out;
}

}  // namespace bt

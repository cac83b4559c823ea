// Dispatch's last step in every stage (moe_api.cc): each received row copied into recvTokens, in
// the rows' expert order. recvTokens is written once and read later by the experts, and at a
// prefill-sized batch it is far larger than the caches; written with ordinary stores every output
// line is first read for ownership, which makes the copy move half again as many bytes as it
// places. Streaming (non-temporal) stores skip that read, as the direct paths' large outputs do
// (algorithms/ring_direct.h); BATON_STREAM_STORES=0 turns both off. Below kStreamBytes of output
// the rows stay in the cache for the experts instead. (The low-latency combine's fp32 partials,
// streamed into the peers' windows the same way, were no faster: the peer reads them at once.)
//
// Memory ordering: streaming stores are weakly ordered, so the copy ends with a store fence; the
// caller's next release (the low-latency stage's closing barrier, or the call's return to a thread
// that synchronises with the readers) publishes the rows.
#include <cstdint>
#include <cstring>

#include "moe/moe_routing.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace baton {
namespace {

constexpr size_t kStreamBytes = size_t(4) << 20;

void streamCopy(char* dst, const char* src, size_t bytes) {
#if defined(__x86_64__)
  size_t i = 0;
  const size_t head = (16 - reinterpret_cast<uintptr_t>(dst) % 16) % 16;
  if (head) memcpy(dst, src, head < bytes ? head : bytes), i = head;
  for (; i + 64 <= bytes; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 48), d);
  }
  for (; i + 16 <= bytes; i += 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
  if (i < bytes) memcpy(dst + i, src + i, bytes - i);
#else
  memcpy(dst, src, bytes);
#endif
}

void storeFence() {
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

}  // namespace

void moePlaceRows(const batonMoeRouting& r, const std::vector<const char*>& data, char* recvTokens, size_t rowBytes,
                  float* recvScales, size_t nScales, bool stream) {
  const size_t nRows = r.rows.size();
  if (stream && nRows * rowBytes >= kStreamBytes) {
    for (size_t a = 0; a < nRows; ++a) {
      streamCopy(recvTokens + r.rowOf[a] * rowBytes, data[a], rowBytes);
      if (recvScales) memcpy(recvScales + r.rowOf[a] * nScales, data[a] + rowBytes, nScales * sizeof(float));
    }
    storeFence();
    return;
  }
  for (size_t a = 0; a < nRows; ++a) {
    memcpy(recvTokens + r.rowOf[a] * rowBytes, data[a], rowBytes);
    if (recvScales) memcpy(recvScales + r.rowOf[a] * nScales, data[a] + rowBytes, nScales * sizeof(float));
  }
}

}  // namespace baton

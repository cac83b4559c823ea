// Command-line numbers for the peer benchmark programs (gloo_allreduce_ring.cc,
// mpi_allreduce_sweep.cc): built alone by tools/scripts/bench-peers.sh and tools/scripts/bench-net.sh, so this
// is header-only.
#pragma once

#include <cstdlib>

// "8", "64K", "1M", "2G" (binary units, optional trailing B). False if it is not a size.
inline bool parseSize(const char* s, size_t* out) {
  char* end = nullptr;
  if (!s || *s < '0' || *s > '9') return false;
  const unsigned long long v = std::strtoull(s, &end, 10);
  int shift = 0;
  switch (*end) {
    case 'k':
    case 'K': shift = 10, ++end; break;
    case 'm':
    case 'M': shift = 20, ++end; break;
    case 'g':
    case 'G': shift = 30, ++end; break;
    default: break;
  }
  if (*end == 'B' || *end == 'b') ++end;
  if (*end || (shift && v > (~0ull >> shift))) return false;
  *out = size_t(v << shift);
  return true;
}

inline bool parseInt(const char* s, int lo, int* out) {
  char* end = nullptr;
  const long v = s ? std::strtol(s, &end, 10) : 0;
  if (!s || !*s || *end || v < lo || v > (1 << 30)) return false;
  *out = int(v);
  return true;
}

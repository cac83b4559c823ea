// The watchdog's wire format (lesson 10): every frame on the mesh is a WireHeader followed by
// nWords 64-bit words of a rank set (agreement messages) or nothing (heartbeat, goodbye).
//
// A frame is read from a byte stream that may hold half a frame (TCP delivers what it has). The
// reader is pure so the fuzz target (tests/fuzz/watchdog_msg_fuzz.cc) feeds it the same bytes a
// hostile or corrupt peer could send.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "fault/agreement.h"

namespace baton {

// And kAgreeRound, kAgreeDecide. A RAS query carries no words; its reply, a RasRankState's.
enum WireType : uint32_t { kWireHeartbeat = 10, kWireBye = 11, kWireRasQuery = 12, kWireRasReply = 13 };
constexpr uint32_t kWireMaxRasWords = 32;  // a RAS reply's words at most (src/fault/rank_state.h)

struct WireHeader {
  uint32_t type;
  uint32_t round;
  uint64_t key;
  uint32_t nWords;
  uint32_t pad;
};

enum class FrameRead { kNeedMore, kFrame, kStranger };

// Looks at the front of `in`: a whole frame (its header in *h, its length in *len), not enough
// bytes yet, or bytes no rank of a communicator whose rank sets have `nWords` words sends (the
// connection is then ended and reported as a failure). A RAS reply may carry kWireMaxRasWords.
inline FrameRead readWatchdogFrame(std::string_view in, size_t nWords, WireHeader* h, size_t* len) {
  if (in.size() < sizeof(WireHeader)) return FrameRead::kNeedMore;
  memcpy(h, in.data(), sizeof *h);
  if (h->nWords > (h->type == kWireRasReply ? kWireMaxRasWords : nWords)) return FrameRead::kStranger;
  *len = sizeof *h + (size_t)h->nWords * 8;
  return in.size() < *len ? FrameRead::kNeedMore : FrameRead::kFrame;
}

// The agreement message of a kAgreeRound / kAgreeDecide frame whose words hold a set of `nBits`
// bits; bits past nBits are cleared (no rank sets them, and a count of the set must not see them).
inline AgreeMsg agreeMsgFromFrame(const WireHeader& h, const char* frame, int nBits) {
  AgreeMsg m;
  m.type = h.type, m.round = h.round, m.key = h.key;
  m.value.words.assign(h.nWords, 0);
  memcpy(m.value.words.data(), frame + sizeof h, (size_t)h.nWords * 8);
  for (size_t w = 0; w < m.value.words.size(); ++w) {
    const int first = (int)w * 64;
    if (first >= nBits) m.value.words[w] = 0;
    else if (nBits - first < 64) m.value.words[w] &= (1ull << (nBits - first)) - 1;
  }
  return m;
}

}  // namespace baton

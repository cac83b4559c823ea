// Fuzz target: the watchdog's byte streams (src/fault/watchdog_wire.h) and the agreement they feed
// (src/fault/agreement.h), as one rank of an n-rank communicator sees them.
//
// Input: n (2..8) and this rank, then events: bytes arriving from a peer (the frames may be cut
// anywhere, repeated, out of order or forged), a peer found dead, a peer leaving, this rank
// joining an agreement. Checked: a frame reader never reads past what arrived; the agreement
// only sends to other ranks, and a value once decided never changes.
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "fault/agreement.h"
#include "fault/watchdog.h"
#include "fault/watchdog_wire.h"
#include "fuzz_input.h"

using namespace baton;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  baton_fuzz::Input in(data, size);
  const int n = in.range(2, 8), me = in.range(0, n - 1);
  const size_t nWords = ((size_t)n + 1 + 63) / 64;
  bool badSend = false;
  Agreement agreement(me, n, [&](int peer, const AgreeMsg& m) {
    if (peer < 0 || peer >= n || peer == me || m.value.words.size() != nWords) badSend = true;
  });
  std::vector<std::string> inbuf(n);
  std::map<uint64_t, RankSet> decided;
  const uint64_t keys[] = {kAgreeFailureKind + 1, kAgreeFailureKind + 2, kAgreeVoteKind + 1};
  for (int event = 0; event < 256 && in.left() > 0; ++event) {
    const int kind = in.u8() % 4, peer = in.range(0, n - 1);
    if (kind == 0) {  // bytes from `peer`
      if (peer == me) continue;
      inbuf[peer].append(in.bytes(in.u8()));
      size_t off = 0;
      while (true) {
        WireHeader h;
        size_t len = 0;
        const std::string_view rest = std::string_view(inbuf[peer]).substr(off);
        const FrameRead got = readWatchdogFrame(rest, nWords, &h, &len);
        if (got == FrameRead::kNeedMore) break;
        if (got == FrameRead::kStranger) {
          inbuf[peer].clear();
          off = 0;
          break;
        }
        if (len > rest.size()) abort();
        if ((h.type == kAgreeRound || h.type == kAgreeDecide) && h.nWords == nWords)
          agreement.onMessage(peer, agreeMsgFromFrame(h, rest.data(), n + 1));
        off += len;
      }
      inbuf[peer].erase(0, off);
    } else if (kind == 1) {
      agreement.onSuspect(peer);
    } else if (kind == 2) {
      if (peer != me) agreement.onGone(peer);
    } else {
      RankSet proposal(n + 1);
      if (in.u8() & 1) proposal.add(in.range(0, n));
      agreement.join(keys[in.u8() % 3], proposal);
    }
    for (uint64_t key : keys) {
      RankSet v;
      if (!agreement.decided(key, &v)) continue;
      auto [it, fresh] = decided.emplace(key, v);
      if (!fresh && !(it->second == v)) abort();  // a decision is final
    }
    if (badSend) abort();
  }
  return 0;
}

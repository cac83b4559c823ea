// A cache line's round trip between a host's processes (cache_distance.h).
#include "topo/cache_distance.h"

#include <unistd.h>

#include <sys/mman.h>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "exec_model.h"
#include "misc/debug.h"
#include "misc/param.h"
#include "shm/shm_segment.h"

namespace baton {
namespace {

constexpr int kRounds = 2000;                 // 0.1-1 ms per peer on the machines measured
constexpr int kBatches = 20;                  // timed separately: the median batch is the answer
constexpr uint64_t kReadyNs = 2'000'000'000;  // for a peer to reach the probe (init may be slow under load)
constexpr uint64_t kBudgetNs = 200'000'000;   // per peer, once it is there: one that stalls longer is far
constexpr uint64_t kReady = 1ull << 62;       // the peer's first pong: listening (no round count reaches it)
constexpr int64_t kFarDefaultNs = 200;        // between the 60-120 and 370-400 ns measured
struct alignas(64) Line {
  std::atomic<uint64_t> v;
};
struct Lines {
  Line ping, pong;  // written by the leader, by the peer
};
struct Verdict {
  double roundTripNs;
  int32_t far;
  int32_t pad;  // every byte set: the struct goes through the all-gather
};

void relax() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#endif
}

// Waits until line holds want, or the deadline passes.
bool waitFor(const Line& line, uint64_t want, uint64_t deadline) {
  for (uint32_t i = 0; line.v.load(std::memory_order_acquire) != want; ++i) {
    relax();
    if ((i & 1023) == 0 && nowNs() > deadline) return false;
  }
  return true;
}

// The leader's side with one peer: the round trip in ns, as the median of kBatches batches, so a
// batch in which the peer lost its CPU for a moment (two processes on two cores share them with the
// launcher and the other threads) does not make near caches look far; false if the peer missed the
// budget.
bool pingPeer(Lines& l, double* ns) {
  // The rounds are timed only once the peer listens: a peer process still on its way to the probe
  // (a loaded machine) is not a far one.
  if (!waitFor(l.pong, kReady, nowNs() + kReadyNs)) return *ns = (double)kBudgetNs, false;
  const uint64_t deadline = nowNs() + kBudgetNs;
  double batchNs[kBatches];
  uint64_t i = 1;
  for (int b = 0; b < kBatches; ++b) {
    const uint64_t start = nowNs();
    for (int k = 0; k < kRounds / kBatches; ++k, ++i) {
      l.ping.v.store(i, std::memory_order_release);
      if (!waitFor(l.pong, i, deadline)) return *ns = (double)kBudgetNs, false;
    }
    batchNs[b] = double(nowNs() - start) / (kRounds / kBatches);
  }
  std::nth_element(batchNs, batchNs + kBatches / 2, batchNs + kBatches);
  *ns = batchNs[kBatches / 2];
  return true;
}

void answerLeader(Lines& l, uint64_t deadline) {
  l.pong.v.store(kReady, std::memory_order_release);
  for (uint64_t i = 1; i <= kRounds; ++i) {
    if (!waitFor(l.ping, i, deadline)) return;
    l.pong.v.store(i, std::memory_order_release);
  }
}

}  // namespace

ncclResult_t measureCacheDistance(int rank, const std::vector<PeerInfo>& peers, Bootstrap& bootstrap,
                                  double* roundTripNs, bool* far) {
  const int n = (int)peers.size(), me = rank;
  const PeerInfo& self = peers[me];
  // This host's processes, each by its lowest rank; the lowest of those leads.
  std::vector<int> reps;
  for (int r = 0; r < n; ++r) {
    const PeerInfo& p = peers[r];
    if (p.hostHash != self.hostHash || p.pidNs != self.pidNs) continue;
    bool first = true;
    for (int q : reps) first &= peers[q].pidHash != p.pidHash;
    if (first) reps.push_back(r);
  }
  const int leader = reps.front();
  const bool isLeader = me == leader;
  const bool isPeer = !isLeader && std::find(reps.begin(), reps.end(), me) != reps.end();
  const size_t bytes = sizeof(Lines) * (size_t)n;

  // The leader's segment, named to every rank (others leave their name empty).
  std::vector<char> names((size_t)n * 64, 0);
  Lines* lines = nullptr;
  if (isLeader && reps.size() > 1) {
    std::snprintf(&names[(size_t)me * 64], 64, "/%s%d-cache-%d-%llu", kShmPrefix, (int)getpid(), me,
                  (unsigned long long)nowNs());
    void* base = nullptr;
    if (shmCreate(&names[(size_t)me * 64], bytes, &base) == ncclSuccess) {
      lines = static_cast<Lines*>(base);
    } else {  // peers see no name and skip; the verdict keeps the default (single copies)
      BATON_INFO(kSubInit, "cache distance not measured: %s", lastError());
      names[(size_t)me * 64] = 0;
    }
  }
  const ncclResult_t named = bootstrap.allGather(names.data(), 64);
  const char* name = &names[(size_t)leader * 64];
  if (named != ncclSuccess) {
    if (lines) munmap(lines, bytes), shm_unlink(&names[(size_t)me * 64]);
    return named;
  }
  if (isPeer && name[0]) {
    void* base = nullptr;
    if (shmOpen(name, bytes, &base) == ncclSuccess) lines = static_cast<Lines*>(base);
  }
  // Who opened the segment: the leader does not wait out kReadyNs for a peer that never will.
  std::vector<char> opened((size_t)n, 0);
  opened[(size_t)me] = lines != nullptr;
  if (const ncclResult_t res = bootstrap.allGather(opened.data(), 1); res != ncclSuccess) {
    if (lines) munmap(lines, bytes);
    if (isLeader && name[0]) shm_unlink(name);
    return res;
  }

  Verdict v{0, 1, 0};  // not measured: single copies, as before the measurement existed
  if (isLeader && lines) {
    bool answered = true;
    for (int r : reps) {
      double ns = 0;
      if (r != me && !opened[(size_t)r]) answered = false;  // far: it could not open the lines
      else if (r != me) answered &= pingPeer(lines[r], &ns), v.roundTripNs = std::max(v.roundTripNs, ns);
    }
    // A peer that did not answer in time is far whatever the threshold says.
    v.far = !answered || v.roundTripNs >= (double)envInt("BATON_SINGLE_COPY_FAR_NS", kFarDefaultNs);
  } else if (isPeer && lines) {
    // The leader serves the host's processes one after another.
    answerLeader(lines[me], nowNs() + (kReadyNs + kBudgetNs) * (uint64_t)reps.size());
  }
  std::vector<Verdict> all((size_t)n);
  all[(size_t)me] = v;
  const ncclResult_t gathered = bootstrap.allGather(all.data(), sizeof(Verdict));
  if (lines) munmap(lines, bytes);
  if (isLeader && name[0]) shm_unlink(name);
  BATON_CHECK(gathered);
  *roundTripNs = all[(size_t)leader].roundTripNs;
  *far = all[(size_t)leader].far != 0;
  return ncclSuccess;
}

}  // namespace baton

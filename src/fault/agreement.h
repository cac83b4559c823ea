// Agreement (lesson 10): survivors of a failure decide the same set of failed ranks, and the
// ranks of an all-or-nothing allreduce decide the same commit-or-roll-back.
//
// NCCL leaves this step to the application. baton runs an early-deciding flooding consensus over
// the watchdog's TCP mesh (watchdog.h), which also tells it who crashed. The value is a bit set
// of nRanks + 1 bits: bit r says rank r failed, bit nRanks (kNack) says some rank's operation
// failed. Proposals merge by union.
//
//   round k: send (k, my value) to every rank not in my value; wait for every such rank's round-k
//            value (a rank found dead meanwhile joins my value and is no longer waited for).
//   decide:  when no rank was found dead during the round and every value received equals mine,
//            decide it and send DECIDE(value) to everyone; else value = union of all, next round.
//   DECIDE:  on receipt, relay it to everyone, then decide it (so a decider that dies while
//            sending its DECIDE cannot leave two survivors with different answers).
//
// Two ranks that decide in the same round decide the same value: each received the other's value
// and found it equal to its own. A rank still in a later round waits for the decider's message,
// which is the DECIDE, and adopts it. A rank that finds itself in the value was excluded by the
// others: it decides at once (its answer names itself, and the API reports it as excluded).
//
// Pure logic, no sockets and no locks: the watchdog feeds it messages and suspicions under its
// lock, and tests drive it with simulated message delivery (tests/unit/agreement_test.cc).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <utility>
#include <vector>

namespace baton {

// nBits bits in 64-bit words.
struct RankSet {
  std::vector<uint64_t> words;
  RankSet() = default;
  explicit RankSet(int nBits) : words((nBits + 63) / 64, 0) {}
  bool has(int i) const { return (words[i / 64] >> (i % 64)) & 1; }
  void add(int i) { words[i / 64] |= 1ull << (i % 64); }
  void merge(const RankSet& o) {
    for (size_t i = 0; i < words.size() && i < o.words.size(); ++i) words[i] |= o.words[i];
  }
  bool empty() const {
    for (uint64_t w : words)
      if (w) return false;
    return true;
  }
  int count() const {
    int c = 0;
    for (uint64_t w : words) c += __builtin_popcountll(w);
    return c;
  }
  bool operator==(const RankSet& o) const { return words == o.words; }
};

enum AgreeType : uint32_t { kAgreeRound = 1, kAgreeDecide = 2 };

struct AgreeMsg {
  uint32_t type = kAgreeRound;
  uint32_t round = 0;
  uint64_t key = 0;  // which agreement (watchdog.h: failure epochs, allreduce votes)
  RankSet value;
};

class Agreement {
 public:
  using SendFn = std::function<void(int peer, const AgreeMsg& msg)>;
  Agreement(int rank, int nRanks, SendFn send)
      : rank_(rank), nRanks_(nRanks), send_(std::move(send)), gone_(nRanks + 1) {}

  // This rank enters agreement `key` proposing `proposal` (which should hold every rank it
  // already knows to be dead). Joining twice is a no-op.
  void join(uint64_t key, const RankSet& proposal);
  bool joined(uint64_t key) const;
  // A message from rank `from` (kept for later if this rank has not joined yet).
  void onMessage(int from, const AgreeMsg& msg);
  // Rank `r` is dead: no undecided agreement waits for it any more, and it joins their values.
  void onSuspect(int r);
  // Rank `r` left properly (its communicator was destroyed): not waited for, not sent to, but not
  // a failure either, so it stays out of the values (a value's ranks are reports of failures).
  void onGone(int r);
  // This rank adds `bit` to its undecided value of `key` (a vote it gave up waiting for: its
  // value then can only lead to roll back, wherever the decision is made).
  void amend(uint64_t key, int bit);
  bool decided(uint64_t key, RankSet* value) const;
  // Drops the instances with keys in [from, to) (votes long decided); the caller must then drop
  // late messages for them too, or a late DECIDE would re-create one and be relayed again.
  void forgetRange(uint64_t from, uint64_t to) { inst_.erase(inst_.lower_bound(from), inst_.lower_bound(to)); }

 private:
  struct Instance {
    bool joined = false, decided = false;
    int round = 0;
    RankSet value;
    bool changed = false;                          // a local suspicion grew the value this round
    std::map<int, RankSet> got;                    // this round's values, by sender
    std::map<std::pair<int, int>, RankSet> early;  // (round, sender) of rounds not reached yet
  };
  void broadcast(const Instance& in, uint64_t key, uint32_t type);
  void decide(Instance& in, uint64_t key, const RankSet& value, bool announce);
  void advance(Instance& in, uint64_t key);  // completes rounds while every awaited value is here

  int rank_, nRanks_;
  SendFn send_;
  RankSet gone_;
  std::map<uint64_t, Instance> inst_;
};

}  // namespace baton

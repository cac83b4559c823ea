// The early-deciding flooding consensus of agreement.h.
#include "fault/agreement.h"

namespace baton {

void Agreement::broadcast(const Instance& in, uint64_t key, uint32_t type) {
  AgreeMsg m;
  m.type = type;
  m.round = (uint32_t)in.round;
  m.key = key;
  m.value = in.value;
  for (int p = 0; p < nRanks_; ++p)
    if (p != rank_ && !in.value.has(p) && !gone_.has(p)) send_(p, m);
}

void Agreement::decide(Instance& in, uint64_t key, const RankSet& value, bool announce) {
  in.value = value;
  in.decided = true;
  in.got.clear();
  in.early.clear();
  if (announce) broadcast(in, key, kAgreeDecide);
}

void Agreement::join(uint64_t key, const RankSet& proposal) {
  Instance& in = inst_[key];
  if (in.joined || in.decided) return;
  in.joined = true;
  in.round = 0;
  if (in.value.words.empty()) in.value = RankSet(nRanks_ + 1);
  in.value.merge(proposal);
  broadcast(in, key, kAgreeRound);
  advance(in, key);
}

bool Agreement::joined(uint64_t key) const {
  auto it = inst_.find(key);
  return it != inst_.end() && (it->second.joined || it->second.decided);
}

void Agreement::onMessage(int from, const AgreeMsg& msg) {
  Instance& in = inst_[msg.key];
  if (in.value.words.empty()) in.value = RankSet(nRanks_ + 1);
  if (in.decided) return;
  if (msg.type == kAgreeDecide) {
    decide(in, msg.key, msg.value, /*announce=*/true);  // relay first, then it is ours
    return;
  }
  if (!in.joined || (int)msg.round > in.round) {
    in.early[{(int)msg.round, from}] = msg.value;
    return;
  }
  if ((int)msg.round < in.round) return;  // cannot happen over FIFO links; ignore
  in.got[from] = msg.value;
  advance(in, msg.key);
}

void Agreement::onSuspect(int r) {
  for (auto& [key, in] : inst_) {
    if (in.decided || in.value.words.empty() || in.value.has(r)) continue;
    in.value.add(r);
    in.changed = true;
    if (in.joined) advance(in, key);
  }
}

void Agreement::onGone(int r) {
  gone_.add(r);
  for (auto& [key, in] : inst_) {
    if (in.decided || !in.joined) continue;
    in.changed = true;  // as a death would: what it sent may have reached only some ranks
    advance(in, key);
  }
}

void Agreement::amend(uint64_t key, int bit) {
  auto it = inst_.find(key);
  if (it == inst_.end() || it->second.decided || !it->second.joined || it->second.value.has(bit)) return;
  it->second.value.add(bit);
  it->second.changed = true;
  advance(it->second, key);
}

bool Agreement::decided(uint64_t key, RankSet* value) const {
  auto it = inst_.find(key);
  if (it == inst_.end() || !it->second.decided) return false;
  if (value) *value = it->second.value;
  return true;
}

void Agreement::advance(Instance& in, uint64_t key) {
  while (in.joined && !in.decided) {
    for (auto it = in.early.begin(); it != in.early.end();) {  // values that came before this round began
      if (it->first.first == in.round) {
        in.got[it->first.second] = it->second;
        it = in.early.erase(it);
      } else {
        ++it;
      }
    }
    if (in.value.has(rank_)) {  // the others excluded this rank: nothing to wait for
      decide(in, key, in.value, /*announce=*/false);
      return;
    }
    for (int p = 0; p < nRanks_; ++p)
      if (p != rank_ && !in.value.has(p) && !gone_.has(p) && !in.got.count(p)) return;  // still waiting
    RankSet all = in.value;
    bool same = !in.changed;
    for (auto& [p, v] : in.got) {
      if (in.value.has(p)) continue;  // found dead after it sent: only the living count
      all.merge(v);                   // a rank that left still said what it knew (a nack, say)
      if (!gone_.has(p)) same &= v == in.value;
    }
    same &= all == in.value;
    if (same) {
      decide(in, key, in.value, /*announce=*/true);
      return;
    }
    ++in.round;
    in.value = all;
    in.changed = false;
    in.got.clear();
    broadcast(in, key, kAgreeRound);
  }
}

}  // namespace baton

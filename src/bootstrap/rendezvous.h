// The bootstrap root's bookkeeping (bootstrap_root.cc): which ranks have checked in, with which
// listener address, and whether the check-ins so far are consistent.
//
// Pure, so the fuzz target (tests/fuzz/bootstrap_msg_fuzz.cc) gives it every check-in a stranger
// or a confused rank could send. A check-in is either taken, dropped (not one of ours: the root
// closes the connection and keeps serving) or fails the rendezvous for everyone (the ranks were
// started inconsistently, and each is told why).
#pragma once

#include <string>
#include <vector>

#include "bootstrap/bootstrap_wire.h"

namespace baton {

// An address a rank can be reached at: IPv4 or IPv6 with a port. Anything else came from a
// stranger or from corrupt memory, and connecting to it would fail far from the cause.
bool socketAddressUsable(const SocketAddress& a);

class Rendezvous {
 public:
  enum Verdict { kTake, kDrop, kFail };
  static constexpr int kMaxRanks = 1 << 20;

  // `len` is the length word that preceded the check-in.
  Verdict checkIn(uint32_t len, const CheckIn& ci);
  bool complete() const { return nranks_ > 0 && arrived_ == nranks_; }
  int nranks() const { return nranks_; }
  int arrived() const { return arrived_; }
  const std::vector<SocketAddress>& table() const { return table_; }
  const std::string& failure() const { return failure_; }  // set by kFail
  // The ranks that have not checked in, as "1, 5, 9" (the first 8, then "..."): what a timeout
  // names, since a rank that died before it checked in is known to nobody else.
  std::string missing() const;

 private:
  int nranks_ = 0, arrived_ = 0;      // nranks_ 0: learnt from the first check-in
  std::vector<SocketAddress> table_;  // a rank's entry is usable once it checked in (zero before)
  std::string failure_;
};

// What a rank checks in the root's answer: every address in the table usable. Returns the index
// of the first that is not, or -1.
int firstUnusableAddress(const std::vector<SocketAddress>& table);

}  // namespace baton

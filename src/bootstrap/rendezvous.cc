// The bootstrap root's bookkeeping (rendezvous.h).
#include "bootstrap/rendezvous.h"

namespace baton {

bool socketAddressUsable(const SocketAddress& a) {
  if (a.sa.sa_family == AF_INET) return a.sin.sin_port != 0;
  if (a.sa.sa_family == AF_INET6) return a.sin6.sin6_port != 0;
  return false;
}

Rendezvous::Verdict Rendezvous::checkIn(uint32_t len, const CheckIn& ci) {
  if (len != sizeof(CheckIn) || !socketAddressUsable(ci.listen)) return kDrop;
  if (nranks_ == 0) {
    if (ci.nranks < 1 || ci.nranks > kMaxRanks) return kDrop;
    nranks_ = ci.nranks;
    table_.assign(nranks_, SocketAddress{});
  }
  if (ci.nranks != nranks_) {
    failure_ = "mismatched nranks: rank " + std::to_string(ci.rank) +
               " called with nranks=" + std::to_string(ci.nranks) +
               " but an earlier rank with nranks=" + std::to_string(nranks_);
    return kFail;
  }
  if (ci.rank < 0 || ci.rank >= nranks_) return kDrop;
  if (socketAddressUsable(table_[ci.rank])) {
    failure_ = "duplicate rank " + std::to_string(ci.rank) + ": two processes used the same rank with one unique id";
    return kFail;
  }
  table_[ci.rank] = ci.listen;
  ++arrived_;
  return kTake;
}

int firstUnusableAddress(const std::vector<SocketAddress>& table) {
  for (size_t i = 0; i < table.size(); ++i)
    if (!socketAddressUsable(table[i])) return (int)i;
  return -1;
}

std::string Rendezvous::missing() const {
  std::string out;
  int listed = 0;
  for (int r = 0; r < nranks_; ++r) {
    if (socketAddressUsable(table_[r])) continue;
    if (listed++ == 8) return out + ", ...";
    out += (out.empty() ? "" : ", ") + std::to_string(r);
  }
  return out;
}

}  // namespace baton

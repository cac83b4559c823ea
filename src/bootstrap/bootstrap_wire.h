// The bootstrap's wire messages (after the 12-byte handshake of socket.h).
#pragma once

#include <cstdint>

#include "misc/socket.h"

namespace baton {

constexpr uint32_t kMaxBootstrapMessage = 64u << 20;  // larger length fields are a stranger's bytes

// rank -> root, preceded by its uint32 length (must equal sizeof(CheckIn)).
struct CheckIn {
  int32_t rank;
  int32_t nranks;
  SocketAddress listen;
};

// root -> rank: status, then (if 0) nranks listener addresses.
struct CheckInReply {
  int32_t status;  // ncclResult_t
  char message[252];
};

// rank -> rank, before the payload.
struct PeerHeader {
  int32_t srcRank;
  uint32_t pad;
  uint64_t tag;
  uint64_t size;
};

// The tag of a liveness probe: a rank that waits long for a peer's message connects to the
// peer's listener now and then; a refused connection says the peer is gone (bootstrap.cc). No
// collective tag ((sequence << 20) + step) reaches it.
constexpr uint64_t kBootstrapProbeTag = ~0ull;

// A header a rank of an nranks communicator could have sent (anything else is dropped unread).
inline bool peerHeaderValid(const PeerHeader& h, int nranks) {
  return h.srcRank >= 0 && h.srcRank < nranks && h.size <= kMaxBootstrapMessage;
}

}  // namespace baton

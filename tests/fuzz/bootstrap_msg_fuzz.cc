// Fuzz target: the bootstrap's messages as the root and as a rank receive them, and the unique id
// a caller passes in (src/bootstrap/).
//
// Input: a selector byte, then raw message bytes:
//   0  the root: a sequence of check-ins (a 4-byte length word, then a CheckIn), from strangers,
//      stale ranks or ranks started with different nranks
//   1  a rank: the root's reply (status, message) and the table of listener addresses
//   2  a rank: the header of another rank's message
//   3  ncclCommInitRank's unique id (128 bytes, perhaps copied wrong)
// The root takes, drops or fails each check-in and never stores an address nobody can connect to;
// a rank accepts only tables whose every address is usable and headers of its own communicator.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/bootstrap_wire.h"
#include "bootstrap/rendezvous.h"
#include "fuzz_input.h"

using namespace baton;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  baton_fuzz::Input in(data, size);
  switch (in.u8() % 4) {
    case 0: {
      Rendezvous rv;
      for (int i = 0; i < 64 && in.left() > 0; ++i) {
        uint32_t len;
        CheckIn ci;
        in.fill(&len);
        in.fill(&ci);
        const Rendezvous::Verdict v = rv.checkIn(len, ci);
        if (v == Rendezvous::kFail) {
          if (rv.failure().empty()) abort();  // the ranks are told why
          break;
        }
        if (v == Rendezvous::kTake && (!socketAddressUsable(ci.listen) || ci.rank < 0 || ci.rank >= rv.nranks()))
          abort();
        if (rv.complete()) {
          if (firstUnusableAddress(rv.table()) >= 0 || (int)rv.table().size() != rv.nranks()) abort();
          break;
        }
      }
      break;
    }
    case 1: {
      CheckInReply reply;
      in.fill(&reply);
      reply.message[sizeof reply.message - 1] = 0;  // as the rank does before printing it
      if (strlen(reply.message) >= sizeof reply.message) abort();
      const int nranks = in.range(1, 16);
      std::vector<SocketAddress> table(nranks);
      for (SocketAddress& a : table) in.fill(&a);
      (void)firstUnusableAddress(table);
      for (const SocketAddress& a : table)
        if (socketAddressUsable(a)) (void)addressToString(a);
      break;
    }
    case 2: {
      PeerHeader h;
      in.fill(&h);
      const int nranks = in.range(1, 64);
      (void)peerHeaderValid(h, nranks);
      break;
    }
    case 3: {
      ncclUniqueId id;
      in.fill(&id);
      BootstrapHandle h;
      if (baton_fuzz::rejectsWithMessage([&] { return bootstrapParseId(&id, &h); }) == ncclSuccess &&
          !socketAddressUsable(h.addr))
        abort();  // an accepted id names an address a rank can dial
      break;
    }
  }
  return 0;
}

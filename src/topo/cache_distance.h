// How far apart the caches of one host's processes are, measured at init (lesson 09): a cache
// line bounced between the host's lowest-ranked process and each of its other processes. It
// decides whether large AllReduces between processes take single copies by default.
//
// Why it decides: on a VM whose virtual CPUs the hypervisor places sometimes on cores that share a
// last-level cache and sometimes on cores that do not, the FIFO (every byte written into a cache
// line that the peer then pulls across) ran 1.6-2x faster than single copies (the kernel copying
// the peer's pages) in the first placement and 1.1-1.3x slower in the second, and a cache line's
// round trip told the two apart: 60-120 ns against 370-400 ns (docs/perf.md). NCCL does the same
// kind of thing with its topology (paths through a CPU's interconnect cost more); a VM hides the
// topology, so baton measures.
//
// Memory ordering: each side publishes its round count with a release store and reads the other's
// with acquire loads; nothing else is shared.
#pragma once

#include <vector>

#include "bootstrap/bootstrap.h"
#include "nccl.h"
#include "transport.h"

namespace baton {

// Sets *roundTripNs (the host's slowest round trip from its lowest-ranked process to another local
// process; a peer that did not answer within the time budget counts as far) and *far (round trip
// >= BATON_SINGLE_COPY_FAR_NS, default 200), alike on every rank of a host; both untouched on
// failure. `rank` is this rank, `peers` every rank's (the communicator's peer table), `bootstrap`
// its rendezvous. Collective over those ranks; every rank must call it, or none.
ncclResult_t measureCacheDistance(int rank, const std::vector<PeerInfo>& peers, Bootstrap& bootstrap,
                                  double* roundTripNs, bool* far);

}  // namespace baton

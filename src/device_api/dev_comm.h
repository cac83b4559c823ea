// The host side of the device-side API (include/baton/device.h, lesson 11): the work behind its
// entry points (src/api/device_api.cc checks their arguments first), and what the library needs
// beyond the public calls.
#pragma once

#include <cstddef>

#include "baton/device.h"
#include "nccl.h"

struct ncclComm;

namespace baton {

// The most signals and barriers a device communicator may ask for (batonDevCommRequirements).
constexpr int kDevMaxSignals = 1 << 16, kDevMaxBarriers = 1 << 10;

// batonDevCommCreate on a ready communicator outside a group, with requirements in range: this
// rank's pad, registered as a symmetric window (collective), the LSA team and, with r.netPuts and
// ranks on other hosts, the puts through the proxies.
ncclResult_t devCommCreate(ncclComm* comm, const batonDevCommRequirements& r, batonDevComm* devComm);
// batonDevCommDestroy of a created device communicator of live `comm` (collective).
ncclResult_t devCommDestroy(ncclComm* comm, batonDevComm* devComm);
// batonDevWindowGet with devComm created and win, out not NULL: the window's LSA bases, or why not.
ncclResult_t devWindowGet(const batonDevComm* devComm, ncclWindow_t win, batonDevWindow* out);
// batonDevPutSignalHost with its arguments checked: a copy and a signal to a peer of this host, or a
// put through the proxies to one on another host.
ncclResult_t devPutSignalHost(const batonDevComm* devComm, const batonDevWindow* win, int peer, size_t offset,
                              const void* src, size_t bytes, int signal);

// Frees this rank's pad without the collective handshake of batonDevCommDestroy, for a device
// communicator baton owns and releases while freeing its communicator (whose window table is
// already cleared, and whose peers no longer signal into it).
void devCommReleaseLocal(batonDevComm* devComm);

}  // namespace baton

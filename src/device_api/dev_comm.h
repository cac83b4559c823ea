// baton's own uses of the device-side API (include/baton/device.h): what the library needs beyond
// the public calls.
#pragma once

#include "baton/device.h"

namespace baton {

// Frees this rank's pad without the collective handshake of batonDevCommDestroy, for a device
// communicator baton owns and releases while freeing its communicator (whose window table is
// already cleared, and whose peers no longer signal into it).
void devCommReleaseLocal(batonDevComm* devComm);

}  // namespace baton

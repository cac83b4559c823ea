// The AlltoAll algorithm choice (alltoall_choice.h).
#include "alltoall/alltoall_choice.h"

#include <unistd.h>

#include "alltoall.h"
#include "misc/debug.h"
#include "register/window.h"

namespace baton {

AlltoAllWindowFit alltoallWindowFit(ncclComm* comm, const void* recvbuff, size_t bytes) {
  const WindowTable& w = *comm->windows;
  if (w.empty() || !comm->tun.symmetric || comm->nNodes != 1 || comm->nRanks > kMaxSymRanks ||
      w.pads.size() != (size_t)comm->nRanks || !w.anySymmetric())
    return kWindowNone;
  return !recvbuff || w.findSymmetric(recvbuff, bytes) ? kWindowInside : kWindowOutside;
}

size_t alltoallBruckBytes(const ncclComm* comm, const char** source) {
  const char* unused;
  if (!source) source = &unused;
  if (comm->tun.alltoallBruckBytes != kAlltoAllBruckUnset)
    return *source = "BATON_ALLTOALL_BRUCK_BYTES", comm->tun.alltoallBruckBytes;
  if (const AlltoAllCalibration* c = alltoallCalibrationFor(comm->tun.model, comm->nRanks))
    return *source = comm->tun.model.source, c->bruckBytes;
  return *source = "built-in", builtInBruckBytes(comm->nRanks);
}

size_t builtInBruckBytes(int nRanks) {
  if (nRanks < 3) return 0;
  int rounds = 0;
  while ((size_t(1) << rounds) < (size_t)nRanks) ++rounds;
  const double balance = double(size_t(128) << 10) * (nRanks - 1 - rounds) / rounds;  // 64 KiB at 4 ranks
  if (balance <= 0) return 0;
  size_t bytes = 1;
  while ((double)bytes < balance) bytes <<= 1;
  return bytes;
}

int chooseAlltoAll(const ncclComm* comm, size_t blockBytes, bool sizeAgreed, AlltoAllWindowFit fit, const char** why) {
  const char* unused;
  if (!why) why = &unused;
  if (comm->tun.alltoallAlgo == kAlltoAllWindow && fit == kWindowNone)
    return *why =
               "window forced by BATON_ALLTOALL_ALGO, but the communicator has no symmetric window on one host: "
               "direct",
           kAlltoAllDirect;
  if (comm->tun.alltoallAlgo != kAlltoAllAuto) return *why = "forced by BATON_ALLTOALL_ALGO", comm->tun.alltoallAlgo;
  if (fit == kWindowInside)
    return *why = "recvbuff in a symmetric window: one store per byte, no FIFO", kAlltoAllWindow;
  // On one host direct measured fastest or level at every size (its n-1 transfers overlap); across
  // two hosts Bruck took 0.4-0.97 of direct's time up to 64 KiB for 8 ranks, was faster at 256 KiB
  // in 6 runs of 10, and direct won from 1 MiB; with 4 ranks the two traded places from run to run
  // up to 64 KiB (docs/perf.md).
  if (!sizeAgreed) return *why = "sizes differ per rank (AlltoAllv): the ranks could not choose alike", kAlltoAllDirect;
  if (comm->nNodes == 1)
    return *why = "one host: direct's n-1 transfers overlap, fastest or level measured", kAlltoAllDirect;
  if (comm->nRanks <= 2) return *why = "2 ranks: one exchange whichever the schedule", kAlltoAllDirect;
  if (const size_t bruck = alltoallBruckBytes(comm); bruck > 0 && blockBytes * comm->nRanks <= bruck)
    return *why = "across hosts, buffer <= the Bruck threshold: log2 n NET messages instead of n-1", kAlltoAllBruck;
  return *why = "across hosts, buffer > the Bruck threshold: Bruck's extra copies cost more", kAlltoAllDirect;
}

}  // namespace baton

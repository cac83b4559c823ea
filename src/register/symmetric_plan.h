// Which of NCCL's symmetric kernels (lesson 09) takes a collective whose buffers both lie in
// NCCL_WIN_COLL_SYMMETRIC windows that every rank reaches: the one decision the CPU's planner
// (src/enqueue.cc) and the CUDA backend's launch (src/gpu/gpu_launch.cc) share.
//
// AllGather takes the store kernel [ST], ReduceScatter the load kernel [LD], AllReduce one-shot
// [AGxLD] up to BATON_SYM_ONESHOT_BYTES and two-shot [RSxLD_AGxST] above it where
// BATON_SYM_TWOSHOT allows: by default on a GPU (peers' memory is loaded and stored over NVLink
// or PCIe, as NCCL's kernels do) and not on a CPU, where the direct ring streams its stores and is
// faster (lesson 09).
#pragma once

#include <cstddef>
#include <cstdint>

#include "coll_args.h"
#include "task.h"

struct ncclComm;
struct ncclWindow_vidmem;

namespace baton {

struct SymPad;

// Whether this communicator may run symmetric kernels at all: windows registered, BATON_SYMMETRIC
// on, 2 to kMaxSymRanks ranks, one host (the pads are shared memory). The collective planner and
// the GPU's AlltoAll by stores ask the same.
bool symmetricEligible(const ncclComm* comm);

// Whether two-shot may take the AllReduces above the one-shot size: BATON_SYM_TWOSHOT's `setting`
// (1 yes, 0 no, below 0 the default: on a GPU only).
bool symTwoShotAllowed(int setting, bool device);

// The symmetric kernel for `func` at `totalBytes` (collBytes), or false when none takes it.
bool symmetricAlgo(CollFunc func, size_t totalBytes, size_t oneShotBytes, bool twoShot, CollAlgo* algo);

struct SymmetricPlan {
  CollAlgo algo = kAlgoRing;
  const ncclWindow_vidmem* send = nullptr;  // the windows the buffers lie in
  const ncclWindow_vidmem* recv = nullptr;
  // Their bases at every rank as this process reaches them, by rank (window.h's peerBase).
  char* const* sendPeers = nullptr;
  char* const* recvPeers = nullptr;
  // This rank's buffers in those windows: every rank's alike (NCCL_WIN_COLL_SYMMETRIC), except the
  // in-place AllGather's input and ReduceScatter's output, which lie at rank x block; the kernels
  // reach those through this rank's own pointer, never a peer's.
  size_t sendOffset = 0, recvOffset = 0;
};

// The plan for `t` (of `shape`, task.h) among this communicator's windows of device memory
// (`device`, for the GPU's kernels) or of host memory; false when no symmetric kernel takes it.
bool planSymmetricWindows(const ncclComm* comm, const Task& t, const CollShape& shape, bool device, SymmetricPlan* out);

// Every rank's pad as this process reaches it, by rank (CollArgs::sym.pads): where the symmetric
// kernels and the AlltoAll by stores meet. Valid once a window is registered.
SymPad* const* symmetricPads(ncclComm* comm);
// The next barrier epoch on `channel`: the planner numbers its symmetric operations, and the
// AlltoAlls by stores on channel 0, alike on every rank (window.h's WindowTable::epochs).
uint64_t nextSymmetricEpoch(ncclComm* comm, int channel);

}  // namespace baton

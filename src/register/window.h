// ncclCommWindowRegister / ncclCommWindowDeregister: windows, each rank's view of every rank's
// buffer (NCCL's "LSA" pointers), and the pads the symmetric collectives synchronise in (lesson 09).
//
// Registering a window is collective: every rank says what it registers (address, size, flags,
// the ncclMemAlloc allocation) in one all-gather, so a mismatch fails on every rank with the same
// message. Then each rank reaches each peer's buffer: the same pointer for a thread of this process,
// a mapping of the peer's allocation for another process of this host (peer_mappings.h), none
// across hosts. A window is also a local registration, as in NCCL. On a GPU communicator a window
// on ncclMemAlloc's device memory maps every peer's window into this rank's device (cuMem import).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "nccl.h"

struct ncclComm;
namespace baton {
struct SymPad;
}

struct ncclWindow_vidmem {
  ncclComm* comm = nullptr;
  char* base = nullptr;
  size_t size = 0;
  int flags = 0;
  std::vector<char*> peerBase;  // by rank: where that rank's window is in this process (nullptr: unreachable)
  bool allReachable = false;    // every rank's window has a pointer here
  void* regHandle = nullptr;    // the local registration the window implies
  uint64_t serial = 0;          // the communicator's n-th window (the same n on every rank: registration is collective)
  // Device memory (ncclMemAlloc's cuMem on a GPU communicator): peerBase holds device pointers,
  // for kernels only, so the CPU's symmetric, AlltoAll and fused paths never take this window.
  bool device = false;
  void* peerBaseDev = nullptr;  // device windows: peerBase in device memory, for the symmetric kernel
};

namespace baton {

class WindowTable {
 public:
  ~WindowTable() { clear(); }
  // The window holding [p, p + bytes) with NCCL_WIN_COLL_SYMMETRIC, reachable from every rank, or nullptr.
  const ncclWindow_vidmem* findSymmetric(const void* p, size_t bytes) const;
  // The first window with NCCL_WIN_COLL_SYMMETRIC reachable from every rank, or nullptr.
  const ncclWindow_vidmem* anySymmetric() const;
  // As findSymmetric, among the windows of device memory whose peers' bases and pads the device
  // reaches (gpu_launch.cc's symmetric kernel), or nullptr.
  const ncclWindow_vidmem* findSymmetricDevice(const void* p, size_t bytes) const;
  // The live window whose serial is `serial`: its base and size here. False: none.
  bool findSerial(uint64_t serial, char** base, size_t* size) const;
  void clear();
  bool empty() const { return count_.load(std::memory_order_relaxed) == 0; }  // no lock: the planner's fast path

  // Every rank's pad (nullptr until the first window), and the planner's epochs per channel.
  std::vector<SymPad*> pads;
  std::vector<uint64_t> epochs;
  // A GPU communicator's pads for its kernels: every rank's in device memory as this rank's device
  // reaches it, a table in device memory (nullptr until a window of device memory found them all).
  // The kernels count their epochs in their own pad (SymPad::kernelEpochs).
  void* devPadsDev = nullptr;

 private:
  friend ncclResult_t windowRegister(ncclComm*, void*, size_t, ncclWindow_vidmem**, int);
  friend ncclResult_t windowDeregister(ncclComm*, ncclWindow_vidmem*);
  friend struct WindowRegisterSteps;  // window.cc: windowRegister's steps that touch this rank's pads
  // The symmetric window holding [p, p + bytes), of device memory or of host memory (caller holds mu_).
  const ncclWindow_vidmem* findLocked(const void* p, size_t bytes, bool device) const;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<ncclWindow_vidmem>> wins_;
  SymPad* myPad_ = nullptr;
  SymPad* myDevPad_ = nullptr;
  // This process's ranks of the communicator, which free their pads together (pad_group.h): the
  // first one's pad allocation id names them (0: none yet), and how many they are.
  uint64_t padGroup_ = 0;
  int padGroupSize_ = 1;
  int cudaDev_ = -1;  // where devPadsDev and the windows' peerBaseDev lie
  // Deregistered windows' peerBaseDev, freed in clear(): cudaFree waits for the whole device, where
  // another thread rank's kernel may wait for this rank's next call.
  std::vector<void*> retired_;
  uint64_t lastSerial_ = 0;
  std::atomic<size_t> count_{0};
};

ncclResult_t windowRegister(ncclComm* comm, void* buff, size_t size, ncclWindow_vidmem** win, int flags);
ncclResult_t windowDeregister(ncclComm* comm, ncclWindow_vidmem* win);

}  // namespace baton

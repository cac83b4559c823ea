// ncclMemAlloc's memory on the CPU backend: page-aligned shared mappings that other processes of
// this host can map too (lesson 09, docs/lessons/09-buffer-registration.md).
//
// Each allocation is a memfd mapped MAP_SHARED. Its descriptor is what a peer process needs to map
// the same pages (ipc_socket.h passes it with SCM_RIGHTS), the CPU's counterpart of the cuMem
// handle NCCL exports for its ncclMemAlloc memory. The table below knows which pointer belongs to
// which allocation, so a registration can say whether peers can map a buffer and ncclMemFree can
// refuse what it does not own.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl.h"

namespace baton {

struct MemAllocation {
  uint64_t id = 0;  // unique in this process, never reused (0: none)
  char* base = nullptr;
  size_t size = 0;  // mapped bytes (the request rounded up to pages)
  int fd = -1;
  int device = -1;  // the CUDA device of cuMem memory (fd is its exported handle); -1: host memory
};

// ncclMemAlloc: device memory where a CUDA device is current (as NCCL's: cuMem memory exported as a
// descriptor, so peers import it; cudaMalloc's where the driver cannot export), else memAllocHost's.
ncclResult_t memAlloc(void** ptr, size_t size);
// memAlloc's cuMem memory on CUDA device `dev` (whatever device is current), or an error: what a
// GPU communicator's own windows (its symmetric pads) need.
ncclResult_t memAllocExportable(int dev, void** ptr, size_t size);
// Shared host memory that peer processes can map, whatever device is current: what baton's own
// windows (the device API's pads, the fused calls' staging) need, since the CPU writes them.
ncclResult_t memAllocHost(void** ptr, size_t size);
ncclResult_t memFree(void* ptr);
// The allocation that holds all of [p, p + bytes), if one does.
bool memFind(const void* p, size_t bytes, MemAllocation* out);
// By id; out->fd is a duplicate of the allocation's descriptor, which the caller closes.
bool memFindById(uint64_t id, MemAllocation* out);
// Registrations (ncclCommRegister, windows) of an allocation: ncclMemFree refuses while any is live.
void memCountRegistration(const void* p, int delta);

}  // namespace baton

// Passing ncclMemAlloc memory to peer processes of this host (lesson 09).
//
// A process that allocates with ncclMemAlloc answers on an abstract Unix socket named after its
// pid ("@baton-ipc-<pid>"): asked for allocation `id`, it replies with the allocation's base and
// size and its memfd, passed with SCM_RIGHTS. The asker maps the descriptor and from then on reads
// and writes the owner's buffer directly. This is the CPU's version of what NCCL does with cuMem
// handles (exported as file descriptors and passed over a Unix socket by its proxy), and for device
// memory from ncclMemAlloc it is that: the descriptor is the cuMem handle, which the asker imports
// into its own device's address space. Only a process of the same user is answered (SO_PEERCRED).
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl.h"

namespace baton {

// Starts this process's answering thread once (idempotent, thread-safe).
ncclResult_t ipcServerStart();

// Asks process `pid` for its allocation `id`: on success *fd is a descriptor of the same memory
// (the caller closes it), *ownerBase and *size where the owner has it mapped, *device its CUDA
// device for cuMem memory (-1: a memfd of host memory). Waits at most 10 s for the answer, less
// when `abortFlag` is raised or the owner exits (a stopped owner never answers).
ncclResult_t ipcRequestAllocation(int pid, uint64_t id, const volatile int* abortFlag, int* fd, uint64_t* ownerBase,
                                  uint64_t* size, int* device);

}  // namespace baton

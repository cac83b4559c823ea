// The CUDA backend as libnccl.so.2 sees it: the plugin (libbaton-cuda.so) opened at run time, once.
//
// In the core, not beside the GPU communicator (src/gpu/): init, the entry points' checks and the
// registration subsystem (ncclMemAlloc's cuMem memory, peers' imports, windows' device tables) ask
// it whether a device is current or a pointer is device memory, and ncclMemAlloc may come before
// any communicator exists, so no GPU communicator could hand register/ these calls in time. It needs
// nothing above the plugin's table (src/cuda/plugin_table.h), so every layer above the core reaches
// it by a downward include.
#pragma once

#include <cstddef>

#include "cuda/plugin_table.h"
#include "nccl.h"

namespace baton {

// The plugin's table when it is present and this machine has a CUDA device, else nullptr (the CPU
// backend only). Opens it on first use; BATON_CUDA=0 keeps it closed.
const CudaBackend* cudaBackend();
// Why cudaBackend() is nullptr ("libbaton-cuda.so not found beside ...", "no CUDA device: ..."), or
// what it found.
const char* cudaBackendStatus();
// Memory a CUDA device reaches by this pointer (false without a backend: every buffer is host memory).
bool isDeviceMemory(const void* p);
// The device current on this thread, or -1 (no backend or no device); `desc` names it.
int currentCudaDevice(char* desc, size_t descBytes);
// For calls the CUDA backend does not run (the fused and MoE calls): device memory is
// ncclInvalidUsage naming the argument.
ncclResult_t checkHostMemory(const void* p, const char* fn, const char* what);
// The backends this process runs, for the version banner (misc/debug.h's showVersion):
// "CPU and CUDA backends" or "CPU backend". Opens the plugin.
const char* backendsInUse();

}  // namespace baton

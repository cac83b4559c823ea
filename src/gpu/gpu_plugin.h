// The CUDA backend as libnccl.so.2 sees it: the plugin (libbaton-cuda.so) opened at run time, once.
#pragma once

#include "cuda/plugin_table.h"

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

}  // namespace baton

// What the plugin's call files share (runtime.cu, vmm.cu): the failure a call
// records for lastError(), and the device a call acts on.
//
// Computes nothing on the device. Memory-ordering contract: none here.
#pragma once

#include <cuda_runtime.h>

namespace baton {

// Records "<what>: CUDA's message (its name)" as this thread's last error and clears CUDA's; returns
// `e` as an int.
int fail(cudaError_t e, const char* fmt, ...);

// Makes `dev` current for one call's lifetime and puts the caller's device back, as NCCL does, so
// a thread that drives ranks on several devices keeps its own current device.
class DeviceScope {
 public:
  explicit DeviceScope(int dev) {
    if (cudaGetDevice(&saved_) != cudaSuccess) saved_ = -1;
    if (saved_ != dev) err_ = cudaSetDevice(dev);
  }
  ~DeviceScope() {
    if (saved_ >= 0) cudaSetDevice(saved_);
  }
  cudaError_t error() const { return err_; }

 private:
  int saved_ = -1;
  cudaError_t err_ = cudaSuccess;
};

#define SCOPED(dev, what)  \
  DeviceScope scope_(dev); \
  if (scope_.error() != cudaSuccess) return fail(scope_.error(), "%s: cudaSetDevice(%d)", what, dev)

}  // namespace baton

// Kernel instances for float and double.
#include "coll_kernels.cuh"
#include "nccl.h"

namespace baton {
GpuKernelFn gpuKernelsFloat(int dtype, int opKind) {
  switch (dtype) {
    case ncclFloat32: return gpuReduceKernelFor<float>(opKind);
    case ncclFloat64: return gpuReduceKernelFor<double>(opKind);
    default: return nullptr;
  }
}
}  // namespace baton

// Kernel instances for the 16- and 8-bit floating types (computed in fp32, as the CPU kernels do).
#include "coll_kernels.cuh"
#include "nccl.h"

namespace baton {
GpuKernelFn gpuKernelsLowp(int dtype, int opKind) {
  switch (dtype) {
    case ncclFloat16: return gpuReduceKernelFor<half_t>(opKind);
    case ncclBfloat16: return gpuReduceKernelFor<bfloat16_t>(opKind);
    case ncclFloat8e4m3: return gpuReduceKernelFor<fp8e4m3_t>(opKind);
    case ncclFloat8e5m2: return gpuReduceKernelFor<fp8e5m2_t>(opKind);
    default: return nullptr;
  }
}
}  // namespace baton

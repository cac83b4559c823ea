// Kernel instances for the integer types (compiled apart so make -j builds them side by side).
#include "coll_kernels.cuh"
#include "nccl.h"

namespace baton {
GpuKernelFn gpuKernelsInt(int dtype, int opKind) {
  switch (dtype) {
    case ncclInt8: return gpuReduceKernelFor<int8_t>(opKind);
    case ncclUint8: return gpuReduceKernelFor<uint8_t>(opKind);
    case ncclInt32: return gpuReduceKernelFor<int32_t>(opKind);
    case ncclUint32: return gpuReduceKernelFor<uint32_t>(opKind);
    case ncclInt64: return gpuReduceKernelFor<int64_t>(opKind);
    case ncclUint64: return gpuReduceKernelFor<uint64_t>(opKind);
    default: return nullptr;
  }
}
}  // namespace baton

// Run-time choice of the kernel instance for (collective, datatype, operator).
#include "coll_kernel.h"

namespace baton {

void copyKernel(ExecCtx& ctx, const CollArgs& a, const OpParams&) { runMoving(ctx, a); }

namespace {
template <typename T>
CollKernel forType(RedOpKind op) {
  return withOp(op, [](auto tag) -> CollKernel { return reduceKernel<T, decltype(tag)::template type>; });
}
}  // namespace

CollKernel collKernel(CollFunc func, ncclDataType_t type, RedOpKind op) {
  if (countsBytes(func)) return copyKernel;
  switch (type) {
    case ncclInt8: return forType<int8_t>(op);
    case ncclUint8: return forType<uint8_t>(op);
    case ncclInt32: return forType<int32_t>(op);
    case ncclUint32: return forType<uint32_t>(op);
    case ncclInt64: return forType<int64_t>(op);
    case ncclUint64: return forType<uint64_t>(op);
    case ncclFloat16: return forType<half_t>(op);
    case ncclFloat32: return forType<float>(op);
    case ncclFloat64: return forType<double>(op);
    case ncclBfloat16: return forType<bfloat16_t>(op);
    case ncclFloat8e4m3: return forType<fp8e4m3_t>(op);
    case ncclFloat8e5m2: return forType<fp8e5m2_t>(op);
    default: return nullptr;
  }
}

}  // namespace baton

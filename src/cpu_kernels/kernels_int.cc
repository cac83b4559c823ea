// Kernel instances for the integer types (split by type family so builds run in parallel).
#include "coll_kernel.h"

namespace baton {
BATON_DEFINE_KERNELS(int8_t)
BATON_DEFINE_KERNELS(uint8_t)
BATON_DEFINE_KERNELS(int32_t)
BATON_DEFINE_KERNELS(uint32_t)
BATON_DEFINE_KERNELS(int64_t)
BATON_DEFINE_KERNELS(uint64_t)
}  // namespace baton

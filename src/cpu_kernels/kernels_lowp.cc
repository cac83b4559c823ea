// Kernel instances for the 16- and 8-bit floating types (reduced in float).
#include "coll_kernel.h"

namespace baton {
BATON_DEFINE_KERNELS(half_t)
BATON_DEFINE_KERNELS(bfloat16_t)
BATON_DEFINE_KERNELS(fp8e4m3_t)
BATON_DEFINE_KERNELS(fp8e5m2_t)
}  // namespace baton

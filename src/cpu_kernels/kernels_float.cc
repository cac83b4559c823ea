// Kernel instances for float and double.
#include "coll_kernel.h"

namespace baton {
BATON_DEFINE_KERNELS(float)
BATON_DEFINE_KERNELS(double)
}  // namespace baton

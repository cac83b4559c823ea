// The argument checks of argcheck.h: datatypes, operators (PreMulSum handles through redop.h),
// roots, counts and pointers, each failure naming the function, the argument and its value.
#include "api/argcheck.h"

#include <cstdint>

#include "api/redop.h"
#include "misc/debug.h"

namespace baton {

ncclResult_t checkDatatype(ncclDataType_t type, const char* fn) {
  if ((int)type < 0 || (int)type >= ncclNumTypes)
    return batonError(ncclInvalidArgument, "%s: invalid datatype %d (valid: 0..%d)", fn, (int)type, ncclNumTypes - 1);
  return ncclSuccess;
}

ncclResult_t resolveOp(ncclComm* comm, ncclRedOp_t op, ncclDataType_t type, const char* fn, OpParams* out) {
  *out = OpParams{};
  out->nRanks = comm->nRanks;
  switch ((int)op) {
    case ncclSum: out->kind = kOpSum; return ncclSuccess;
    case ncclProd: out->kind = kOpProd; return ncclSuccess;
    case ncclMax: out->kind = kOpMax; return ncclSuccess;
    case ncclMin: out->kind = kOpMin; return ncclSuccess;
    case ncclAvg: out->kind = kOpSumPostDiv; return ncclSuccess;
    default: break;
  }
  if ((int)op < 0) return batonError(ncclInvalidArgument, "%s: invalid reduction op %d", fn, (int)op);
  return lookupPreMulSum(comm, op, type, fn, out);
}

ncclResult_t checkRoot(ncclComm* comm, int root, const char* fn, const char* what) {
  if (root < 0 || root >= comm->nRanks)
    return batonError(ncclInvalidArgument, "%s: %s %d is outside [0, nranks=%d)", fn, what, root, comm->nRanks);
  return ncclSuccess;
}

ncclResult_t checkCount(size_t count, ncclDataType_t type, size_t factor, const char* fn, const char* what) {
  const size_t limit = (size_t)INT64_MAX / typeSize(type) / (factor ? factor : 1);
  if (count > limit)
    return batonError(ncclInvalidArgument, "%s: %s %zu of %s (x%zu) overflows the byte size of a buffer", fn, what,
                      count, typeName(type), factor);
  return ncclSuccess;
}

ncclResult_t checkCollPtr(const void* p, size_t count, const char* fn, const char* what) {
  if (!p && count > 0) return batonError(ncclInvalidArgument, "%s: %s is NULL (count %zu)", fn, what, count);
  return ncclSuccess;
}

}  // namespace baton

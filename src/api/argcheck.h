// Argument checks shared by the API's entry points: the communicator (against the registry of live
// ones, src/comm_registry.h), datatypes, operators, roots, counts and pointers. Each failure returns
// ncclInvalidArgument / ncclInvalidUsage with a message naming the function, argument and value.
#pragma once

#include "comm.h"
#include "comm_registry.h"
#include "task.h"

namespace baton {

ncclResult_t checkDatatype(ncclDataType_t type, const char* fn);
// Resolves a built-in or PreMulSum operator for `type` on `comm` into kernel parameters.
ncclResult_t resolveOp(ncclComm* comm, ncclRedOp_t op, ncclDataType_t type, const char* fn, OpParams* out);
ncclResult_t checkRoot(ncclComm* comm, int root, const char* fn, const char* what = "root");
// count * typeSize * factor must fit in size_t (and in ssize_t, so pointer arithmetic is defined).
ncclResult_t checkCount(size_t count, ncclDataType_t type, size_t factor, const char* fn, const char* what = "count");
// The collectives' form: NULL with count > 0 is an error; device memory is not (src/gpu/gpu_launch.cc).
ncclResult_t checkCollPtr(const void* p, size_t count, const char* fn, const char* what);

}  // namespace baton

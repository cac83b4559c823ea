// Custom reduction operators: ncclRedOpCreatePreMulSum / ncclRedOpDestroy.
//
// Like NCCL, the handle is ncclNumOps + slot, mixed with a hash of the communicator, so a handle
// used on another communicator (or with another datatype) is rejected instead of misread.
#pragma once

#include "comm.h"
#include "task.h"

namespace baton {

ncclResult_t lookupPreMulSum(ncclComm* comm, ncclRedOp_t op, ncclDataType_t type, const char* fn, OpParams* out);

}  // namespace baton

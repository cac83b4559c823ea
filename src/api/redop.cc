// ncclRedOpCreatePreMulSum / ncclRedOpDestroy (redop.h): a communicator's table of PreMulSum
// slots, and turning an ncclRedOp_t into the operator the kernels take.
#include "api/redop.h"

#include <cstring>

#include "api/api.h"
#include "api/argcheck.h"
#include "misc/debug.h"

namespace baton {

namespace {
int mangle(ncclComm* comm) { return (int)((reinterpret_cast<uintptr_t>(comm) >> 4) & 0xfffff) << 6; }
int opToSlot(ncclComm* comm, ncclRedOp_t op) { return (((int)op - ncclNumOps) ^ mangle(comm)); }
ncclRedOp_t slotToOp(ncclComm* comm, int slot) { return (ncclRedOp_t)(ncclNumOps + (slot ^ mangle(comm))); }
}  // namespace

ncclResult_t lookupPreMulSum(ncclComm* comm, ncclRedOp_t op, ncclDataType_t type, const char* fn, OpParams* out) {
  const int slot = opToSlot(comm, op);
  std::lock_guard<std::mutex> lk(comm->redOpMu);
  if (slot < 0 || slot >= kMaxRedOps || !comm->redOps[slot].used)
    return batonError(ncclInvalidArgument,
                      "%s: reduction op %d is not a built-in op and is unknown to this communicator (created on "
                      "another communicator, or already destroyed?)",
                      fn, (int)op);
  const RedOpSlot& s = comm->redOps[slot];
  if (s.type != type)
    return batonError(ncclInvalidArgument, "%s: PreMulSum op %d was created for datatype %s, used with %s", fn, (int)op,
                      typeName(s.type), typeName(type));
  out->kind = kOpPreMulSum;
  memcpy(out->scalar, s.value, sizeof s.value);
  out->scalarPtr = s.residence == ncclScalarDevice ? s.ptr : nullptr;
  return ncclSuccess;
}

}  // namespace baton

NCCL_API(ncclResult_t, ncclRedOpCreatePreMulSum, ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
         ncclScalarResidence_t residence, ncclComm_t comm);
ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                       ncclScalarResidence_t residence, ncclComm_t comm) {
  using namespace baton;
  const char* fn = "ncclRedOpCreatePreMulSum";
  BATON_CHECK(checkCommLive(comm, fn));
  if (!op) return batonError(ncclInvalidArgument, "%s: op (the output pointer) is NULL", fn);
  if (!scalar) return batonError(ncclInvalidArgument, "%s: scalar is NULL", fn);
  BATON_CHECK(checkDatatype(datatype, fn));
  if (residence != ncclScalarDevice && residence != ncclScalarHostImmediate)
    return batonError(ncclInvalidArgument,
                      "%s: residence %d is neither ncclScalarDevice (0) nor ncclScalarHostImmediate (1)", fn,
                      (int)residence);
  std::lock_guard<std::mutex> lk(comm->redOpMu);
  for (int i = 0; i < kMaxRedOps; ++i) {
    RedOpSlot& s = comm->redOps[i];
    if (s.used) continue;
    s = RedOpSlot{};
    s.used = true;
    s.type = datatype;
    s.residence = residence;
    memcpy(s.value, scalar, typeSize(datatype));
    s.ptr = scalar;
    *op = slotToOp(comm, i);
    return ncclSuccess;
  }
  return batonError(ncclInvalidUsage, "%s: all %d custom op slots of this communicator are in use; destroy some", fn,
                    kMaxRedOps);
}

NCCL_API(ncclResult_t, ncclRedOpDestroy, ncclRedOp_t op, ncclComm_t comm);
ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  using namespace baton;
  const char* fn = "ncclRedOpDestroy";
  BATON_CHECK(checkCommLive(comm, fn));
  if ((int)op >= 0 && (int)op < ncclNumOps)
    return batonError(ncclInvalidArgument, "%s: op %d is a built-in operator and cannot be destroyed", fn, (int)op);
  const int slot = opToSlot(comm, op);
  std::lock_guard<std::mutex> lk(comm->redOpMu);
  if (slot < 0 || slot >= kMaxRedOps || !comm->redOps[slot].used)
    return batonError(ncclInvalidArgument, "%s: op %d is unknown to this communicator", fn, (int)op);
  comm->redOps[slot].used = false;
  return ncclSuccess;
}

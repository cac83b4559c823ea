// The wire-format collectives and codecs (include/baton/lowp.h, lesson 15): each collective runs
// inside guardedCall, checks and agrees (src/lowp/wire_call.cc), then runs its stage.
#include <cstring>

#include "api/argcheck.h"
#include "api/guarded_call.h"
#include "baton/lowp.h"
#include "block_formats.h"
#include "lowp/wire_call.h"
#include "lowp/wire_steps.h"
#include "misc/debug.h"

using namespace baton;

namespace {

bool knownWire(int wire) { return wire >= 1 && wire < kNumWireFormats; }

// The format's value as an int without loading the enum: a C caller may pass any int, and a value
// outside the enumerators is undefined behaviour to load as the C++ enum (UBSan's enum check).
int wireCode(const batonWireFormat_t& wire) {
  int v;
  memcpy(&v, &wire, sizeof v);
  return v;
}

ncclResult_t checkCodecArgs(const char* fn, const void* data, size_t count, ncclDataType_t type, int wire,
                            const void* packed) {
  if (!knownWire(wire))
    return batonError(ncclInvalidArgument, "%s: wire format %d is not one this baton knows (1 mxfp8, 2 mxfp4, 3 nvfp4)",
                      fn, wire);
  if (type != ncclFloat && type != ncclBfloat16 && type != ncclHalf)
    return batonError(ncclInvalidArgument, "%s: datatype %d cannot use a wire format (float, bfloat16 or half only)",
                      fn, (int)type);
  if (count && !data) return batonError(ncclInvalidArgument, "%s: the data pointer is NULL with count %zu", fn, count);
  if (count && !packed)
    return batonError(ncclInvalidArgument, "%s: the packed pointer is NULL with count %zu", fn, count);
  return ncclSuccess;
}

ncclResult_t runWire(ncclComm_t comm, const char* fn, WireOp op, const void* sendbuff, void* recvbuff, size_t count,
                     ncclDataType_t type, int wire, ncclRedOp_t redop) {
  return guardedCall(comm, fn, [&] {
    WireCall c;
    BATON_CHECK(beginWireCall(&c, comm, fn, op, sendbuff, recvbuff, count, type, wire, redop));
    // beginWireCall chose the stage where it applies.
    const bool pipelined = c.stage == WireStage::kPipelined, fused = c.stage == WireStage::kFused;
    switch (op) {
      case WireOp::kAllGather:
        return fused       ? wireAllGatherFused(c, sendbuff, recvbuff)
               : pipelined ? wireAllGatherPipelined(c, sendbuff, recvbuff)
                           : wireAllGatherNaive(c, sendbuff, recvbuff, false);
      case WireOp::kAllGatherPacked: return wireAllGatherNaive(c, sendbuff, recvbuff, true);
      case WireOp::kReduceScatter:
        return fused       ? wireReduceScatterFused(c, sendbuff, recvbuff)
               : pipelined ? wireReducePipelined(c, sendbuff, recvbuff, false)
                           : wireReduceScatterNaive(c, sendbuff, recvbuff);
      case WireOp::kAllReduce:
        return fused       ? wireAllReduceFused(c, sendbuff, recvbuff)
               : pipelined ? wireReducePipelined(c, sendbuff, recvbuff, true)
                           : wireAllReduceNaive(c, sendbuff, recvbuff);
    }
    return ncclInternalError;
  });
}

}  // namespace

extern "C" __attribute__((visibility("default"))) size_t batonWireBytes(size_t count, batonWireFormat_t wire) {
  return knownWire(wireCode(wire)) ? wireSegmentBytes(WireFormat(wireCode(wire)), count) : 0;
}

extern "C" __attribute__((visibility("default"))) const char* batonWireName(batonWireFormat_t wire) {
  return wireFormatName(knownWire(wireCode(wire)) ? WireFormat(wireCode(wire)) : WireFormat::kNone);
}

extern "C" __attribute__((visibility("default"))) ncclResult_t batonWireQuantize(const void* in, size_t count,
                                                                                 ncclDataType_t datatype,
                                                                                 batonWireFormat_t wire, void* packed) {
  BATON_CHECK(checkCodecArgs("batonWireQuantize", in, count, datatype, wireCode(wire), packed));
  return withWireType(datatype, [&](auto tag) {
    quantizeSegment(WireFormat(wireCode(wire)), static_cast<const decltype(tag)*>(in), count,
                    static_cast<uint8_t*>(packed));
    return ncclSuccess;
  });
}

extern "C" __attribute__((visibility("default"))) ncclResult_t batonWireDequantize(const void* packed, size_t count,
                                                                                   batonWireFormat_t wire, void* out,
                                                                                   ncclDataType_t datatype) {
  BATON_CHECK(checkCodecArgs("batonWireDequantize", out, count, datatype, wireCode(wire), packed));
  return withWireType(datatype, [&](auto tag) {
    dequantizeSegment(WireFormat(wireCode(wire)), static_cast<const uint8_t*>(packed), count,
                      static_cast<decltype(tag)*>(out));
    return ncclSuccess;
  });
}

extern "C" __attribute__((visibility("default"))) ncclResult_t batonAllGatherWire(const void* sendbuff, void* recvbuff,
                                                                                  size_t sendcount,
                                                                                  ncclDataType_t datatype,
                                                                                  batonWireFormat_t wire,
                                                                                  ncclComm_t comm, cudaStream_t) {
  return runWire(comm, "batonAllGatherWire", WireOp::kAllGather, sendbuff, recvbuff, sendcount, datatype,
                 wireCode(wire), ncclSum);
}

extern "C" __attribute__((visibility("default"))) ncclResult_t batonAllGatherWirePacked(
    const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype, batonWireFormat_t wire,
    ncclComm_t comm, cudaStream_t) {
  return runWire(comm, "batonAllGatherWirePacked", WireOp::kAllGatherPacked, sendbuff, recvbuff, sendcount, datatype,
                 wireCode(wire), ncclSum);
}

extern "C" __attribute__((visibility("default"))) ncclResult_t batonReduceScatterWire(
    const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype, batonWireFormat_t wire,
    ncclRedOp_t op, ncclComm_t comm, cudaStream_t) {
  return runWire(comm, "batonReduceScatterWire", WireOp::kReduceScatter, sendbuff, recvbuff, recvcount, datatype,
                 wireCode(wire), op);
}

extern "C" __attribute__((visibility("default"))) ncclResult_t batonAllReduceWire(const void* sendbuff, void* recvbuff,
                                                                                  size_t count, ncclDataType_t datatype,
                                                                                  batonWireFormat_t wire,
                                                                                  ncclRedOp_t op, ncclComm_t comm,
                                                                                  cudaStream_t) {
  return runWire(comm, "batonAllReduceWire", WireOp::kAllReduce, sendbuff, recvbuff, count, datatype, wireCode(wire),
                 op);
}

// The three protocols as types: what a FIFO step holds and how a ring cuts work for each.
//
// Computes nothing by itself; the primitives (primitives_simple.h, primitives_ll.h,
// primitives_ll128.h) and the collectives read these constants. Introduced in lesson 04
// (docs/lessons/04-protocols.md). Sizes follow NCCL (NCCL's src/include/device.h):
//   Simple: 4 MiB buffer, 512 KiB steps, all payload, 4 steps per ring chunk, 512-byte grain;
//   LL:     512 KiB buffer, 64 KiB steps of 16-byte lines {data, flag, data, flag}: half payload;
//   LL128:  4 915 200-byte buffer, 614 400-byte steps of 128-byte lines, 120 bytes payload each.
// LL and LL128 move one step per chunk.
//
// Memory-ordering contract: none here (each primitives file states its own).
#pragma once

#include <cstddef>
#include <cstdint>

#include "connector.h"

namespace baton {

constexpr uint64_t kLLLineBytes = 16;
constexpr uint64_t kLL128LineBytes = 128, kLL128DataBytes = 120;
constexpr uint32_t kLLCleanMask = 0x7ffffff8;  // NCCL_LL_CLEAN_MASK

struct ProtoSimple {
  static constexpr int id = kProtoSimple;
  static constexpr const char* name = "Simple";
  static constexpr size_t grainBytes = 512;
  BATON_HD static size_t payloadBytes(uint64_t stepBytes) { return stepBytes; }
  BATON_HD static int chunkSteps(int simpleChunkSteps) { return simpleChunkSteps; }
};

struct ProtoLL {
  static constexpr int id = kProtoLL;
  static constexpr const char* name = "LL";
  static constexpr size_t grainBytes = 16;
  BATON_HD static size_t payloadBytes(uint64_t stepBytes) { return stepBytes / kLLLineBytes * 8; }
  BATON_HD static int chunkSteps(int) { return 1; }
};

struct ProtoLL128 {
  static constexpr int id = kProtoLL128;
  static constexpr const char* name = "LL128";
  static constexpr size_t grainBytes = 1920;  // NCCL's: 16 lines' worth of payload per warp round
  BATON_HD static size_t payloadBytes(uint64_t stepBytes) { return stepBytes / kLL128LineBytes * kLL128DataBytes; }
  BATON_HD static int chunkSteps(int) { return 1; }
};

// Calls f(P{}) for the protocol `proto` names (Simple for anything else): the one switch from a
// work item's protocol to the protocol type the bodies are written against, for every backend.
template <typename F>
BATON_HD decltype(auto) withProto(int proto, F&& f) {
  switch (proto) {
    case kProtoLL: return f(ProtoLL{});
    case kProtoLL128: return f(ProtoLL128{});
    default: return f(ProtoSimple{});
  }
}

// Elements of T in one FIFO step of protocol P on connector c, and in one chunk.
template <typename P, typename T>
BATON_HD size_t stepElems(const ConnDev& c) {
  return P::payloadBytes(c.stepBytes[P::id]) / sizeof(T);
}
template <typename P, typename T>
BATON_HD size_t chunkElems(const ConnDev& c, int simpleChunkSteps) {
  return P::chunkSteps(simpleChunkSteps) * stepElems<P, T>(c);
}

// Every rank must cut a buffer into the same channel parts: in whole grains of the protocol.
template <typename P, typename T>
BATON_HD size_t protoGrainElems() {
  return P::grainBytes / sizeof(T) ? P::grainBytes / sizeof(T) : 1;
}

template <typename T, typename Op, typename P>
class Primitives;  // specialised by primitives_simple.h, primitives_ll.h, primitives_ll128.h

}  // namespace baton

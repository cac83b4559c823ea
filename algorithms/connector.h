// The connector: one direction of one connection, an 8-slot FIFO with head/tail step counters.
//
// Computes nothing; defines the memory that producer and consumer share and the handle each side's
// device code holds. Introduced in lesson 03 (docs/lessons/03-pipelining.md).
//
// Memory-ordering contract (the same for every transport that hosts a FIFO):
//   - the sender writes a slot's payload and its byte size, then storeRelease(tail, step+1):
//     the tail store releases the slot;
//   - the receiver loadAcquire(tail) >= step+1 before reading the slot, and after reading it
//     storeRelease(head, step+1): the head store releases the slot back to the sender;
//   - the sender fills step s only when s+1 - loadAcquire(head) <= depth (credit flow control).
// Counters are 64-bit and only grow; slot = step % kSteps.
#pragma once

#include <cstdint>

#include "exec_model.h"

namespace baton {

constexpr int kSteps = 8;  // NCCL_STEPS

// Protocols, with NCCL's indices (NCCL_PROTO_LL, NCCL_PROTO_LL128, NCCL_PROTO_SIMPLE). Each connector
// has one slot buffer per protocol; all three share the step counter, head and tail, so operations
// with different protocols follow each other on one connection (lesson 04).
enum Proto : int { kProtoLL = 0, kProtoLL128 = 1, kProtoSimple = 2, kNumProtos = 3 };

// Bytes of one FIFO step in each protocol's buffer (0: the connector has no buffer for it).
struct FifoLayout {
  uint64_t stepBytes[kNumProtos] = {0, 0, 0};
  BATON_HD uint64_t totalSlotBytes() const { return (uint64_t)kSteps * (stepBytes[0] + stepBytes[1] + stepBytes[2]); }
};

// Shared between producer and consumer; lives in the receiver's memory (heap for p2p, a POSIX
// shared-memory segment for shm). Each counter has its own cache line to avoid false sharing.
struct alignas(128) ConnFifo {
  alignas(128) uint64_t tail;           // written by the sender
  alignas(128) uint64_t head;           // written by the receiver
  alignas(128) uint64_t sizes[kSteps];  // bytes in each slot, written by the sender before tail
  // Direct paths (threads of one process, or registered buffers of processes of one host): the
  // receiver publishes its output buffer for an operation
  // here, so the sender can write the result straight into it (lesson 05). Written before
  // storeRelease(directTag, op + 1), read after loadAcquire(directTag) >= op + 1.
  alignas(128) uint64_t directTag;
  void* directPtr;
  uint64_t directAlloc;  // processes (lesson 09): directPtr's ncclMemAlloc allocation, 0 if none
  // Set (storeRelease, rank + 1) by either side when its communicator fails, is revoked or
  // aborted: the other side's waits see it and stop (CPU backend; lesson 10). The upper 32 bits
  // hold the failure's cause + 1 (the rank that died, 0 if unknown): the news travels with it.
  alignas(128) uint64_t abortedBy;
  // NET zero copy (lesson 09): registered buffers of ncclSend / ncclRecv between hosts skip the
  // staging FIFOs. Only NET FIFOs use these words, one entry per slot, each naming the step it is
  // for (step + 1), so an entry left from an older step never matches (sendrecv_progress.h).
  //   sender: netSendPtr is the span of the user's buffer the proxy sends step s from instead of
  //     the slot; written with netSendFor = s + 1 before the tail store that releases step s.
  //   receiver: netRecvPtr / netRecvLen offer the span of the user's buffer step s may land in,
  //     released by storeRelease(netRecvFor, s + 1); the proxy sets netRecvLanded = s + 1 when it
  //     did land there, before the tail store that releases step s.
  alignas(128) uint64_t netSendFor[kSteps];
  uint64_t netSendPtr[kSteps];
  alignas(128) uint64_t netRecvFor[kSteps];
  uint64_t netRecvPtr[kSteps];
  uint64_t netRecvLen[kSteps];
  uint64_t netRecvLanded[kSteps];
  // Slot memory follows, 128-byte aligned: kSteps steps of LL, then LL128, then Simple
  // (FifoLayout gives the step sizes).
};

BATON_HD char* fifoSlots(ConnFifo* f) { return reinterpret_cast<char*>(f + 1); }
// Where protocol p's kSteps slots start in a FIFO laid out as `l`.
BATON_HD char* fifoBuff(ConnFifo* f, const FifoLayout& l, int p) {
  char* b = fifoSlots(f);
  for (int i = 0; i < p; ++i) b += kSteps * l.stepBytes[i];
  return l.stepBytes[p] ? b : nullptr;
}

// One side's view of a connector. `step` is this side's private progress: steps sent (sender) or
// steps consumed (receiver). It persists across operations so the next one continues the sequence.
struct ConnDev {
  ConnFifo* fifo = nullptr;
  char* buffs[kNumProtos] = {nullptr, nullptr, nullptr};
  uint64_t stepBytes[kNumProtos] = {0, 0, 0};
  uint64_t step = 0;
  int peer = -1;
  int depth = kSteps;     // slots the sender may have in flight (1 = stop-and-wait, lesson 03)
  uint64_t headSeen = 0;  // sender: the receiver's head when last read (waitSendCredit)
  // NET zero copy for collectives (lesson 09): this connector is a NET staging FIFO and the
  // operation now running has registered buffers, so Simple steps pass spans of the user's buffers
  // (netSendPtr, netRecvPtr) instead of copying. Set by the host per operation, as depth is, on
  // the ring's connectors only: the ring holds one Primitives for the whole operation, whose
  // destructor waits for the proxy once; the tree makes one per call, which would wait per chunk.
  bool netDirect = false;
};

BATON_HD ConnDev makeConnDev(ConnFifo* fifo, const FifoLayout& l, int peer, int depth) {
  ConnDev c;
  c.fifo = fifo;
  for (int p = 0; p < kNumProtos; ++p) {
    c.buffs[p] = fifoBuff(fifo, l, p);
    c.stepBytes[p] = l.stepBytes[p];
  }
  c.peer = peer;
  c.depth = depth;
  return c;
}

// NET zero copy (lesson 09), the rank's side of the words above, for ncclSend/ncclRecv
// (sendrecv_progress.h) and the ring's Simple steps (primitives_simple.h) alike.
// Sender: step `step` leaves from `span`; before the tail store that releases the step.
BATON_HD void netSendFrom(ConnFifo* f, uint64_t step, const void* span) {
  f->netSendPtr[step % kSteps] = (uint64_t)(uintptr_t)span;
  f->netSendFor[step % kSteps] = step + 1;
}
// Receiver: step `step` may land in [span, span + bytes); the release store publishes the offer.
BATON_HD void netOfferRecv(ConnFifo* f, uint64_t step, void* span, uint64_t bytes) {
  f->netRecvPtr[step % kSteps] = (uint64_t)(uintptr_t)span;
  f->netRecvLen[step % kSteps] = bytes;
  storeRelease(&f->netRecvFor[step % kSteps], step + 1);
}
// Receiver, after acquiring tail >= step + 1: did the proxy put step `step` into the offered span?
BATON_HD bool netRecvLanded(const ConnFifo* f, uint64_t step) { return f->netRecvLanded[step % kSteps] == step + 1; }

// Protocol p's slot for `step`.
BATON_HD char* slotPtr(const ConnDev& c, int p, uint64_t step) { return c.buffs[p] + (step % kSteps) * c.stepBytes[p]; }

}  // namespace baton

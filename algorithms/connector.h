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

// Shared between producer and consumer; lives in the receiver's memory (heap for p2p, a POSIX
// shared-memory segment for shm). Each counter has its own cache line to avoid false sharing.
struct alignas(128) ConnFifo {
  alignas(128) uint64_t tail;           // written by the sender
  alignas(128) uint64_t head;           // written by the receiver
  alignas(128) uint64_t sizes[kSteps];  // bytes in each slot, written by the sender before tail
  // kSteps * stepBytes of slot memory follow, 128-byte aligned.
};

BATON_HD char* fifoSlots(ConnFifo* f) { return reinterpret_cast<char*>(f + 1); }

// One side's view of a connector. `step` is this side's private progress: steps sent (sender) or
// steps consumed (receiver). It persists across operations so the next one continues the sequence.
struct ConnDev {
  ConnFifo* fifo = nullptr;
  char* slots = nullptr;
  uint64_t stepBytes = 0;
  uint64_t step = 0;
  int peer = -1;
  int depth = kSteps;  // slots the sender may have in flight (1 = stop-and-wait, lesson 03)
};

BATON_HD char* slotPtr(const ConnDev& c, uint64_t step) {
  return c.slots + (step % kSteps) * c.stepBytes;
}

}  // namespace baton

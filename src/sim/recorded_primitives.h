// Recorded<P>: protocol P's constants with primitives that move no data and instead record the FIFO
// steps they would take. Running a collective's real algorithm body (ring_*.h, tree_allreduce.h)
// with Recorded<P> yields the exact step schedule the library executes: the simulator's input
// (src/sim/schedule.cc, lesson 06). Host only.
//
// Memory-ordering contract: none (no shared memory is touched; the recorder is thread-local).
#pragma once

#include <cstdint>

#include "primitives_api.h"
#include "protocols.h"

namespace baton {

template <typename P>
struct Recorded : P {};

// Receives every step a Recorded primitive takes on this thread.
class StepRecorder {
 public:
  virtual ~StepRecorder() = default;
  // One FIFO step: receives on `recv` and/or sends on `send` (null when absent), `payload` bytes.
  virtual void step(const ConnDev* recv, const ConnDev* send, uint64_t payload) = 0;
  static StepRecorder*& current() {
    static thread_local StepRecorder* r = nullptr;
    return r;
  }
};

template <typename T, typename Op, typename P>
class Primitives<T, Op, Recorded<P>> : public PrimitivesApi<Primitives<T, Op, Recorded<P>>, T> {
 public:
  Primitives(ExecCtx&, ConnDev* recvConn, ConnDev* sendConn, const Op&) : recv_(recvConn), send_(sendConn) {}

  template <Moves M>
  void run(const T*, T*, size_t n) {
    const ConnDev* c = M.send ? send_ : recv_;
    const size_t slice = P::payloadBytes(c->stepBytes[P::id]) / sizeof(T);
    for (size_t off = 0; off < n; off += slice)
      StepRecorder::current()->step(M.recv ? recv_ : nullptr, M.send ? send_ : nullptr,
                                    minSize(slice, n - off) * sizeof(T));
  }

 private:
  ConnDev* recv_;
  ConnDev* send_;
};

// Bytes a step of `payload` bytes puts on the wire in protocol p: LL lines carry 8 of 16 bytes,
// LL128 lines 120 of 128.
inline uint64_t wireBytes(int proto, uint64_t payload) {
  if (proto == kProtoLL) return (payload + 7) / 8 * kLLLineBytes;
  if (proto == kProtoLL128) return (payload + kLL128DataBytes - 1) / kLL128DataBytes * kLL128LineBytes;
  return payload;
}

}  // namespace baton

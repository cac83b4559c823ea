// The flight recorder (lesson 14, docs/fault-tolerance.md): a communicator's last N operations and
// what each of its channels is doing, kept cheaply enough to stay on, so that when a job hangs a
// dump (src/comm_dump.cc) can say which operation each rank is in and which peer it waits for.
//
// One ring of entries per communicator (BATON_FLIGHT_RECORDER entries, 2000 by default, 0: off).
// The thread that plans an operation writes its entry; the workers that run its parts stamp its
// start and end; a dump may read any of it at any time from another thread. So every word is a
// relaxed atomic, and an entry is published seqlock-style: its `tag` word is zeroed, the fields
// written, then the tag stored with release; a reader that sees the same tag before and after its
// copy has a whole entry (else it skips it: the ring lapped it during the copy).
//
// Times are the CPU's time-stamp counter where it is constant (x86: about 10 ns to read against
// clock_gettime's 30), converted to CLOCK_MONOTONIC nanoseconds when a dump is taken. The 8-byte
// path records no time: one read was half of its 20 ns cost, against an operation of 200 ns.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "exec_model.h"

namespace baton {

enum FlightKind : uint8_t { kFlightColl = 0, kFlightSend = 1, kFlightRecv = 2, kFlightAlltoAll = 3 };
enum FlightBuffers : uint8_t { kFlightPlain = 0, kFlightRegistered = 1, kFlightWindow = 2, kFlightDevice = 3 };

// What an operation is, as the planner knows it. Enumerations are the library's own (CollFunc,
// ncclDataType_t, RedOpKind, CollAlgo, Proto); the dump names them.
struct FlightOp {
  uint64_t seq = 0;  // collectives: the communicator's opCount (alike on every rank); others: their own count
  uint64_t count = 0;
  uint8_t kind = kFlightColl, func = 0, type = 0, redop = 0, algo = 0, proto = 0, channels = 0, buffers = kFlightPlain;
  int32_t root = -1, peer = -1;
};

// An entry as a dump sees it. Times in CLOCK_MONOTONIC ns; 0: not yet.
struct FlightRecord {
  uint64_t tag = 0;  // position in the ring's history + 1
  FlightOp op;
  uint64_t enqueueNs = 0, startNs = 0, endNs = 0;
  bool done = false;  // every part ended (endNs is 0 when its end was not timed: quickEnd)
  int result = 0;     // ncclResult_t of a part that failed (0: none failed)
};

// One channel's state: the entry it runs (its tag, 0: idle) and the note of its current wait.
struct alignas(64) FlightChannel {
  uint64_t running = 0;
  uint64_t last = 0;  // the tag of the last entry it ran
  WaitNote note;
};

struct FlightChannelView {
  uint64_t running = 0, last = 0;
  WaitNote note;  // its times converted as the records'
};

// A handle on one entry, for the workers that stamp it.
struct FlightRef {
  uint64_t tag = 0;  // 0: not recorded (recorder off)
  uint32_t slot = 0;
};

class FlightRecorder {
 public:
  // `entries` > 0; `channels`: the communicator's channel count (the slots makeCtx points at).
  FlightRecorder(size_t entries, int channels);

  // Records a new operation, enqueued now, `parts` parts to run. Called by one thread at a time
  // per communicator (the one that plans it). timed = false: no time at all (the 8-byte path, where
  // reading the counter was most of the recorder's cost; a wait of it that stalls still notes when).
  FlightRef record(const FlightOp& op, int parts, bool timed = true);
  // A part of `ref` starts on channel `ch` (the first stamps the start time).
  void partStart(FlightRef ref, int ch);
  // A part of `ref` on channel `ch` ended with `result`; the last one stamps the end time.
  void partEnd(FlightRef ref, int ch, int result);
  // An operation the caller ran at once, in one part: start is the enqueue time.
  void oneShotEnd(FlightRef ref, int result);
  // The same without reading the clock, for the 8-byte path: the entry is done, its end untimed
  // (before the next entry's enqueue).
  void quickEnd(FlightRef ref, int result);

  WaitNote* note(int ch) { return ch >= 0 && ch < (int)channels_.size() ? &channels_[ch].note : nullptr; }
  size_t capacity() const { return n_; }
  uint64_t recorded() const { return next_.load(std::memory_order_acquire); }

  // A copy of every whole entry, oldest first, and of every channel's state (times in ns).
  void snapshot(std::vector<FlightRecord>* records, std::vector<FlightChannelView>* channels) const;
  static uint64_t ticks();  // the recorder's clock

 private:
  static constexpr uint64_t kUntimedEnd = 1ull << 32;  // in kResult: quickEnd's mark
  enum Word { kTag, kSeq, kCount, kShape, kRootPeer, kEnqueue, kStart, kEnd, kResult, kPartsLeft, kWords };
  uint64_t* entry(uint32_t slot) const { return &words_[(size_t)slot * kWords]; }
  double nsPerTick() const;
  uint64_t toNs(uint64_t t, double nsPerTick) const;

  size_t n_;
  std::unique_ptr<uint64_t[]> wordsStore_;
  uint64_t* words_;
  std::vector<FlightChannel> channels_;
  std::atomic<uint64_t> next_{0};
  uint32_t nextSlot_ = 0;  // next_ % n_ (only the recording thread uses it)
  uint64_t ticks0_, ns0_;  // a pair of readings taken together, to convert ticks to ns
};

// BATON_FLIGHT_RECORDER: the entries per communicator (2000 by default; 0 turns the recorder off).
size_t flightRecorderEntries();

}  // namespace baton

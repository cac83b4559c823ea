// The flight recorder's ring and clock (flight_recorder.h).
#include "flight_recorder.h"

#include <time.h>

#include <algorithm>
#include <thread>

#include "param.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace baton {

namespace {
uint64_t monoNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
uint64_t load(const uint64_t& w) {
  return std::atomic_ref<uint64_t>(const_cast<uint64_t&>(w)).load(std::memory_order_relaxed);
}
void store(uint64_t& w, uint64_t v) { std::atomic_ref<uint64_t>(w).store(v, std::memory_order_relaxed); }
// An entry's fields (seqlock without fences, which ThreadSanitizer does not support): each field is
// stored with release, so the zeroed tag before it is seen first, and loaded with acquire, so the
// tag read after them is not read earlier. Both are plain moves on x86.
void storeField(uint64_t& w, uint64_t v) { std::atomic_ref<uint64_t>(w).store(v, std::memory_order_release); }
uint64_t loadField(const uint64_t& w) {
  return std::atomic_ref<uint64_t>(const_cast<uint64_t&>(w)).load(std::memory_order_acquire);
}

// The clock pair every recorder of the process converts with: taken once, so the conversion is
// measured over the whole run (a dump soon after the first communicator waits 5 ms for precision).
struct ClockPair {
  uint64_t ticks, ns;
};
const ClockPair& processClockPair() {
  static const ClockPair p{FlightRecorder::ticks(), monoNs()};
  return p;
}
}  // namespace

uint64_t FlightRecorder::ticks() {
#if defined(__x86_64__)
  return __rdtsc();  // constant and invariant on the machines baton runs on (constant_tsc)
#else
  return monoNs();
#endif
}

size_t flightRecorderEntries() {
  static const size_t n = (size_t)std::clamp<int64_t>(envInt("BATON_FLIGHT_RECORDER", 2000), 0, 1 << 24);
  return n;
}

FlightRecorder::FlightRecorder(size_t entries, int channels)
    : n_(std::max<size_t>(entries, 1)),
      wordsStore_(new uint64_t[n_ * kWords]()),
      words_(wordsStore_.get()),
      channels_(std::max(channels, 1)) {
  const ClockPair& p = processClockPair();
  ticks0_ = p.ticks, ns0_ = p.ns;
}

FlightRef FlightRecorder::record(const FlightOp& op, int parts, bool timed) {
  const uint64_t pos = next_.load(std::memory_order_relaxed);
  const uint32_t slot = nextSlot_;  // pos % n_, without a division on the 8-byte path
  nextSlot_ = slot + 1 == n_ ? 0 : slot + 1;
  uint64_t* e = entry(slot);
  store(e[kTag], 0);  // a reader copying the old entry now sees the tag change and skips it
  storeField(e[kSeq], op.seq);
  storeField(e[kCount], op.count);
  storeField(e[kShape], (uint64_t)op.kind | (uint64_t)op.func << 8 | (uint64_t)op.type << 16 |
                            (uint64_t)op.redop << 24 | (uint64_t)op.algo << 32 | (uint64_t)op.proto << 40 |
                            (uint64_t)op.channels << 48 | (uint64_t)op.buffers << 56);
  storeField(e[kRootPeer], (uint64_t)(uint32_t)op.root | (uint64_t)(uint32_t)op.peer << 32);
  storeField(e[kEnqueue], timed ? ticks() : 0);
  storeField(e[kStart], 0);
  storeField(e[kEnd], 0);
  storeField(e[kResult], 0);
  storeField(e[kPartsLeft], (uint64_t)std::max(parts, 1));
  std::atomic_ref<uint64_t>(e[kTag]).store(pos + 1, std::memory_order_release);
  next_.store(pos + 1, std::memory_order_release);
  return {pos + 1, slot};
}

void FlightRecorder::partStart(FlightRef ref, int ch) {
  if (!ref.tag) return;
  uint64_t* e = entry(ref.slot);
  if (load(e[kTag]) != ref.tag) return;  // lapped: the ring is smaller than what is in flight
  if (!load(e[kStart])) store(e[kStart], ticks());
  if (ch >= 0 && ch < (int)channels_.size()) store(channels_[ch].running, ref.tag);
}

void FlightRecorder::partEnd(FlightRef ref, int ch, int result) {
  if (!ref.tag) return;
  if (ch >= 0 && ch < (int)channels_.size()) {
    store(channels_[ch].running, 0);
    store(channels_[ch].last, ref.tag);
  }
  uint64_t* e = entry(ref.slot);
  if (load(e[kTag]) != ref.tag) return;
  if (result) store(e[kResult], (uint64_t)result);
  if (std::atomic_ref<uint64_t>(e[kPartsLeft]).fetch_sub(1, std::memory_order_acq_rel) == 1) store(e[kEnd], ticks());
}

void FlightRecorder::oneShotEnd(FlightRef ref, int result) {
  if (!ref.tag) return;
  uint64_t* e = entry(ref.slot);
  if (load(e[kTag]) != ref.tag) return;
  if (result) store(e[kResult], (uint64_t)(uint32_t)result);
  store(e[kStart], load(e[kEnqueue]));
  store(e[kEnd], ticks());
  store(channels_[0].last, ref.tag);
}

double FlightRecorder::nsPerTick() const {
#if defined(__x86_64__)
  // Calibrated against CLOCK_MONOTONIC over the time since the pair was taken (at least 5 ms).
  uint64_t nowT = ticks(), nowNs = monoNs();
  while (nowNs - ns0_ < 5000000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    nowT = ticks(), nowNs = monoNs();
  }
  return double(nowNs - ns0_) / double(nowT - ticks0_);
#else
  return 1.0;
#endif
}

void FlightRecorder::quickEnd(FlightRef ref, int result) {
  if (!ref.tag) return;
  uint64_t* e = entry(ref.slot);
  if (load(e[kTag]) != ref.tag) return;
  store(e[kResult], (uint64_t)(uint32_t)result | kUntimedEnd);
  store(e[kStart], load(e[kEnqueue]));
  store(channels_[0].last, ref.tag);
}

uint64_t FlightRecorder::toNs(uint64_t t, double nsPerTick) const {
#if defined(__x86_64__)
  return t ? ns0_ + (uint64_t)((double)(int64_t)(t - ticks0_) * nsPerTick) : 0;
#else
  (void)nsPerTick;
  return t;
#endif
}

void FlightRecorder::snapshot(std::vector<FlightRecord>* records, std::vector<FlightChannelView>* channels) const {
  const double k = nsPerTick();
  const uint64_t end = recorded();
  const uint64_t begin = end > n_ ? end - n_ : 0;
  records->clear();
  for (uint64_t pos = begin; pos < end; ++pos) {
    const uint64_t* e = entry((uint32_t)(pos % n_));
    const uint64_t tag = std::atomic_ref<uint64_t>(const_cast<uint64_t&>(e[kTag])).load(std::memory_order_acquire);
    if (tag != pos + 1) continue;
    FlightRecord r;
    r.tag = tag;
    r.op.seq = loadField(e[kSeq]);
    r.op.count = loadField(e[kCount]);
    const uint64_t shape = loadField(e[kShape]), rp = loadField(e[kRootPeer]);
    r.op.kind = (uint8_t)shape, r.op.func = (uint8_t)(shape >> 8), r.op.type = (uint8_t)(shape >> 16);
    r.op.redop = (uint8_t)(shape >> 24), r.op.algo = (uint8_t)(shape >> 32), r.op.proto = (uint8_t)(shape >> 40);
    r.op.channels = (uint8_t)(shape >> 48), r.op.buffers = (uint8_t)(shape >> 56);
    r.op.root = (int32_t)(uint32_t)rp, r.op.peer = (int32_t)(uint32_t)(rp >> 32);
    r.enqueueNs = loadField(e[kEnqueue]), r.startNs = loadField(e[kStart]), r.endNs = loadField(e[kEnd]);
    const uint64_t result = loadField(e[kResult]);
    r.result = (int)(uint32_t)result;
    r.done = r.endNs != 0 || (result & kUntimedEnd);
    if (load(e[kTag]) != tag) continue;  // rewritten while we copied it
    r.enqueueNs = toNs(r.enqueueNs, k), r.startNs = toNs(r.startNs, k), r.endNs = toNs(r.endNs, k);
    records->push_back(r);
  }
  channels->clear();
  for (const FlightChannel& c : channels_) {
    FlightChannelView v;
    v.running = load(c.running), v.last = load(c.last);
    v.note.state = load(c.note.state), v.note.peer = load(c.note.peer), v.note.what = load(c.note.what);
    v.note.expected = load(c.note.expected), v.note.observed = load(c.note.observed);
    v.note.sinceNs = load(c.note.sinceNs), v.note.lastNs = load(c.note.lastNs);  // already ns (nowNs)
    channels->push_back(v);
  }
}

}  // namespace baton

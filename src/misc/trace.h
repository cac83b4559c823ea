// Timeline tracing (BATON_TRACE=file.json): spans recorded on the host and on channel workers,
// written as a Chrome/Perfetto JSON trace that opens in https://ui.perfetto.dev or chrome://tracing.
//
// Recording only appends to a per-process buffer (one mutex, no I/O), so callers may trace every
// step of a collective. traceFlush writes the buffer; every process of a job writes the same file
// under flock, so ranks launched as processes end up on one timeline (one CLOCK_MONOTONIC clock).
//
// File format: Chrome's "JSON Array Format": a line "[", then one event per line, each ending in
// ",", then a last object without a comma ("baton_trace_end") and the closing "]", so the file is
// valid JSON after every flush. A later flush (this process's or another of the job's) cuts those
// two lines off under the file lock, appends its events and writes them again. The first event
// names the job; a flush for another job starts the file over.
//
// Track layout: each rank is one track group ("process") named "rank N", each lane one track
// ("thread") in it: lane 0..63 is "channel N", lane -1 (kTraceHostLane) the rank's host thread.
// The JSON ids are shifted, pid = rank + 1 and tid = lane + 2, because Perfetto treats pid 0 and
// tid 0 as the kernel's idle task and folds them into other tracks; the names carry the real ids.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace baton {

constexpr int kTraceHostLane = -1;
// The lanes of NCCL profiler events, written by baton's profiler plugin into the same timeline
// (tools/profiler-plugin/): its collectives, each channel's parts, each channel's NET send and
// receive steps.
constexpr int kTraceCollLane = 100;
constexpr int kTracePartLane = 1000;     // + channel
constexpr int kTraceNetSendLane = 2000;  // + channel
constexpr int kTraceNetRecvLane = 3000;  // + channel
// The buffer's default cap: past it events are dropped (and counted) rather than growing memory
// without bound in a long run; ~2 M events is a few hundred MB at worst.
constexpr size_t kTraceMaxEvents = 2'000'000;

// True when BATON_TRACE names a file. The environment is read once; afterwards this is one load,
// cheap enough to guard every record site (check it before calling traceNowNs).
bool traceEnabled();

// CLOCK_MONOTONIC in ns: the same clock in every process of the machine, so ranks line up.
uint64_t traceNowNs();

// Records a complete ("X") event on rank `rank`, lane `lane` from startNs to endNs (traceNowNs
// values). `name` and `cat` are copied. `argsJson`, when given, is the inside of a JSON object,
// already formatted, e.g. "\"bytes\":1024,\"step\":3". Thread-safe; a no-op while disabled.
void traceComplete(int rank, int lane, const char* name, const char* cat, uint64_t startNs, uint64_t endNs,
                   const char* argsJson = nullptr);

// Writes the events buffered since the last flush to the trace file and empties the buffer.
// `jobId` identifies the run: processes of one job append to one file, a different job replaces
// it. The last id given is also used by the flush that runs at process exit. Returns false when
// the file could not be written (reported once at WARN; those events are discarded), true
// otherwise, including when tracing is off or nothing was buffered.
bool traceFlush(uint64_t jobId);

// One span as the file holds it.
struct TraceRecord {
  uint64_t startNs, endNs;
  int rank, lane;
  // std::string keeps short names inline (no allocation) and frees callers from lifetime rules.
  std::string name, cat, args;
};
// Adds spans collected elsewhere to the trace file at `path`, by the same protocol as traceFlush
// (so they share a timeline with the job's other writers of `jobId`, and the file stays valid
// JSON). Independent of BATON_TRACE and of the buffer above: baton's profiler plugin writes its
// events with it; `dropped` counts spans its writer had to leave out. False when the file could not
// be written (a WARN, once).
bool traceWriteSpans(const char* path, uint64_t jobId, const std::vector<TraceRecord>& spans, uint64_t dropped = 0);

// Records the enclosing scope as one event, for host code:
//   TraceSpan span(comm->rank, kTraceHostLane, "ncclAllReduce", "api");
// `name` and `cat` must stay valid until the span ends (string literals, typically).
class TraceSpan {
 public:
  TraceSpan(int rank, int lane, const char* name, const char* cat)
      : rank_(rank), lane_(lane), name_(name), cat_(cat), on_(traceEnabled()), startNs_(on_ ? traceNowNs() : 0) {}
  ~TraceSpan() {
    if (on_) traceComplete(rank_, lane_, name_, cat_, startNs_, traceNowNs());
  }
  TraceSpan(const TraceSpan&) = delete;
  TraceSpan& operator=(const TraceSpan&) = delete;

 private:
  int rank_, lane_;
  const char* name_;
  const char* cat_;
  bool on_;
  uint64_t startNs_;
};

// ---- Test hook (tests only) -------------------------------------------------------------------
// Because traceEnabled() reads BATON_TRACE once per process, tests redirect the module here
// instead: `path` replaces the file (nullptr turns tracing off), the buffer, drop count, last job
// id and the warned-once flag are reset, and `maxEvents` replaces the buffer's cap.
void traceSetPathForTest(const char* path, size_t maxEvents = kTraceMaxEvents);

}  // namespace baton

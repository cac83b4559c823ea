// BATON_TRACE: the event buffer, the Chrome JSON writer and the file protocol that lets several
// processes of one job share one trace file (trace.h).
#include "misc/trace.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "misc/debug.h"
#include "misc/param.h"

namespace baton {
namespace {

using TraceEvent = TraceRecord;

struct TraceState {
  std::mutex mu;  // guards the fields below; held only briefly, recording threads wait on it
  std::vector<TraceEvent> events;
  size_t maxEvents = kTraceMaxEvents;
  uint64_t dropped = 0;       // since the last flush
  uint64_t droppedTotal = 0;  // for the warning
  std::string path;
  bool haveJob = false;
  uint64_t lastJob = 0;
  // Held for a whole flush (taken before mu): two threads flushing at once would otherwise be
  // free to write their batches in the opposite order from the one they took them in.
  std::mutex flushMu;
};

std::atomic<bool> gEnabled{false};
std::atomic<bool> gWarned{false};
std::atomic<bool> gWarnedDrops{false};

// Never destroyed: the exit-time flush and threads still recording during exit may use it after
// static destructors have run.
TraceState& state() {
  static TraceState* s = [] {
    auto* st = new TraceState();
    // A forked child inherits the parent's buffer, which the parent will write itself; the child
    // starts empty. Holding both locks across fork keeps the child from inheriting a held mutex.
    pthread_atfork([] { state().flushMu.lock(), state().mu.lock(); },
                   [] { state().mu.unlock(), state().flushMu.unlock(); },
                   [] {
                     TraceState& c = state();
                     c.events.clear();
                     c.dropped = 0;
                     c.mu.unlock(), c.flushMu.unlock();
                   });
    return st;
  }();
  return *s;
}

// A job id for a process that records but never calls traceFlush: unique, so its file is its own.
uint64_t processJobId() {
  static const uint64_t id = (uint64_t(getpid()) << 32) ^ traceNowNs();
  return id;
}

void flushAtExit() {
  TraceState& s = state();
  uint64_t job;
  {
    std::lock_guard<std::mutex> lk(s.mu);
    job = s.haveJob ? s.lastJob : processJobId();
  }
  traceFlush(job);
}

void registerExitFlush() {
  static std::once_flag once;
  std::call_once(once, [] { atexit(flushAtExit); });
}

bool initFromEnv() {
  const std::string p = envStr("BATON_TRACE");
  if (!p.empty()) {
    TraceState& s = state();
    {
      std::lock_guard<std::mutex> lk(s.mu);
      s.path = p;
    }
    gEnabled.store(true, std::memory_order_release);
    registerExitFlush();
  }
  return true;
}

void warnOnce(const char* what, const std::string& path, int err) {
  if (gWarned.exchange(true)) return;
  BATON_WARN("BATON_TRACE: cannot %s %s: %s; trace events are dropped", what, path.c_str(), strerror(err));
}

void appendEscaped(std::string& out, const char* s) {
  for (; *s; ++s) {
    const unsigned char c = static_cast<unsigned char>(*s);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char u[8];
      snprintf(u, sizeof u, "\\u%04x", c);
      out += u;
    } else {
      out += static_cast<char>(c);
    }
  }
}

// Microseconds with 3 decimals, exact (no floating point): Chrome's unit with ns resolution.
void appendMicros(std::string& out, uint64_t ns) {
  char b[32];
  snprintf(b, sizeof b, "%" PRIu64 ".%03u", ns / 1000, static_cast<unsigned>(ns % 1000));
  out += b;
}

int jsonPid(int rank) { return rank + 1; }
int jsonTid(int lane) { return lane + 2; }

void appendLaneName(std::string& out, int lane) {
  if (lane == kTraceHostLane) out += "host";
  else if (lane >= 0 && lane < 64) out += "channel " + std::to_string(lane);
  else if (lane == kTraceCollLane) out += "collectives (profiler)";
  else if (lane >= kTracePartLane && lane < kTracePartLane + 64)
    out += "channel " + std::to_string(lane - kTracePartLane) + " parts (profiler)";
  else if (lane >= kTraceNetSendLane && lane < kTraceNetSendLane + 64)
    out += "channel " + std::to_string(lane - kTraceNetSendLane) + " NET sends (profiler)";
  else if (lane >= kTraceNetRecvLane && lane < kTraceNetRecvLane + 64)
    out += "channel " + std::to_string(lane - kTraceNetRecvLane) + " NET receives (profiler)";
  else out += "lane " + std::to_string(lane);
}

void appendEvent(std::string& out, const TraceEvent& e) {
  out += "{\"name\":\"";
  appendEscaped(out, e.name.c_str());
  out += "\",\"cat\":\"";
  appendEscaped(out, e.cat.c_str());
  out += "\",\"ph\":\"X\",\"pid\":" + std::to_string(jsonPid(e.rank)) + ",\"tid\":" + std::to_string(jsonTid(e.lane));
  out += ",\"ts\":";
  appendMicros(out, e.startNs);
  out += ",\"dur\":";
  appendMicros(out, e.endNs > e.startNs ? e.endNs - e.startNs : 0);
  if (!e.args.empty()) out += ",\"args\":{" + e.args + "}";
  out += "},\n";
}

// Names for every rank and lane in the batch. Repeated by every flush, so a batch stays readable
// even when another process started the file over in between; duplicates are harmless.
void appendMetadata(std::string& out, const std::vector<TraceEvent>& batch, uint64_t dropped) {
  std::set<int> ranks;
  std::set<std::pair<int, int>> lanes;
  for (const TraceEvent& e : batch) ranks.insert(e.rank), lanes.insert({e.rank, e.lane});
  for (int r : ranks) {
    const std::string pid = std::to_string(jsonPid(r));
    out += "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + pid + ",\"args\":{\"name\":\"rank " +
           std::to_string(r) + "\"}},\n";
    out +=
        "{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":" + pid + ",\"args\":{\"sort_index\":" + pid + "}},\n";
  }
  for (auto [r, l] : lanes) {
    const std::string ids = "\"pid\":" + std::to_string(jsonPid(r)) + ",\"tid\":" + std::to_string(jsonTid(l));
    out += "{\"name\":\"thread_name\",\"ph\":\"M\"," + ids + ",\"args\":{\"name\":\"";
    appendLaneName(out, l);
    out += "\"}},\n";
    out += "{\"name\":\"thread_sort_index\",\"ph\":\"M\"," + ids +
           ",\"args\":{\"sort_index\":" + std::to_string(jsonTid(l)) + "}},\n";
  }
  if (dropped) {
    const int pid = ranks.empty() ? 0 : jsonPid(*ranks.begin());
    out += "{\"name\":\"baton_trace_dropped\",\"ph\":\"M\",\"pid\":" + std::to_string(pid) +
           ",\"args\":{\"dropped\":" + std::to_string(dropped) + "}},\n";
  }
}

bool writeAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

std::string jobHeader(uint64_t jobId) {
  char b[96];
  snprintf(b, sizeof b, "[\n{\"name\":\"baton_job\",\"ph\":\"M\",\"pid\":0,\"args\":{\"job\":\"%016" PRIx64 "\"}},\n",
           jobId);
  return b;
}

// Every flush ends the file with this: one last object without a comma and the closing bracket, so
// the file is valid JSON between flushes and at exit (python3 -m json.tool, jq). The next flush,
// of this process or another of the job, cuts it off under the lock and appends after the events.
const char kTrailer[] = "{\"name\":\"baton_trace_end\",\"ph\":\"M\",\"pid\":0,\"args\":{}}\n]\n";

// Under the file lock: keeps the file when it already belongs to `jobId` (positioned at its end,
// before the trailer), otherwise empties it and writes this job's header.
bool claimFile(int fd, uint64_t jobId) {
  const std::string header = jobHeader(jobId);
  std::string head(header.size(), '\0');
  ssize_t n;
  do n = pread(fd, head.data(), head.size(), 0);
  while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(header.size()) && head == header) {
    const off_t end = lseek(fd, 0, SEEK_END);
    const off_t tl = static_cast<off_t>(sizeof kTrailer - 1);
    if (end < 0) return false;
    std::string tail(static_cast<size_t>(tl), '\0');
    if (end >= tl && pread(fd, tail.data(), tail.size(), end - tl) == tl && tail == kTrailer)
      return ftruncate(fd, end - tl) == 0 && lseek(fd, end - tl, SEEK_SET) >= 0;
    return true;  // a file written before the trailer existed: append as before
  }
  return ftruncate(fd, 0) == 0 && lseek(fd, 0, SEEK_SET) == 0 && writeAll(fd, header);
}

// Appends `batch` to the file at `path` for job `jobId` under the file lock (claimFile's protocol).
bool writeBatch(const std::string& path, uint64_t jobId, const std::vector<TraceEvent>& batch, uint64_t dropped) {
  bool ok = false;
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    warnOnce("open", path, errno);
  } else {
    int rc;
    do rc = flock(fd, LOCK_EX);
    while (rc != 0 && errno == EINTR);
    if (rc != 0 || !claimFile(fd, jobId)) {
      warnOnce("lock or start", path, errno);
    } else {
      // One metadata block, then the events in pieces of about 1 MiB to bound the extra memory.
      std::string out;
      out.reserve(1 << 20);
      appendMetadata(out, batch, dropped);
      ok = true;
      for (const TraceEvent& e : batch) {
        appendEvent(out, e);
        if (out.size() >= (1 << 20)) {
          if (!(ok = writeAll(fd, out))) break;
          out.clear();
        }
      }
      if (ok) ok = writeAll(fd, out + kTrailer);
      if (!ok) warnOnce("write", path, errno);
    }
    close(fd);  // also releases the lock
  }
  return ok;
}

}  // namespace

bool traceEnabled() {
  static const bool init = initFromEnv();
  (void)init;
  return gEnabled.load(std::memory_order_relaxed);
}

uint64_t traceNowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

void traceComplete(int rank, int lane, const char* name, const char* cat, uint64_t startNs, uint64_t endNs,
                   const char* argsJson) {
  if (!traceEnabled()) return;
  // Built outside the lock so recording threads only contend for the push itself.
  TraceEvent e{startNs, endNs, rank, lane, name ? name : "", cat ? cat : "", argsJson ? argsJson : ""};
  TraceState& s = state();
  std::lock_guard<std::mutex> lk(s.mu);
  if (s.events.size() >= s.maxEvents) {
    ++s.dropped, ++s.droppedTotal;
    return;
  }
  s.events.push_back(std::move(e));
}

bool traceFlush(uint64_t jobId) {
  if (!traceEnabled()) return true;
  TraceState& s = state();
  std::lock_guard<std::mutex> flk(s.flushMu);
  std::vector<TraceEvent> batch;
  std::string path;
  uint64_t dropped, droppedTotal;
  size_t cap;
  {
    std::lock_guard<std::mutex> lk(s.mu);
    s.haveJob = true, s.lastJob = jobId;
    batch.swap(s.events);
    dropped = s.dropped, droppedTotal = s.droppedTotal, cap = s.maxEvents;
    s.dropped = 0;
    path = s.path;
  }
  if (batch.empty() && dropped == 0) return true;
  // Once per process: a full buffer stays full for the rest of a run, so every flush would repeat it.
  if (dropped && !gWarnedDrops.exchange(true))
    BATON_WARN("BATON_TRACE: event buffer full (%zu events), %" PRIu64
               " dropped before this flush; the count is in "
               "the trace's baton_trace_dropped events",
               cap, droppedTotal);

  const bool ok = writeBatch(path, jobId, batch, dropped);
  // Hand the emptied vector back so its capacity is reused by the next batch.
  batch.clear();
  std::lock_guard<std::mutex> lk(s.mu);
  if (s.events.empty() && s.events.capacity() < batch.capacity()) s.events.swap(batch);
  return ok;
}

bool traceWriteSpans(const char* path, uint64_t jobId, const std::vector<TraceRecord>& spans, uint64_t dropped) {
  if (!path || !*path) return false;
  return (spans.empty() && !dropped) || writeBatch(path, jobId, spans, dropped);
}

void traceSetPathForTest(const char* path, size_t maxEvents) {
  traceEnabled();  // reads the environment now, so it cannot override this later
  TraceState& s = state();
  std::lock_guard<std::mutex> flk(s.flushMu);
  {
    std::lock_guard<std::mutex> lk(s.mu);
    s.path = path ? path : "";
    s.events.clear();
    s.maxEvents = maxEvents;
    s.dropped = s.droppedTotal = 0;
    s.haveJob = false, s.lastJob = 0;
  }
  gWarned.store(false), gWarnedDrops.store(false);
  gEnabled.store(path && *path, std::memory_order_release);
  if (path && *path) registerExitFlush();
}

}  // namespace baton

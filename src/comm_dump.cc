// A communicator's dump (comm_dump.h): what tools/baton-doctor reads to say which rank a job waits
// for. The JSON's fields are listed in docs/fault-tolerance.md ("Flight recorder and dumps").
#include "comm_dump.h"

#include <errno.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "comm.h"
#include "comm_error.h"
#include "comm_registry.h"
#include "misc/debug.h"
#include "misc/json_text.h"
#include "misc/param.h"
#include "task.h"

namespace baton {

namespace {
uint64_t clockNs(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

const char* kindName(uint8_t k) {
  switch (k) {
    case kFlightColl: return "coll";
    case kFlightSend: return "send";
    case kFlightRecv: return "recv";
    case kFlightAlltoAll: return "alltoall";
    default: return "?";
  }
}
const char* buffersName(uint8_t b) {
  switch (b) {
    case kFlightPlain: return "plain";
    case kFlightRegistered: return "registered";
    case kFlightWindow: return "window";
    case kFlightDevice: return "device";
    default: return "?";
  }
}
const char* waitStateName(uint64_t s) {
  switch (s) {
    case 0: return "none";
    case 1: return "waiting";
    case 1 + kWaitAborted: return "stopped (abort flag)";
    case 1 + kWaitTimeout: return "timed out";
    case 1 + kWaitPeerDead: return "peer died";
    case 1 + kWaitPeerFailed: return "peer failed";
    default: return "gave up";
  }
}

void addRecord(std::string& out, const FlightRecord& r) {
  out += '{';
  jsonFieldU(out, "tag", r.tag);
  jsonField(out, "kind", kindName(r.op.kind));
  jsonFieldU(out, "seq", r.op.seq);
  if (r.op.kind == kFlightColl) {
    jsonField(out, "op", funcName(r.op.func));
    jsonField(out, "redop", opName((RedOpKind)r.op.redop));
    jsonField(out, "root", r.op.root);
    jsonField(out, "algo", algoName((CollAlgo)r.op.algo));
    jsonField(out, "proto", protoName(r.op.proto));
  } else {
    jsonField(out, "op", r.op.kind == kFlightSend ? "Send" : r.op.kind == kFlightRecv ? "Recv" : "AlltoAll");
    if (r.op.kind != kFlightAlltoAll) jsonField(out, "peer", r.op.peer);
  }
  jsonFieldU(out, "count", r.op.count);
  jsonField(out, "type", typeName((ncclDataType_t)r.op.type));
  jsonField(out, "channels", r.op.channels);
  jsonField(out, "buffers", buffersName(r.op.buffers));
  jsonFieldU(out, "enqueue_ns", r.enqueueNs);
  jsonFieldU(out, "start_ns", r.startNs);
  jsonFieldU(out, "end_ns", r.endNs);
  jsonField(out, "state", r.result ? "failed" : r.done ? "done" : r.startNs ? "running" : "queued");
  if (r.result) jsonField(out, "result", ncclGetErrorString((ncclResult_t)r.result));
  jsonClose(out, '}');
}

void addChannel(std::string& out, ncclComm* comm, int c, const FlightChannelView& v) {
  out += '{';
  jsonField(out, "id", c);
  jsonFieldU(out, "running_tag", v.running);
  jsonFieldU(out, "last_tag", v.last);
  const WaitNote& n = v.note;
  out += "\"wait\":{";
  jsonField(out, "state", waitStateName(n.state));
  if (n.state) {
    jsonField(out, "peer", (long long)n.peer - 1);
    jsonField(out, "what", n.what ? reinterpret_cast<const char*>((uintptr_t)n.what) : "?");
    jsonFieldU(out, "expected", n.expected);
    jsonFieldU(out, "observed", n.observed);
    jsonFieldU(out, "since_ns", n.sinceNs);
    jsonFieldU(out, "last_ns", n.lastNs);
  }
  jsonClose(out, '}');
  out += ',';
  if (c < (int)comm->channels.size()) {  // the ring's neighbours and its FIFOs' counters
    const Channel& ch = *comm->channels[c];
    const int n = (int)ch.ringUserRanks.size();
    out += "\"ring\":{";
    if (n > 0) {
      jsonField(out, "prev", ch.ringUserRanks[(ch.ringIndex + n - 1) % n]);
      jsonField(out, "next", ch.ringUserRanks[(ch.ringIndex + 1) % n]);
    }
    if (ch.ringSend.fifo) {  // steps this rank posted, and the next rank consumed
      jsonFieldU(out, "send_tail", loadAcquire(&ch.ringSend.fifo->tail));
      jsonFieldU(out, "send_head", loadAcquire(&ch.ringSend.fifo->head));
    }
    if (ch.ringRecv.fifo) {  // steps the previous rank posted, and this rank consumed
      jsonFieldU(out, "recv_tail", loadAcquire(&ch.ringRecv.fifo->tail));
      jsonFieldU(out, "recv_head", loadAcquire(&ch.ringRecv.fifo->head));
    }
    jsonClose(out, '}');
  }
  jsonClose(out, '}');
}

std::string dumpText(ncclComm* comm, const char* reason) {
  std::vector<FlightRecord> records;
  std::vector<FlightChannelView> channels;
  if (comm->flight) comm->flight->snapshot(&records, &channels);
  // The host as baton tells hosts apart (NCCL_HOSTID where set: namespaced hosts share a host name).
  char host[256] = "";
  const std::string hostId = envStr("NCCL_HOSTID");
  if (!hostId.empty()) snprintf(host, sizeof host, "%s", hostId.c_str());
  else gethostname(host, sizeof host - 1);
  char id[32];
  snprintf(id, sizeof id, "%016llx", (unsigned long long)comm->commHash);
  std::string out = "{";
  jsonField(out, "format", "baton-flight-recorder");
  jsonField(out, "version", 1);
  jsonField(out, "comm", id);
  jsonField(out, "rank", comm->rank);
  jsonField(out, "nranks", comm->nRanks);
  jsonField(out, "host", host);
  jsonField(out, "pid", (long long)getpid());
  jsonField(out, "reason", reason);
  // Times below are CLOCK_MONOTONIC; these two, read together, put them on the wall clock.
  jsonFieldU(out, "mono_ns", clockNs(CLOCK_MONOTONIC));
  jsonFieldU(out, "realtime_ns", clockNs(CLOCK_REALTIME));
  jsonFieldU(out, "wait_timeout_ns", comm->tun.waitTimeoutNs);
  jsonFieldU(out, "op_count", comm->opCount);
  jsonFieldU(out, "recorder_entries", comm->flight ? comm->flight->capacity() : 0);
  jsonFieldU(out, "recorded", comm->flight ? comm->flight->recorded() : 0);
  const int err = comm->asyncError.load();
  jsonField(out, "error_code", err);
  jsonField(out, "error", commFirstError(comm).c_str());
  jsonField(out, "failure_cause", (long long)comm->failureCause.load() - 1);
  out += "\"channels\":[";
  for (size_t c = 0; c < channels.size(); ++c) addChannel(out, comm, (int)c, channels[c]), out += ',';
  jsonClose(out, ']');
  out += ",\"ops\":[\n";
  for (const FlightRecord& r : records) addRecord(out, r), out += ",\n";
  if (!records.empty()) out.pop_back(), out.pop_back();
  out += "\n]}\n";
  return out;
}

// mkdir -p: the folder and the ones above it.
bool makeFolder(const std::string& dir) {
  for (size_t i = 1; i <= dir.size(); ++i) {
    if (i < dir.size() && dir[i] != '/') continue;
    const std::string part = dir.substr(0, i);
    if (mkdir(part.c_str(), 0777) != 0 && errno != EEXIST) return false;
  }
  struct stat st;
  return stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
}  // namespace

ncclResult_t commDumpState(ncclComm* comm, const char* reason, const char* dirArg, std::string* pathOut) {
  std::string dir = dirArg && *dirArg ? dirArg : envStr("BATON_DUMP_DIR");
  if (dir.empty())
    return batonError(ncclInvalidArgument, "batonCommDumpState: no folder: dir is NULL and BATON_DUMP_DIR is not set");
  if (!makeFolder(dir))
    return batonError(ncclSystemError, "rank %d: dump folder '%s' cannot be made: %s", comm->rank, dir.c_str(),
                      strerror(errno));
  char name[96];
  snprintf(name, sizeof name, "/baton-dump-%016llx-rank%d.json", (unsigned long long)comm->commHash, comm->rank);
  const std::string path = dir + name;
  // Written aside and renamed, so a reader never sees half a dump of this rank.
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  const std::string text = dumpText(comm, reason);
  FILE* f = fopen(tmp.c_str(), "w");
  if (!f)
    return batonError(ncclSystemError, "rank %d: cannot write a dump in '%s': %s", comm->rank, dir.c_str(),
                      strerror(errno));
  const bool ok = fwrite(text.data(), 1, text.size(), f) == text.size();
  if (fclose(f) != 0 || !ok || rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    unlink(tmp.c_str());
    return batonError(ncclSystemError, "rank %d: writing dump '%s' failed: %s", comm->rank, path.c_str(), strerror(e));
  }
  BATON_INFO(kSubInit, "rank %d: flight recorder of comm %p (%s) written to %s", comm->rank, (void*)comm, reason,
             path.c_str());
  if (pathOut) *pathOut = path;
  return ncclSuccess;
}

void commDumpIfAsked(ncclComm* comm, const char* reason) {
  if (!envSet("BATON_DUMP_DIR") || comm->initState.load() != ncclSuccess) return;
  if (commDumpState(comm, reason, nullptr) != ncclSuccess) BATON_WARN("%s (the job continues)", lastError());
}

namespace {
sem_t gDumpSem;
void onDumpSignal(int) { sem_post(&gDumpSem); }  // async-signal-safe: the dumper thread does the work

// "SIGUSR1", "USR1" or a number; 0 if none of them.
int parseSignal(const std::string& s) {
  static const struct {
    const char* name;
    int sig;
  } kNames[] = {{"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"HUP", SIGHUP}, {"QUIT", SIGQUIT}, {"PWR", SIGPWR}};
  std::string n = s.rfind("SIG", 0) == 0 ? s.substr(3) : s;
  for (const auto& k : kNames)
    if (n == k.name) return k.sig;
  char* end = nullptr;
  const long v = strtol(n.c_str(), &end, 10);
  return !n.empty() && *end == 0 && v > 0 && v < NSIG && v != SIGKILL && v != SIGSTOP ? (int)v : 0;
}
}  // namespace

void dumpSignalSetup() {
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string s = envStr("BATON_DUMP_SIGNAL");
    if (s.empty()) return;
    const int sig = parseSignal(s);
    if (!sig) {
      BATON_WARN("BATON_DUMP_SIGNAL=%s is not a signal (use e.g. SIGUSR1, USR2 or a number): no dump on signal",
                 s.c_str());
      return;
    }
    sem_init(&gDumpSem, 0, 0);
    std::thread([] {
      for (;;) {
        while (sem_wait(&gDumpSem) != 0) {}
        forEachReadyComm([](ncclComm* comm) { commDumpIfAsked(comm, "signal"); });
      }
    }).detach();
    struct sigaction sa = {};
    sa.sa_handler = onDumpSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(sig, &sa, nullptr);
    BATON_INFO(kSubInit, "BATON_DUMP_SIGNAL: signal %d dumps every communicator of this process to %s", sig,
               envSet("BATON_DUMP_DIR") ? envStr("BATON_DUMP_DIR").c_str() : "(BATON_DUMP_DIR unset: nowhere)");
  });
}

}  // namespace baton

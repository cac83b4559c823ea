// The RAS status's text and JSON (status_report.h). The text follows the layout of NCCL's
// `ncclras` output (job summary, communicator groups, errors, warnings) so a person who knows one
// reads the other; the JSON carries NCCL's field names, and baton's additions beside them.
#include "ras/status_report.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <map>
#include <set>
#include <utility>

#include "misc/json_text.h"
#include "nccl.h"

namespace baton {

namespace {

void add(std::string& out, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void add(std::string& out, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  out += buf;
}

const char* plural(size_t n, const char* one, const char* many) { return n == 1 ? one : many; }

// NCCL's RAS counts, in its order.
constexpr int kCountOrder[] = {kFuncBroadcast, kFuncReduce, kFuncAllGather, kFuncReduceScatter, kFuncAllReduce};

bool answered(const RasRankView& r) { return r.kind == RasRankView::kPresent; }
bool missing(const RasRankView& r) { return r.kind != RasRankView::kPresent && r.kind != RasRankView::kLeft; }

const char* rankStatus(const RasRankView& r) {
  if (r.kind == RasRankView::kLeft) return "NOCOMM";
  if (!answered(r)) return "UNKNOWN";
  const RasRankState& s = r.state;
  if (s.initState == ncclInProgress) return "INIT";
  if (s.flags & kRasAborted) return "ABORT";
  if (s.flags & kRasFinalized) return "FINALIZE";
  return "RUNNING";
}

struct CommFacts {
  std::string status = "RUNNING";
  bool statusMismatch = false, countMismatch = false, incomplete = false, error = false;
  int nodes = 0, minPerNode = 0, maxPerNode = 0;
  std::string errors() const {
    if (error) return "ERROR";
    if (incomplete) return "INCOMPLETE";
    if (statusMismatch || countMismatch) return "MISMATCH";
    return "OK";
  }
};

CommFacts factsOf(const RasCommView& c) {
  CommFacts f;
  std::map<std::string, int> perNode, statuses;
  std::set<uint64_t> counts[kFuncCount];
  for (const RasRankView& r : c.ranks) {
    if (!r.node.empty()) ++perNode[r.node];
    if (missing(r)) f.incomplete = true;
    if (!answered(r)) continue;
    ++statuses[rankStatus(r)];
    if (r.state.asyncError != ncclSuccess && r.state.asyncError != ncclInProgress) f.error = true;
    for (int k = 0; k < kFuncCount; ++k) counts[k].insert(r.state.collCount[k]);
  }
  for (int k = 0; k < kFuncCount; ++k) f.countMismatch |= counts[k].size() > 1;
  f.statusMismatch = statuses.size() > 1;
  int best = 0;
  for (const auto& [s, n] : statuses)
    if (n > best) best = n, f.status = s;
  f.nodes = (int)perNode.size();
  for (const auto& [node, n] : perNode) {
    f.minPerNode = f.minPerNode ? std::min(f.minPerNode, n) : n;
    f.maxPerNode = std::max(f.maxPerNode, n);
  }
  return f;
}

// A rank named in a warning: where it runs, and (baton's addition) its last collective, which
// tells a rank that never called the next one from one still inside it.
std::string rankWhere(const RasRankView& r) {
  char buf[320];
  int n = snprintf(buf, sizeof buf, "Rank %d -- process %d on node %s", r.state.rank >= 0 ? r.state.rank : 0, r.pid,
                   r.node.empty() ? "?" : r.node.c_str());
  if (r.state.lastFunc >= 0 && n > 0 && n < (int)sizeof buf)
    snprintf(buf + n, sizeof buf - n, "; last collective %s #%llu, %s", rasCollName(r.state.lastFunc),
             (unsigned long long)r.state.lastSeq, r.state.flags & kRasLastDone ? "done" : "in flight");
  return buf;
}

void jobSummary(std::string& out, const RasJobView& job) {
  std::set<std::string> nodes;
  std::map<std::pair<std::string, int>, std::set<std::pair<uint64_t, int>>> procs;  // process: its ranks
  for (const RasCommView& c : job.comms)
    for (const RasRankView& r : c.ranks) {
      if (r.node.empty() || !r.pid) continue;
      nodes.insert(r.node);
      procs[{r.node, r.pid}].insert({c.hash, (int)(&r - c.ranks.data())});
    }
  std::map<std::string, int> procsPerNode;
  size_t minRanks = 0, maxRanks = 0;
  for (const auto& [p, ranks] : procs) {
    ++procsPerNode[p.first];
    minRanks = minRanks ? std::min(minRanks, ranks.size()) : ranks.size();
    maxRanks = std::max(maxRanks, ranks.size());
  }
  int minP = 0, maxP = 0;
  for (const auto& [n, k] : procsPerNode) minP = minP ? std::min(minP, k) : k, maxP = std::max(maxP, k);
  auto range = [](long a, long b) { return a == b ? std::to_string(a) : std::to_string(a) + "-" + std::to_string(b); };
  out += "Job summary\n===========\n\n";
  out += "    Nodes  Processes        Ranks  Processes  Communicators\n";
  out += "  (total)   per node  per process    (total)        (total)\n";
  add(out, "%9zu %10s %12s %10zu %14zu\n\n", nodes.size(), range(minP, maxP).c_str(),
      range((long)minRanks, (long)maxRanks).c_str(), procs.size(), job.comms.size());
}

}  // namespace

const char* rasCollName(int func) {
  switch (func) {
    case kFuncAllReduce: return "AllReduce";
    case kFuncBroadcast: return "Broadcast";
    case kFuncReduce: return "Reduce";
    case kFuncAllGather: return "AllGather";
    case kFuncReduceScatter: return "ReduceScatter";
    default: return "none";
  }
}

std::string rasStatusText(const RasJobView& job, bool verbose) {
  std::string out;
  jobSummary(out, job);
  add(out, "Communicators... (%.2fs)\n=============\n\n", job.collectSec);
  // Groups: communicators alike in size, spread, status and errors.
  std::vector<CommFacts> facts;
  for (const RasCommView& c : job.comms) facts.push_back(factsOf(c));
  std::map<std::string, std::vector<size_t>> groups;
  std::vector<std::string> order;
  auto perNode = [](const CommFacts& f) {
    return f.minPerNode == f.maxPerNode ? std::to_string(f.minPerNode)
                                        : std::to_string(f.minPerNode) + "-" + std::to_string(f.maxPerNode);
  };
  for (size_t i = 0; i < job.comms.size(); ++i) {
    const CommFacts& f = facts[i];
    const std::string key = std::to_string(job.comms[i].nRanks) + "/" + std::to_string(f.nodes) + "/" + perNode(f) +
                            "/" + f.status + "/" + f.errors();
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(i);
  }
  out += "Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors\n";
  out += "    #  in group  per comm  per node  per comm  in group\n";
  std::vector<std::string> label(job.comms.size());
  for (size_t g = 0; g < order.size(); ++g) {
    const std::vector<size_t>& members = groups[order[g]];
    const CommFacts& f = facts[members[0]];
    add(out, "%5zu %9zu %9d %9s %9d %9zu %9s  %s\n", g, members.size(), f.nodes, perNode(f).c_str(),
        job.comms[members[0]].nRanks, members.size() * job.comms[members[0]].nRanks, f.status.c_str(),
        f.errors().c_str());
    for (size_t k = 0; k < members.size(); ++k) {
      char id[64];
      snprintf(id, sizeof id, "#%zu-%zu (%016llx)", g, k, (unsigned long long)job.comms[members[k]].hash);
      label[members[k]] = id;
    }
  }

  // Errors: dead processes, then per communicator the missing ranks and the asynchronous errors.
  std::string errors, warnings;
  std::map<std::pair<std::string, int>, std::string> deadProcs;  // (node, pid) -> ranks
  for (const RasCommView& c : job.comms)
    for (size_t r = 0; r < c.ranks.size(); ++r)
      if (c.ranks[r].kind == RasRankView::kDead) {
        std::string& s = deadProcs[{c.ranks[r].node, c.ranks[r].pid}];
        if (s.empty()) s = c.ranks[r].why;
      }
  if (!deadProcs.empty()) {
    add(errors, "DEAD\n  %zu job %s considered dead (its watchdog connections closed or went silent)\n",
        deadProcs.size(), plural(deadProcs.size(), "process is", "processes are"));
    for (const auto& [p, why] : deadProcs)
      add(errors, "  Process %d on node %s: %s\n", p.second, p.first.empty() ? "?" : p.first.c_str(), why.c_str());
    errors += "\n";
  }
  for (size_t i = 0; i < job.comms.size(); ++i) {
    const RasCommView& c = job.comms[i];
    std::vector<int> miss, failed;
    for (size_t r = 0; r < c.ranks.size(); ++r) {
      if (missing(c.ranks[r])) miss.push_back((int)r);
      if (answered(c.ranks[r]) && c.ranks[r].state.asyncError != ncclSuccess &&
          c.ranks[r].state.asyncError != ncclInProgress)
        failed.push_back((int)r);
    }
    if (!miss.empty()) {
      add(errors, "%s INCOMPLETE\n  Missing communicator data from %zu %s\n  The missing %s:", label[i].c_str(),
          miss.size(), plural(miss.size(), "rank", "ranks"), plural(miss.size(), "rank", "ranks"));
      for (int r : miss) add(errors, " %d", r);
      errors += "\n";
      for (int r : miss) {
        const RasRankView& v = c.ranks[r];
        const char* state = v.kind == RasRankView::kDead           ? "dead"
                            : v.kind == RasRankView::kUnresponsive ? "did not answer in time"
                                                                   : "not reachable";
        add(errors, "  Rank %d -- process %d on node %s: %s%s%s\n", r, v.pid, v.node.empty() ? "?" : v.node.c_str(),
            state, v.why.empty() ? "" : " (", v.why.empty() ? "" : (v.why + ")").c_str());
      }
      errors += "\n";
    }
    if (!failed.empty()) {
      add(errors, "%s ERROR\n", label[i].c_str());
      for (int r : failed)
        add(errors, "  Rank %d reports %s (asynchronous error %d)\n", r,
            ncclGetErrorString((ncclResult_t)c.ranks[r].state.asyncError), c.ranks[r].state.asyncError);
      errors += "\n";
    }
  }

  // Warnings: ranks that disagree on their status or on how many collectives they launched.
  for (size_t i = 0; i < job.comms.size(); ++i) {
    const RasCommView& c = job.comms[i];
    for (int k : kCountOrder) {
      std::map<uint64_t, std::vector<int>> byCount;
      for (size_t r = 0; r < c.ranks.size(); ++r)
        if (answered(c.ranks[r])) byCount[c.ranks[r].state.collCount[k]].push_back((int)r);
      if (byCount.size() < 2) continue;
      size_t largest = 0;
      for (const auto& [n, ranks] : byCount) largest = std::max(largest, ranks.size());
      add(warnings, "%s MISMATCH\n  Communicator ranks have different %s operation counts\n", label[i].c_str(),
          rasCollName(k));
      for (auto it = byCount.rbegin(); it != byCount.rend(); ++it) {
        add(warnings, "  %zu %s launched up to operation %llu\n", it->second.size(),
            plural(it->second.size(), "rank has", "ranks have"), (unsigned long long)it->first);
        // The outliers by name: a smaller group than the largest, at most 10 unless verbose.
        if (it->second.size() == largest && byCount.size() > 1 && !verbose) continue;
        size_t shown = 0;
        for (int r : it->second) {
          if (!verbose && ++shown > 10) break;
          add(warnings, "  %s\n", rankWhere(c.ranks[r]).c_str());
        }
      }
      warnings += "\n";
    }
    std::map<std::string, std::vector<int>> byStatus;
    for (size_t r = 0; r < c.ranks.size(); ++r)  // the missing ranks are errors already
      if (answered(c.ranks[r])) byStatus[rankStatus(c.ranks[r])].push_back((int)r);
    if (byStatus.size() > 1) {
      add(warnings, "%s MISMATCH\n  Communicator ranks have different status\n", label[i].c_str());
      for (const auto& [st, ranks] : byStatus) {
        add(warnings, "  %zu %s status %s:", ranks.size(), plural(ranks.size(), "rank has", "ranks have"), st.c_str());
        for (int r : ranks) add(warnings, " %d", r);
        warnings += "\n";
      }
      warnings += "\n";
    }
    // baton's addition: whom a stalled rank waits for (the flight recorder's wait notes), the
    // first thing to look at when counts stop moving between queries.
    std::string waits;
    for (size_t r = 0; r < c.ranks.size(); ++r) {
      const RasRankView& v = c.ranks[r];
      if (!answered(v) || !(v.state.flags & kRasWaiting) || (!verbose && v.state.waitMs < 1000)) continue;
      add(waits, "  Rank %zu waits for data from rank %d for %.1f s, in %s #%llu\n", r, v.state.waitPeer,
          v.state.waitMs / 1e3, rasCollName(v.state.lastFunc), (unsigned long long)v.state.lastSeq);
    }
    if (!waits.empty()) add(warnings, "%s STALLED\n%s\n", label[i].c_str(), waits.c_str());
  }
  if (job.timeouts > 0)
    add(warnings, "TIMEOUT\n  Encountered %d communication %s while gathering communicator data\n\n", job.timeouts,
        plural((size_t)job.timeouts, "timeout", "timeouts"));

  if (verbose) {
    out += "\nRanks\n=====\n";
    for (size_t i = 0; i < job.comms.size(); ++i) {
      const RasCommView& c = job.comms[i];
      add(out, "\n%s, %d ranks\n", label[i].c_str(), c.nRanks);
      add(out, "%6s %-16s %8s %9s %10s %10s %10s %10s %10s  %s\n", "Rank", "Node", "Process", "Status", "Broadcast",
          "Reduce", "AllGather", "RedScat", "AllReduce", "Last collective");
      for (size_t r = 0; r < c.ranks.size(); ++r) {
        const RasRankView& v = c.ranks[r];
        add(out, "%6zu %-16.16s %8d %9s", r, v.node.empty() ? "?" : v.node.c_str(), v.pid, rankStatus(v));
        if (!answered(v)) {
          out += "\n";
          continue;
        }
        for (int k : kCountOrder) add(out, " %10llu", (unsigned long long)v.state.collCount[k]);
        if (v.state.lastFunc >= 0)
          add(out, "  %s #%llu %s", rasCollName(v.state.lastFunc), (unsigned long long)v.state.lastSeq,
              v.state.flags & kRasLastDone ? "done" : "in flight");
        out += "\n";
      }
    }
  }
  out += "\n";
  if (!errors.empty()) out += "Errors\n======\n\n" + errors;
  if (!warnings.empty()) out += "Warnings\n========\n\n" + warnings;
  return out;
}

std::string rasStatusJson(const RasJobView& job) {
  std::string out = "{";
  jsonField(out, "nccl_version",
            (std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + "." + std::to_string(NCCL_PATCH)).c_str());
  jsonField(out, "library", "baton");
  jsonField(out, "timestamp", job.timestamp.c_str());
  jsonField(out, "communicators_count", (long long)job.comms.size());
  jsonKey(out, "communicators");
  out += "[";
  for (const RasCommView& c : job.comms) {
    out += "{";
    char hash[32];
    snprintf(hash, sizeof hash, "0x%016llx", (unsigned long long)c.hash);
    jsonField(out, "hash", hash);
    jsonField(out, "size", c.nRanks);
    long long present = 0, miss = 0;
    for (const RasRankView& r : c.ranks) present += answered(r), miss += missing(r);
    jsonField(out, "ranks_count", present);
    jsonField(out, "missing_ranks_count", miss);
    jsonKey(out, "ranks");
    out += "[";
    for (const RasRankView& r : c.ranks) {
      if (!answered(r)) continue;
      const RasRankState& s = r.state;
      out += "{";
      jsonField(out, "rank", s.rank);
      jsonField(out, "host", r.node.c_str());
      jsonField(out, "pid", r.pid);
      jsonField(out, "cuda_dev", -1);  // the CPU backend's ranks hold no device
      jsonField(out, "nvml_dev", -1);
      jsonKey(out, "status");
      out += "{";
      jsonField(out, "init_state", s.initState);
      jsonField(out, "async_error", s.asyncError);
      jsonFieldBool(out, "finalize_called", s.flags & kRasFinalized);
      jsonFieldBool(out, "destroy_flag", false);  // a destroyed rank has left: it is not listed
      jsonFieldBool(out, "abort_flag", s.flags & kRasAborted);
      jsonClose(out, '}'), out += ',';
      jsonKey(out, "collective_counts");
      out += "{";
      for (int k : kCountOrder) jsonFieldU(out, rasCollName(k), s.collCount[k]);
      jsonClose(out, '}'), out += ',';
      jsonKey(out, "last_collective");
      if (s.lastFunc < 0) out += "null,";
      else {
        out += "{";
        jsonField(out, "op", rasCollName(s.lastFunc));
        jsonFieldU(out, "seq", s.lastSeq);
        jsonFieldBool(out, "done", s.flags & kRasLastDone);
        jsonClose(out, '}'), out += ',';
      }
      jsonKey(out, "waiting_on");
      if (!(s.flags & kRasWaiting)) out += "null,";
      else {
        out += "{";
        jsonField(out, "rank", s.waitPeer);
        jsonFieldU(out, "ms", s.waitMs);
        jsonClose(out, '}'), out += ',';
      }
      jsonClose(out, '}'), out += ',';
    }
    jsonClose(out, ']'), out += ',';
    jsonKey(out, "missing_ranks");
    out += "[";
    for (size_t r = 0; r < c.ranks.size(); ++r) {
      const RasRankView& v = c.ranks[r];
      if (!missing(v)) continue;
      out += "{";
      jsonField(out, "rank", (long long)r);
      jsonField(out, "host", v.node.c_str());
      jsonField(out, "pid", v.pid);
      jsonField(out, "cuda_dev", -1);
      jsonField(out, "nvml_dev", -1);
      jsonKey(out, "status");
      out += "{";
      jsonFieldBool(out, "unresponsive", v.kind == RasRankView::kUnresponsive);
      jsonFieldBool(out, "considered_dead", v.kind == RasRankView::kDead);
      jsonClose(out, '}'), out += ',';
      jsonField(out, "why", v.why.c_str());
      jsonClose(out, '}'), out += ',';
    }
    jsonClose(out, ']');
    out += "},";
  }
  jsonClose(out, ']'), out += ',';
  jsonKey(out, "ras");
  out += "{";
  char secs[32];
  snprintf(secs, sizeof secs, "%.3f", job.collectSec);
  jsonString(out, "collection_time_sec"), out += ':', out += secs, out += ',';
  jsonField(out, "timeouts_count", job.timeouts);
  jsonClose(out, '}');
  out += "}\n";
  return out;
}

}  // namespace baton

// --compare stages: named steps of baton's staged algorithms, or raw environment settings.
//
// A stage is a list of KEY=VAL settings. Before each stage's communicators are created, every key
// that any stage of the list sets is first put back to the value it had when baton-perf started
// (unset if it was unset), then the stage's own keys are set: stages never leak into each other,
// and a key no stage names keeps the user's value throughout. baton reads these variables when a
// communicator is initialised, so fresh communicators per stage are what makes them take effect.
#include <cstdlib>
#include <map>
#include <optional>

#include "baton_perf.h"

namespace batonperf {
namespace {

struct NamedStage {
  const char* name;
  std::vector<std::pair<std::string, std::string>> env;
};

const std::vector<NamedStage>& namedStages() {
  static const std::vector<NamedStage> stages = {
      {"naive", {{"BATON_ALLREDUCE_ALGO", "naive"}}},
      // Lesson 09: -R 0, 1, 2 as stages (the R key is baton-perf's own, not an environment variable).
      {"fifo", {{"R", "0"}, {"BATON_SINGLE_COPY", "0"}}},  // plain buffers through the FIFO only
      {"plain", {{"R", "0"}}},
      {"registered", {{"R", "1"}}},
      {"window", {{"R", "2"}}},
      {"ring", {{"BATON_ALLREDUCE_ALGO", "ring"}}},
      // One slot in flight and one-step chunks: chains run stop-and-wait; rings get the 2 slots
      // they need to avoid a cycle of waits (src/enqueue.cc, lesson 03).
      {"stopwait", {{"BATON_ALLREDUCE_ALGO", "ring"}, {"BATON_FIFO_DEPTH", "1"}, {"BATON_CHUNK_STEPS", "1"}}},
      {"pipelined", {{"BATON_FIFO_DEPTH", "8"}}},
      // Protocols (lesson 04) and the tuner's own choice (lesson 05).
      {"LL", {{"NCCL_PROTO", "LL"}}},
      {"LL128", {{"NCCL_PROTO", "LL128"}}},
      {"Simple", {{"NCCL_PROTO", "Simple"}}},
      {"tuned", {{"NCCL_PROTO", ""}, {"NCCL_ALGO", ""}}},
      // Algorithms (lesson 07): a ring or a tree for AllReduce, per protocol (what --calibrate times).
      {"ring-LL", {{"NCCL_ALGO", "allreduce:Ring"}, {"NCCL_PROTO", "LL"}}},
      {"ring-LL128", {{"NCCL_ALGO", "allreduce:Ring"}, {"NCCL_PROTO", "LL128"}}},
      {"ring-Simple", {{"NCCL_ALGO", "allreduce:Ring"}, {"NCCL_PROTO", "Simple"}}},
      {"tree", {{"NCCL_ALGO", "allreduce:Tree"}}},
      {"tree-LL", {{"NCCL_ALGO", "allreduce:Tree"}, {"NCCL_PROTO", "LL"}}},
      {"tree-LL128", {{"NCCL_ALGO", "allreduce:Tree"}, {"NCCL_PROTO", "LL128"}}},
      {"tree-Simple", {{"NCCL_ALGO", "allreduce:Tree"}, {"NCCL_PROTO", "Simple"}}},
      // AlltoAll algorithms (lesson 12): every peer at once, n-1 rounds of pairs, log2 n rounds,
      // stores into the peers' windows (which needs the buffers in one: -R 2).
      {"direct", {{"BATON_ALLTOALL_ALGO", "direct"}}},
      {"pairwise", {{"BATON_ALLTOALL_ALGO", "pairwise"}}},
      {"bruck", {{"BATON_ALLTOALL_ALGO", "bruck"}}},
      {"a2a-window", {{"BATON_ALLTOALL_ALGO", "window"}, {"R", "2"}}},
      {"a2a-auto", {{"BATON_ALLTOALL_ALGO", "auto"}}},
  };
  return stages;
}

bool validKey(const std::string& k) {
  if (k.empty() || (k[0] >= '0' && k[0] <= '9')) return false;
  for (char c : k)
    if (!(c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return false;
  return true;
}

std::string validList() {
  std::string s;
  for (const NamedStage& n : namedStages()) s += std::string(n.name) + ", ";
  return s + "or KEY=VAL[+KEY=VAL...]";
}

}  // namespace

std::string stageNames() {
  std::string s;
  for (const NamedStage& n : namedStages()) s += (s.empty() ? "" : " ") + std::string(n.name);
  return s;
}

bool parseStages(const std::string& list, std::vector<Stage>* out, std::string* err) {
  out->clear();
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = list.find(',', start);
    const std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? list.size() + 1 : comma + 1;
    Stage st;
    st.name = item;
    if (item.find('=') == std::string::npos) {
      bool found = false;
      for (const NamedStage& n : namedStages())
        if (item == n.name) st.env = n.env, found = true;
      if (!found) {
        *err = (item.empty() ? std::string("empty stage name") : "unknown stage '" + item + "'") +
               "; valid stages: " + validList();
        return false;
      }
    } else {
      size_t p = 0;
      while (p <= item.size()) {
        const size_t plus = item.find('+', p);
        const std::string kv = item.substr(p, plus == std::string::npos ? std::string::npos : plus - p);
        p = plus == std::string::npos ? item.size() + 1 : plus + 1;
        const size_t eq = kv.find('=');
        if (eq == std::string::npos || !validKey(kv.substr(0, eq))) {
          *err = "stage '" + item + "': '" + kv + "' is not KEY=VAL; valid stages: " + validList();
          return false;
        }
        st.env.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
      }
    }
    // R=0|1|2 selects the stage's buffers (-R); it is not put in the environment.
    for (auto it = st.env.begin(); it != st.env.end();) {
      if (it->first != "R") {
        ++it;
        continue;
      }
      if (it->second != "0" && it->second != "1" && it->second != "2") {
        *err = "stage '" + item + "': R=" + it->second + " is not 0, 1 or 2 (as -R)";
        return false;
      }
      st.localRegister = it->second[0] - '0';
      it = st.env.erase(it);
    }
    out->push_back(std::move(st));
  }
  return true;
}

void applyStageEnv(const std::vector<Stage>& all, const Stage& s) {
  static std::map<std::string, std::optional<std::string>> original;  // captured before the first stage
  for (const Stage& st : all)
    for (const auto& kv : st.env)
      if (!original.count(kv.first)) {
        const char* v = std::getenv(kv.first.c_str());
        original[kv.first] = v ? std::optional<std::string>(v) : std::nullopt;
      }
  for (const auto& [key, value] : original) {
    if (value) setenv(key.c_str(), value->c_str(), 1);
    else unsetenv(key.c_str());
  }
  for (const auto& kv : s.env) setenv(kv.first.c_str(), kv.second.c_str(), 1);
}

std::string stageEnvText(const Stage& s) {
  std::string t;
  for (const auto& kv : s.env) t += (t.empty() ? "" : " ") + kv.first + "=" + kv.second;
  if (s.localRegister >= 0) t += (t.empty() ? "-R " : " -R ") + std::to_string(s.localRegister);
  return t;
}

}  // namespace batonperf

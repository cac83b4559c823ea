// The RAS client protocol's lines (client_protocol.h).
#include "ras/client_protocol.h"

#include <strings.h>

#include <cstdlib>
#include <cstring>

namespace baton {

namespace {

bool startsWith(const std::string& line, const char* word) {
  return strncasecmp(line.c_str(), word, strlen(word)) == 0;
}

std::string trimmed(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r')) --e;
  return s.substr(b, e - b);
}

}  // namespace

RasAction rasOnLine(RasSession& s, const std::string& raw, std::string* reply) {
  const std::string line = trimmed(raw);
  reply->clear();
  if (startsWith(line, "client protocol ")) {
    // Any version is answered with ours; the client warns on a difference and goes on (as NCCL's).
    *reply = "SERVER PROTOCOL " + std::to_string(kRasClientProtocol) + "\n";
    return RasAction::kReply;
  }
  if (startsWith(line, "timeout ")) {
    const std::string v = trimmed(line.substr(strlen("timeout ")));
    char* end = nullptr;
    const long secs = strtol(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || secs < 0) *reply = "ERROR: Invalid timeout value " + v + "\n";
    else s.timeoutSec = (double)secs, *reply = "OK\n";
    return RasAction::kReply;
  }
  if (startsWith(line, "set format ")) {
    const std::string f = trimmed(line.substr(strlen("set format ")));
    if (strcasecmp(f.c_str(), "text") == 0) s.json = false, *reply = "OK\n";
    else if (strcasecmp(f.c_str(), "json") == 0) s.json = true, *reply = "OK\n";
    else *reply = "ERROR: Invalid format " + f + "\n";
    return RasAction::kReply;
  }
  if (strcasecmp(line.c_str(), "status") == 0) return RasAction::kStatus;
  if (strcasecmp(line.c_str(), "verbose status") == 0) {
    s.verbose = true;
    return RasAction::kStatus;
  }
  if (strcasecmp(line.c_str(), "monitor") == 0 || startsWith(line, "monitor ")) {
    unsigned groups = 0;
    std::string spec = trimmed(line.substr(strlen("monitor")));
    if (spec.empty()) groups = kRasLifecycle;
    size_t at = 0;
    while (!spec.empty() && at <= spec.size()) {
      const size_t comma = spec.find(',', at);
      const std::string tok = trimmed(spec.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
      if (strcasecmp(tok.c_str(), "lifecycle") == 0) groups |= kRasLifecycle;
      else if (strcasecmp(tok.c_str(), "trace") == 0) groups |= kRasTrace;
      else if (strcasecmp(tok.c_str(), "all") == 0) groups |= kRasLifecycle | kRasTrace;
      else {
        *reply = "ERROR: Invalid event group '" + tok + "'\n";
        return RasAction::kReply;
      }
      if (comma == std::string::npos) break;
      at = comma + 1;
    }
    s.monitorGroups = groups;
    *reply = "OK\n";
    return RasAction::kMonitor;
  }
  *reply = "ERROR: Unknown command " + line + "\n";
  return RasAction::kReply;
}

}  // namespace baton

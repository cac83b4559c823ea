// NCCL_DEBUG / NCCL_DEBUG_SUBSYS logging and the process-wide last-error message.
#include "misc/debug.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <strings.h>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "misc/param.h"

namespace baton {
namespace {

struct LogConfig {
  int level = kLogNone;
  uint64_t mask = kSubInit | kSubBootstrap | kSubEnv;
  FILE* out = stdout;
  char host[64] = "";
};

uint64_t subsysBit(const char* name) {
  static const struct {
    const char* n;
    uint64_t b;
  } kNames[] = {{"INIT", kSubInit},
                {"COLL", kSubColl},
                {"P2P", kSubP2p},
                {"SHM", kSubShm},
                {"NET", kSubNet},
                {"GRAPH", kSubGraph},
                {"TUNING", kSubTuning},
                {"ENV", kSubEnv},
                {"ALLOC", kSubAlloc},
                {"CALL", kSubCall},
                {"PROXY", kSubProxy},
                {"NVLS", 0x800},
                {"BOOTSTRAP", kSubBootstrap},
                {"REG", 0x2000},
                {"PROFILE", 0x4000},
                {"RAS", 0x8000},
                {"ALL", kSubAll}};
  for (auto& e : kNames)
    if (strcasecmp(e.n, name) == 0) return e.b;
  return 0;
}

// The logger's own three variables come from the process environment, not through an env plugin
// (env_plugin.h): the plugin's loading is reported through the configuration they make.
std::string processEnv(const char* name) {
  const char* v = getenv(name);
  return v ? v : "";
}

LogConfig readConfig() {
  LogConfig c;
  if (const std::string level = processEnv("NCCL_DEBUG"); !level.empty()) {
    const char* lv = level.c_str();
    if (!strcasecmp(lv, "VERSION")) c.level = kLogVersion;
    else if (!strcasecmp(lv, "WARN")) c.level = kLogWarn;
    else if (!strcasecmp(lv, "INFO")) c.level = kLogInfo;
    else if (!strcasecmp(lv, "ABORT")) c.level = kLogAbort;
    else if (!strcasecmp(lv, "TRACE")) c.level = kLogTrace;
  }
  if (const std::string subsys = processEnv("NCCL_DEBUG_SUBSYS"); !subsys.empty()) {
    const char* s = subsys.c_str();
    bool invert = s[0] == '^';
    uint64_t m = 0;
    std::string list(invert ? s + 1 : s);
    size_t pos = 0;
    while (pos <= list.size()) {
      size_t comma = list.find(',', pos);
      if (comma == std::string::npos) comma = list.size();
      m |= subsysBit(list.substr(pos, comma - pos).c_str());
      pos = comma + 1;
    }
    c.mask = invert ? ~m : m;
  }
  if (const std::string file = processEnv("NCCL_DEBUG_FILE"); !file.empty()) {
    const char* f = file.c_str();
    std::string path;
    for (const char* p = f; *p; ++p) {  // %h host, %p pid, as NCCL
      if (p[0] == '%' && p[1] == 'h') {
        char h[64];
        gethostname(h, sizeof h);
        path += h;
        ++p;
      } else if (p[0] == '%' && p[1] == 'p') {
        path += std::to_string(getpid());
        ++p;
      } else path += *p;
    }
    if (FILE* fp = fopen(path.c_str(), "w")) c.out = fp;
  }
  gethostname(c.host, sizeof c.host - 1);
  return c;
}

std::mutex gConfigMu;
std::atomic<LogConfig*> gConfig{nullptr};

// Read on every logging check (once per operation at least): lock-free once the config exists.
LogConfig& config() {
  if (LogConfig* c = gConfig.load(std::memory_order_acquire)) return *c;
  std::lock_guard<std::mutex> lk(gConfigMu);
  if (!gConfig.load(std::memory_order_relaxed)) gConfig.store(new LogConfig(readConfig()), std::memory_order_release);
  return *gConfig.load(std::memory_order_relaxed);
}

std::mutex gErrMu;
char gLastError[1024] = "";

}  // namespace

void resetLogConfig() {
  // ncclResetDebugInit (deprecated, rare): the old config and its file stay alive because another
  // thread may be logging through them at this moment; the next check reads the environment anew.
  // They are kept, not dropped, so the memory stays reachable (LeakSanitizer, make test-asan), and
  // never freed: a detached thread (a bootstrap root) may still log while the process exits.
  static auto* retired = new std::vector<LogConfig*>;
  std::lock_guard<std::mutex> lk(gConfigMu);
  retired->push_back(gConfig.exchange(nullptr, std::memory_order_acq_rel));
}

bool logEnabled(LogLevel level, uint64_t subsys) {
  LogConfig& c = config();
  return c.level >= level && (level <= kLogWarn || (c.mask & subsys));
}

namespace {
void vlog(LogLevel level, const char* file, int line, const char* fmt, va_list ap) {
  LogConfig& c = config();
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  const char* tag = level == kLogWarn ? "WARN" : level == kLogTrace ? "TRACE" : "INFO";
  const long tid = syscall(SYS_gettid);
  if (level == kLogWarn) {
    const char* base = strrchr(file, '/');
    fprintf(c.out, "\n%s:%d:%ld [baton] NCCL %s %s:%d %s\n", c.host, getpid(), tid, tag, base ? base + 1 : file, line,
            msg);
  } else {
    fprintf(c.out, "%s:%d:%ld [baton] NCCL %s %s\n", c.host, getpid(), tid, tag, msg);
  }
  fflush(c.out);
}
}  // namespace

void logMessage(LogLevel level, uint64_t subsys, const char* file, int line, const char* fmt, ...) {
  if (!logEnabled(level, subsys)) return;
  va_list ap;
  va_start(ap, fmt);
  vlog(level, file, line, fmt, ap);
  va_end(ap);
}

void logMessageV(LogLevel level, uint64_t subsys, const char* file, int line, const char* fmt, va_list ap) {
  if (logEnabled(level, subsys)) vlog(level, file, line, fmt, ap);
}

void showVersion(const char* (*backends)()) {
  static std::once_flag once;
  std::call_once(once, [backends] {
    LogConfig& c = config();
    if (c.level < kLogVersion) return;
    Dl_info info{};
    const char* path = dladdr(reinterpret_cast<void*>(&showVersion), &info) && info.dli_fname ? info.dli_fname : "?";
    const char* backend = backends();
    if (c.level >= kLogInfo) {
      logMessage(kLogInfo, kSubAll, __FILE__, __LINE__, "NCCL version %d.%d.%d+baton (%s) from %s", NCCL_MAJOR,
                 NCCL_MINOR, NCCL_PATCH, backend, path);
    } else {
      fprintf(c.out, "NCCL version %d.%d.%d+baton (%s) from %s\n", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, backend, path);
      fflush(c.out);
    }
  });
}

bool& quietErrors() {
  thread_local bool quiet = false;
  return quiet;
}

ncclResult_t batonErrorAt(ncclResult_t code, const char* file, int line, const char* fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (quietErrors()) {
    logMessage(kLogInfo, kSubBootstrap, file, line, "%s", msg);
    return code;
  }
  {
    std::lock_guard<std::mutex> lk(gErrMu);
    snprintf(gLastError, sizeof gLastError, "%s", msg);
  }
  logMessage(kLogWarn, kSubAll, file, line, "%s", msg);
  return code;
}

const char* lastError() {
  // The message is copied per thread so a caller can keep the pointer while others fail.
  thread_local char copy[1024];
  std::lock_guard<std::mutex> lk(gErrMu);
  memcpy(copy, gLastError, sizeof copy);
  return copy;
}

}  // namespace baton

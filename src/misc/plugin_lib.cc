#include "misc/plugin_lib.h"

#include <dlfcn.h>
#include <link.h>
#include <strings.h>

#include <atomic>
#include <cstdarg>
#include <cstring>

#include "misc/debug.h"
#include "misc/param.h"

namespace baton {

namespace {

const char* const kPrefix[] = {"libnccl-net", "libnccl-tuner", "libnccl-profiler", "libnccl-env"};
const uint64_t kSubsys[] = {kSubInit | kSubNet, kSubInit | kSubTuning, kSubInit, kSubInit | kSubEnv};

bool endsWith(const std::string& s, const char* tail) {
  const size_t n = strlen(tail);
  return s.size() >= n && s.compare(s.size() - n, n, tail) == 0;
}

}  // namespace

const char* pluginKindName(PluginKind kind) {
  static const char* const names[] = {"NET", "TUNER", "PROFILER", "ENV"};
  return names[kind];
}

std::vector<std::string> pluginCandidates(PluginKind kind, const char* name) {
  if (!name || !*name) return {std::string(kPrefix[kind]) + ".so"};
  const std::string n = name;
  std::vector<std::string> out{n};
  // A bare word is a short name: "foo" also tries libnccl-tuner-foo.so. A path or a library's own
  // file name is taken as it is.
  const bool isPath = n.find('/') != std::string::npos;
  const bool isLibName = n.rfind("lib", 0) == 0 && endsWith(n, ".so");
  if (!isPath && !isLibName) out.push_back(std::string(kPrefix[kind]) + "-" + n + ".so");
  return out;
}

bool openPluginLib(PluginKind kind, const char* name, PluginLib* out) {
  std::string notFound;
  for (const std::string& file : pluginCandidates(kind, name)) {
    const bool self = strcasecmp(file.c_str(), "STATIC_PLUGIN") == 0;
    void* h = dlopen(self ? nullptr : file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h) {
      out->handle = h;
      out->file = file;
      struct link_map* lm = nullptr;
      out->path = dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && *lm->l_name ? lm->l_name : file;
      return true;
    }
    const char* err = dlerror();
    if (err && strstr(err, "No such file or directory")) notFound += " " + file;
    else
      BATON_INFO(kSubsys[kind], "%s/Plugin: %s: %s", pluginKindName(kind), file.c_str(), err ? err : "dlopen failed");
  }
  if (!notFound.empty())
    BATON_INFO(kSubsys[kind], "%s/Plugin: Could not find:%s", pluginKindName(kind), notFound.c_str());
  return false;
}

std::string besideThisLibrary(const char* file) {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&besideThisLibrary), &info) || !info.dli_fname) return "";
  const std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1) + file;
}

SharedPluginLib::Use SharedPluginLib::acquire(PluginKind kind, const char* envVar, const char* symbols,
                                              const std::function<bool(void*)>& bind, const std::string& implied) {
  static const char* const lower[] = {"net", "tuner", "profiler", "env"};
  std::lock_guard<std::mutex> lock(mu_);
  if (failed_) return kNone;
  if (loaded_) return ++refs_, kAgain;  // still mapped, whether or not others use it now
  const std::string nameStr = envStr(envVar);
  if (nameStr.empty() && !implied.empty())
    BATON_INFO(kSubsys[kind], "%s/Plugin: %s unset: loading %s", pluginKindName(kind), envVar, implied.c_str());
  const char* name = !nameStr.empty() ? nameStr.c_str() : !implied.empty() ? implied.c_str() : nullptr;
  if (!nameStr.empty()) BATON_INFO(kSubsys[kind] | kSubEnv, "%s set by environment to %s", envVar, name);
  if (name && strcasecmp(name, "none") == 0) return failed_ = true, kNone;
  if (!openPluginLib(kind, name, &lib_)) return openNetPluginLib(kind, bind) ? kFirst : kNone;
  if (!bind(lib_.handle)) {
    BATON_INFO(kSubsys[kind],
               "%s/Plugin: %s exports no %s (or one with a null function): external %s plugin %s is unsupported",
               pluginKindName(kind), lib_.path.c_str(), symbols, lower[kind], lib_.file.c_str());
    return failed_ = true, kNone;
  }
  loaded_ = true, refs_ = 1;
  return kFirst;
}

namespace {
std::atomic<std::string (*)()> netLibSource{nullptr};
}  // namespace

void setNetPluginLibSource(std::string (*source)()) { netLibSource.store(source); }

// Under mu_. Quiet when the network plugin's library has no such table: it need not carry one.
bool SharedPluginLib::openNetPluginLib(PluginKind kind, const std::function<bool(void*)>& bind) {
  failed_ = true;
  auto* source = netLibSource.load();
  const std::string net = (kind == kPluginTuner || kind == kPluginProfiler) && source ? source() : "";
  void* h = net.empty() ? nullptr : dlopen(net.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) return false;
  if (!bind(h)) return false;  // mapped once more; stays so, as every plugin library (openPluginLib)
  lib_ = PluginLib{h, net, net};
  BATON_INFO(kSubsys[kind], "%s/Plugin: no %s library of its own: using the network plugin's, %s", pluginKindName(kind),
             pluginKindName(kind), net.c_str());
  failed_ = false, loaded_ = true, refs_ = 1;
  return true;
}

bool SharedPluginLib::release() {
  std::lock_guard<std::mutex> lock(mu_);
  return refs_ > 0 && --refs_ == 0;
}

void pluginLogger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  // ABORT is a WARN the core acts on; a plugin's VERSION line is printed as INFO.
  const LogLevel l = level == NCCL_LOG_WARN || level == NCCL_LOG_ABORT ? kLogWarn
                     : level == NCCL_LOG_TRACE                         ? kLogTrace
                     : level == NCCL_LOG_NONE                          ? kLogNone
                                                                       : kLogInfo;
  if (l != kLogNone) logMessageV(l, flags ? flags : kSubAll, file ? file : "plugin", line, fmt ? fmt : "", ap);
  va_end(ap);
}

}  // namespace baton

// Finding and opening an NCCL plugin library the way NCCL 2.28 does (its src/plugin/plugin_open.cc),
// so NCCL_TUNER_PLUGIN=<x> means in baton what it means in NCCL:
//   unset          libnccl-<kind>.so
//   a name         the name itself (dlopen's search, or a path), then libnccl-<kind>-<name>.so
//                  unless the name is a path or already reads lib*.so
//   STATIC_PLUGIN  the program itself (a plugin linked into the application)
// Files not found are listed in one INFO line; a file that exists but does not load is an INFO line
// with dlerror's words. Lesson 16 (docs/lessons/16-plugins.md).
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "baton/plugin_common.h"

namespace baton {

enum PluginKind : int { kPluginNet = 0, kPluginTuner = 1, kPluginProfiler = 2, kPluginEnv = 3 };
const char* pluginKindName(PluginKind kind);  // "NET", "TUNER", "PROFILER", "ENV" (NCCL's INFO prefixes)

// The file names tried for `name` (null or empty: unset), in order.
std::vector<std::string> pluginCandidates(PluginKind kind, const char* name);

struct PluginLib {
  void* handle = nullptr;
  std::string file;  // the name that opened
  std::string path;  // where the loader found it (the program's own for STATIC_PLUGIN)
};
// Opens the first candidate that loads (RTLD_NOW | RTLD_LOCAL); false when none does. There is no
// close: a plugin library stays mapped until the process exits, because unmapping a library with
// thread-local storage while other threads run can trip glibc (tuner_plugin.cc says more).
bool openPluginLib(PluginKind kind, const char* name, PluginLib* out);

// `file` in the folder of the library holding this code (libnccl.so.2, or a program linking the
// archive); "" when that folder is unknown. Plugins baton ships sit beside it.
std::string besideThisLibrary(const char* file);

// One kind's plugin library for the whole process, as NCCL keeps it: loaded by the first user
// (communicator), counted by its users, never unmapped (see openPluginLib), and not tried again in
// this process after a load that failed. The tuner and profiler hosts keep one each.
class SharedPluginLib {
 public:
  enum Use { kNone, kFirst, kAgain };  // no plugin for this user; loaded now; loaded before
  // One more user. The first reads `envVar` (NCCL_<KIND>_PLUGIN, through the env plugin; "none":
  // no plugin), opens the library by the name rules and calls `bind` under the lock to find its
  // symbols; when bind says false, one INFO line calls the library unsupported for lack of
  // `symbols`, and there is no plugin.
  // `implied`: the library to load when `envVar` is unset (BATON_TRACE implies baton's profiler),
  // instead of the default libnccl-<kind>.so.
  Use acquire(PluginKind kind, const char* envVar, const char* symbols, const std::function<bool(void*)>& bind,
              const std::string& implied = "");
  // One user fewer; true for the last (the caller says so in its own words).
  bool release();
  const PluginLib& lib() const { return lib_; }

 private:
  bool openNetPluginLib(PluginKind kind, const std::function<bool(void*)>& bind);
  std::mutex mu_;
  int refs_ = 0;
  bool failed_ = false, loaded_ = false;
  PluginLib lib_;
};

// NCCL's last resort for a tuner or profiler library: when NCCL_<KIND>_PLUGIN's library (or the
// default one) is not found, the network plugin's library is searched for the symbols (a vendor's
// network plugin often carries its tuner). The NET layer, which loads network plugins, names that
// library through `source` (empty: none); SharedPluginLib::acquire asks it.
void setNetPluginLibSource(std::string (*source)());

// The logger handed to plugins at init: NCCL_DEBUG and NCCL_DEBUG_SUBSYS apply as to baton's own lines.
void pluginLogger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));

}  // namespace baton

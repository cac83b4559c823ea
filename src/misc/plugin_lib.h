// Finding and opening an NCCL plugin library the way NCCL 2.28 does (its src/plugin/plugin_open.cc),
// so NCCL_TUNER_PLUGIN=<x> means in baton what it means in NCCL:
//   unset          libnccl-<kind>.so
//   a name         the name itself (dlopen's search, or a path), then libnccl-<kind>-<name>.so
//                  unless the name is a path or already reads lib*.so
//   STATIC_PLUGIN  the program itself (a plugin linked into the application)
// Files not found are listed in one INFO line; a file that exists but does not load is an INFO line
// with dlerror's words. Lesson 16 (docs/lessons/16-plugins.md).
#pragma once

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

// The logger handed to plugins at init: NCCL_DEBUG and NCCL_DEBUG_SUBSYS apply as to baton's own lines.
void pluginLogger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));

}  // namespace baton

// libnccl-tuner-baton.so reads its host process's environment: the host library (NVIDIA's NCCL, or
// baton) owns the env plugin, if any, and this plugin carries baton's parameter parsing without it.
#include <cstdlib>

#include "misc/env_plugin.h"

namespace baton {

const char* envLookup(const char* name) { return getenv(name); }
bool envPluginLoaded() { return false; }

}  // namespace baton

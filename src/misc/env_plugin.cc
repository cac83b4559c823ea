#include "misc/env_plugin.h"

#include <dlfcn.h>
#include <strings.h>

#include <atomic>
#include <cstdlib>
#include <mutex>

#include "baton/plugin_env.h"
#include "misc/debug.h"
#include "misc/plugin_lib.h"

namespace baton {

namespace {

struct EnvPlugin {
  PluginLib lib;
  const ncclEnv_v1_t* api = nullptr;
  std::atomic<bool> active{false};  // loaded and initialised, not finalized yet
};
EnvPlugin& envPlugin() {
  static EnvPlugin* p = new EnvPlugin;  // never destroyed: threads may read the environment at exit
  return *p;
}
std::once_flag loadOnce;
// The loading thread's own reads (the loader's INFO lines read NCCL_* knobs) skip the plugin.
thread_local bool loadingHere = false;

void finalizeAtExit() {
  EnvPlugin& p = envPlugin();
  if (!p.active.exchange(false)) return;
  BATON_INFO(kSubInit | kSubEnv, "ENV/Plugin: Closing env plugin %s", p.api->name ? p.api->name : "(unnamed)");
  if (p.api->finalize) p.api->finalize();
  // The library stays mapped: a thread may still be inside getEnv.
}

void load() {
  loadingHere = true;
  EnvPlugin& p = envPlugin();
  const char* name = getenv("NCCL_ENV_PLUGIN");  // as NCCL: the plugin's own name is the process's
  if (name) BATON_INFO(kSubEnv, "NCCL_ENV_PLUGIN set by environment to %s", name);
  if (!(name && strcasecmp(name, "none") == 0) && openPluginLib(kPluginEnv, name, &p.lib)) {
    const auto* api = static_cast<const ncclEnv_v1_t*>(dlsym(p.lib.handle, "ncclEnvPlugin_v1"));
    if (!api || !api->init || !api->getEnv) {
      BATON_INFO(kSubInit | kSubEnv,
                 "ENV/Plugin: %s exports no ncclEnvPlugin_v1 (or one with a null function): external env plugin "
                 "%s is unsupported; the process environment is read",
                 p.lib.path.c_str(), p.lib.file.c_str());  // left mapped, as every plugin library
    } else if (const ncclResult_t res = api->init(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, NCCL_SUFFIX);
               res != ncclSuccess) {
      BATON_WARN("ENV/Plugin: %s (%s): init returned %d (%s); the process environment is read",
                 api->name ? api->name : "(unnamed)", p.lib.path.c_str(), (int)res, ncclGetErrorString(res));
    } else {
      p.api = api;
      p.active.store(true, std::memory_order_release);
      atexit(finalizeAtExit);
      BATON_INFO(kSubInit | kSubEnv, "Successfully loaded external env plugin %s (%s)",
                 api->name ? api->name : "(unnamed)", p.lib.path.c_str());
    }
  }
  loadingHere = false;
}

}  // namespace

const char* envLookup(const char* name) {
  if (!loadingHere) std::call_once(loadOnce, load);
  EnvPlugin& p = envPlugin();
  return p.active.load(std::memory_order_acquire) ? p.api->getEnv(name) : getenv(name);
}

bool envPluginLoaded() {
  if (!loadingHere) std::call_once(loadOnce, load);
  return envPlugin().active.load(std::memory_order_acquire);
}

}  // namespace baton

// Finding external network plugins the way NCCL 2.28 does (its src/plugin/net.cc):
//   NCCL_NET_PLUGIN unset   libnccl-net.so
//   a comma-separated list  each name by the plugin name rules (misc/plugin_lib.h), in order
//   none                    no external plugin
// Each library's newest table (ncclNetPlugin_v11 .. _v6) is initialised once and asked for its
// devices; one that has none, fails init or exports no table is named in one INFO line and left
// out, and baton goes on with its built-in networks. Lesson 16 (docs/lessons/16-plugins.md).
#include <strings.h>

#include <sstream>

#include "misc/debug.h"
#include "misc/param.h"
#include "misc/plugin_lib.h"
#include "net/plugin/net_plugin_api.h"

namespace baton {

namespace {

constexpr uint64_t kSub = kSubInit | kSubNet;

std::vector<std::string> pluginNames() {
  const std::string env = envStr("NCCL_NET_PLUGIN");
  if (env.empty()) return {""};  // the default name
  BATON_INFO(kSub | kSubEnv, "NCCL_NET_PLUGIN set by environment to %s", env.c_str());
  if (strcasecmp(env.c_str(), "none") == 0) return {};
  std::vector<std::string> out;
  std::stringstream ss(env);
  for (std::string name; std::getline(ss, name, ',');)
    if (!name.empty()) out.push_back(name);
  return out;
}

// The first network plugin library that loaded with a table (whether or not its init then
// succeeded, as in NCCL): a tuner or profiler not found elsewhere is looked for there.
std::string& firstLib() {
  static std::string path;
  return path;
}

NetBackend* loadOne(const std::string& name) {
  PluginLib lib;
  if (!openPluginLib(kPluginNet, name.empty() ? nullptr : name.c_str(), &lib)) return nullptr;
  std::unique_ptr<PluginNetApi> api = bindPluginNet(lib.handle);
  if (api && firstLib().empty()) firstLib() = lib.path;
  if (!api) {
    BATON_INFO(kSub, "NET/Plugin: %s exports no ncclNetPlugin_v6 .. _v11: external network plugin %s is unsupported",
               lib.path.c_str(), lib.file.c_str());
    return nullptr;
  }
  const std::string label =
      std::string(api->name()) + " (" + lib.path + ", ncclNetPlugin_v" + std::to_string(api->version()) + ")";
  if (api->init() != ncclSuccess) {
    BATON_INFO(kSub, "NET/Plugin: %s: init failed; not using it", label.c_str());
    return nullptr;
  }
  int ndev = 0;
  if (api->devices(&ndev) != ncclSuccess || ndev <= 0) {
    BATON_INFO(kSub, "NET/Plugin: %s: %d devices; not using it", label.c_str(), ndev);
    return nullptr;
  }
  BATON_INFO(kSub, "NET/Plugin: Initialized %s with %d device%s", label.c_str(), ndev, ndev == 1 ? "" : "s");
  // The library stays mapped (see openPluginLib), and so does the backend: connections of every
  // communicator in the process use it.
  return makePluginNetBackend(std::move(api), lib.path).release();
}

std::string netPluginLibPath() {
  pluginNetBackends();
  return firstLib();
}

// Registered before main: the tuner and profiler hosts ask through misc/plugin_lib.
[[maybe_unused]] const bool netLibSourceSet = (setNetPluginLibSource(netPluginLibPath), true);

}  // namespace

const std::vector<NetBackend*>& pluginNetBackends() {
  static const std::vector<NetBackend*> plugins = [] {
    std::vector<NetBackend*> out;
    for (const std::string& name : pluginNames())
      if (NetBackend* b = loadOne(name)) out.push_back(b);
    return out;
  }();
  return plugins;
}

}  // namespace baton

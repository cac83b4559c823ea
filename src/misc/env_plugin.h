// NCCL's environment plugin (NCCL_ENV_PLUGIN, interface v1 of NCCL 2.28.7): when one is loaded,
// every variable the library reads through param.h is asked of the plugin instead of the process
// environment (lesson 16, docs/plugins.md). Loaded on the first read, by NCCL's name rules
// (plugin_lib.h; unset: libnccl-env.so if the loader finds one); finalized at process exit.
//
// Three variables are always read from the process environment: NCCL_ENV_PLUGIN itself (as in
// NCCL), and NCCL_DEBUG, NCCL_DEBUG_SUBSYS and NCCL_DEBUG_FILE, which configure the log lines that
// report the plugin's own loading.
#pragma once

namespace baton {

// The value of `name` from the env plugin if one is loaded, else from the process environment.
// The result is valid until the next call for the same name; copy it before then.
const char* envLookup(const char* name);

// Whether an external env plugin answers (for tests and INFO lines).
bool envPluginLoaded();

}  // namespace baton

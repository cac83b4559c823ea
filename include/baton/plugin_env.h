/* NCCL's environment plugin interface (NCCL 2.28.7 and later: version 1), for env plugins built
 * against baton. NCCL_ENV_PLUGIN names the library (docs/plugins.md); every environment variable
 * the library reads is then asked of the plugin's getEnv instead of the process environment.
 * Public source: NCCL's src/include/plugin/env/env_v1.h. */
#ifndef BATON_PLUGIN_ENV_H
#define BATON_PLUGIN_ENV_H

#include <stdint.h>

#include "nccl.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NCCL_ENV_PLUGIN_SYMBOL "ncclEnvPlugin_v1"

typedef struct {
  const char* name;
  /* Called once, before the first read, with the library's NCCL version (baton: 2.28.9, suffix ""). */
  ncclResult_t (*init)(uint8_t ncclMajor, uint8_t ncclMinor, uint8_t ncclPatch, const char* suffix);
  /* Called at process exit; no getEnv follows. */
  ncclResult_t (*finalize)(void);
  /* The value of `name`, or NULL when unset. The string must stay valid until finalize or the next
   * getEnv of the same name (baton copies it before either). */
  const char* (*getEnv)(const char* name);
} ncclEnv_v1_t;

#ifdef __cplusplus
}
#endif

#endif /* BATON_PLUGIN_ENV_H */

/* An env plugin for the plugin host's tests (tests/tools/env_plugin_test.sh), written as a third
 * party would, against include/baton/plugin_env.h alone. getEnv answers from a file of NAME=VALUE
 * lines (the file named by BATON_TEST_ENV_FILE in the process environment) and falls back to the
 * process environment for names the file does not hold. Built twice: as it is, and with
 * -DENV_FAIL_INIT, whose init fails. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baton/plugin_env.h"

#define MAX_VARS 64

#ifdef ENV_FAIL_INIT
static const int kFailInit = 1;
#else
static const int kFailInit = 0;
#endif

static char names[MAX_VARS][64], values[MAX_VARS][256];
static int nVars;

static ncclResult_t envInit(uint8_t major, uint8_t minor, uint8_t patch, const char* suffix) {
  if (kFailInit) return ncclInternalError;
  fprintf(stderr, "env plugin: init for NCCL %u.%u.%u%s\n", major, minor, patch, suffix ? suffix : "");
  const char* path = getenv("BATON_TEST_ENV_FILE");
  FILE* f = path ? fopen(path, "r") : NULL;
  if (!f) return ncclSuccess;
  char line[512];
  while (nVars < MAX_VARS && fgets(line, sizeof line, f)) {
    char* eq = strchr(line, '=');
    if (!eq || line[0] == '#') continue;
    *eq = '\0';
    line[strcspn(line, " ")] = '\0';
    eq[1 + strcspn(eq + 1, "\r\n")] = '\0';
    snprintf(names[nVars], sizeof names[nVars], "%.63s", line);
    snprintf(values[nVars], sizeof values[nVars], "%.255s", eq + 1);
    ++nVars;
  }
  fclose(f);
  return ncclSuccess;
}

static ncclResult_t envFinalize(void) {
  fprintf(stderr, "env plugin: finalize\n");
  return ncclSuccess;
}

static const char* envGet(const char* name) {
  for (int i = 0; i < nVars; ++i)
    if (strcmp(names[i], name) == 0) return values[i];
  return getenv(name);
}

__attribute__((visibility("default"))) const ncclEnv_v1_t ncclEnvPlugin_v1 = {"file", envInit, envFinalize, envGet};

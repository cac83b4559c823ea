// Reading the environment (param.h): integers, sizes and booleans, a malformed value named in a
// WARN with the default taken instead. Every read asks envLookup (NCCL's env plugin, if loaded).
#include "misc/param.h"

#include <cerrno>
#include <cstdlib>

#include "misc/debug.h"
#include "misc/env_plugin.h"

namespace baton {

namespace {
bool parseSize(const char* s, int64_t* out) {
  errno = 0;
  char* end = nullptr;
  int64_t v = strtoll(s, &end, 0);
  if (errno || end == s) return false;
  int64_t mul = 1;
  if (*end == 'k' || *end == 'K') mul = 1ll << 10, ++end;
  else if (*end == 'm' || *end == 'M') mul = 1ll << 20, ++end;
  else if (*end == 'g' || *end == 'G') mul = 1ll << 30, ++end;
  if (*end) return false;
  return !__builtin_mul_overflow(v, mul, out);  // "9999999999999999G" is not a size
}
}  // namespace

int64_t envInt(const char* name, int64_t def, EnvLog log) {
  const char* s = envLookup(name);
  if (!s || !*s) return def;
  int64_t v;
  if (!parseSize(s, &v)) {
    BATON_WARN("ignoring %s='%s': not an integer in range; using %lld", name, s, (long long)def);
    return def;
  }
  if (log == EnvLog::kInfo) BATON_INFO(kSubEnv, "%s set by environment to %lld", name, (long long)v);
  return v;
}

double envSeconds(const char* name, double def, EnvLog log) {
  const char* s = envLookup(name);
  if (!s || !*s) return def;
  errno = 0;
  char* end = nullptr;
  const double v = strtod(s, &end);
  if (errno || end == s || *end) {
    BATON_WARN("ignoring %s='%s': not a number of seconds; using %g", name, s, def);
    return def;
  }
  if (log == EnvLog::kInfo) BATON_INFO(kSubEnv, "%s set by environment to %g s", name, v);
  return v;
}

std::string envStr(const char* name, const char* def) {
  const char* s = envLookup(name);
  if (!s || !*s) return def;
  return s;
}

bool envSet(const char* name) {
  const char* s = envLookup(name);
  return s && *s;
}

}  // namespace baton

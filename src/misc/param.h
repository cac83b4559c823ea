// Environment parameters: NCCL_* names keep NCCL's meaning, BATON_* are baton's own (docs/env.md).
// Every read of the environment in the library goes through these, so a malformed value is
// reported the same way everywhere and NCCL_DEBUG_SUBSYS=ENV shows what was set.
#pragma once

#include <cstdint>
#include <string>

namespace baton {

// Whether a read is logged at INFO (ENV): values read on every operation are not.
enum class EnvLog { kInfo, kQuiet };

// Integer value of `name` (K/M/G suffixes in binary units accepted), or `def` when unset or not a
// number (a malformed value is logged at WARN).
int64_t envInt(const char* name, int64_t def, EnvLog log = EnvLog::kInfo);
// Seconds, fractions allowed ("0.5"), or `def` when unset or not a number (WARN).
double envSeconds(const char* name, double def, EnvLog log = EnvLog::kInfo);
// String value of `name`, or `def` when unset or empty.
std::string envStr(const char* name, const char* def = "");
// Whether `name` is set to a non-empty value.
bool envSet(const char* name);

}  // namespace baton

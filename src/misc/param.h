// Environment parameters: NCCL_* names keep NCCL's meaning, BATON_* are baton's own (docs/env.md).
#pragma once

#include <cstdint>
#include <string>

namespace baton {

// Integer value of `name` (K/M/G suffixes in binary units accepted), or `def` when unset or not a
// number (a malformed value is logged at WARN).
int64_t envInt(const char* name, int64_t def);
// String value of `name`, or `def` when unset or empty.
std::string envStr(const char* name, const char* def = "");

}  // namespace baton

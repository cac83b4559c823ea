// Logging (NCCL_DEBUG, NCCL_DEBUG_SUBSYS) and the last-error message behind ncclGetLastError.
//
// Every fallible host path ends in batonError(code, fmt, ...): it records a message that names the
// argument and the value, logs it at WARN, and returns the code so callers can write
//   return batonError(ncclInvalidArgument, "ncclAllReduce: count %zu overflows", count);
#pragma once

#include <cstdarg>
#include <cstdint>

#include "nccl.h"

namespace baton {

enum LogLevel { kLogNone = 0, kLogVersion = 1, kLogWarn = 2, kLogInfo = 3, kLogAbort = 4, kLogTrace = 5 };

// NCCL's subsystem bits, so NCCL_DEBUG_SUBSYS strings mean what users expect.
enum LogSubsys : uint64_t {
  kSubInit = 0x1,
  kSubColl = 0x2,
  kSubP2p = 0x4,
  kSubShm = 0x8,
  kSubNet = 0x10,
  kSubGraph = 0x20,
  kSubTuning = 0x40,
  kSubEnv = 0x80,
  kSubAlloc = 0x100,
  kSubCall = 0x200,
  kSubProxy = 0x400,
  kSubBootstrap = 0x1000,
  kSubAll = ~0ull,
};

bool logEnabled(LogLevel level, uint64_t subsys);
void logMessage(LogLevel level, uint64_t subsys, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));
// The same for a va_list: the logger NCCL hands its plugins ends here (src/misc/plugin_lib.cc).
void logMessageV(LogLevel level, uint64_t subsys, const char* file, int line, const char* fmt, va_list ap);

// NCCL's version banner, once per process (the first communicator or unique id): a plain line at
// NCCL_DEBUG=VERSION or WARN, an INFO line at INFO. It says baton and the library's file, because a
// CUDA toolkit's libnccl.so.2 reports the same version code and the loader may pick either, and the
// backends in use, which `backends` names (the caller's: src/cuda_backend.h's backendsInUse; called
// only when the banner is printed, since it opens the CUDA plugin).
void showVersion(const char* (*backends)());

// Records the message as the process's last error, logs it at WARN, returns `code`.
ncclResult_t batonErrorAt(ncclResult_t code, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));
const char* lastError();
// Set on a background thread (the bootstrap root) whose errors must not replace the message a
// caller's thread will read with ncclGetLastError.
bool& quietErrors();

}  // namespace baton

#define BATON_INFO(subsys, ...)                                                          \
  do {                                                                                   \
    if (::baton::logEnabled(::baton::kLogInfo, (subsys)))                                \
      ::baton::logMessage(::baton::kLogInfo, (subsys), __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
#define BATON_WARN(...)       ::baton::logMessage(::baton::kLogWarn, ::baton::kSubAll, __FILE__, __LINE__, __VA_ARGS__)
#define batonError(code, ...) ::baton::batonErrorAt((code), __FILE__, __LINE__, __VA_ARGS__)

// Propagate a failing ncclResult_t (ncclInProgress is not a failure).
#define BATON_CHECK(call)                                                             \
  do {                                                                                \
    ncclResult_t baton_res_ = (call);                                                 \
    if (baton_res_ != ncclSuccess && baton_res_ != ncclInProgress) return baton_res_; \
  } while (0)

// Small helpers shared by the unit tests: scoped environment variables, error-message assertions,
// a free loopback port, and a helper that times a call.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <initializer_list>
#include <string>

#include "nccl.h"

namespace bt {

// Sets (or, with nullptr, unsets) an environment variable; restores the previous value on scope
// exit. Only use it while no library thread of this test is running: setenv is not thread-safe.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = getenv(name)) hadOld_ = true, old_ = old;
    if (value) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (hadOld_) setenv(name_.c_str(), old_.c_str(), 1);
    else unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_, old_;
  bool hadOld_ = false;
};

inline std::string lastError() {
  const char* m = ncclGetLastError(nullptr);
  return m ? m : "";
}

// Checks that `msg` contains every one of `needles`; reports the whole message otherwise.
inline ::testing::AssertionResult messageHas(const std::string& msg, std::initializer_list<std::string> needles) {
  for (const std::string& n : needles)
    if (msg.find(n) == std::string::npos)
      return ::testing::AssertionFailure() << "message \"" << msg << "\" does not contain \"" << n << "\"";
  return ::testing::AssertionSuccess();
}

// EXPECT_NCCL_ERR(call, code, "substr", ...): the call returns `code` and ncclGetLastError() holds
// every substring. The message is read right after the call, before anything else can fail.
#define EXPECT_NCCL_ERR(call, code, ...)                                              \
  do {                                                                                \
    const ncclResult_t r_ = (call);                                                   \
    const std::string m_ = ::bt::lastError();                                         \
    EXPECT_EQ(r_, (code)) << #call << " -> " << ncclGetErrorString(r_) << ": " << m_; \
    EXPECT_TRUE(::bt::messageHas(m_, {__VA_ARGS__})) << #call;                        \
  } while (0)

#define ASSERT_NCCL_OK(call)                                                                              \
  do {                                                                                                    \
    const ncclResult_t r_ = (call);                                                                       \
    ASSERT_EQ(r_, ncclSuccess) << #call << " -> " << ncclGetErrorString(r_) << ": " << ::bt::lastError(); \
  } while (0)

// A TCP port on 127.0.0.1 that was free a moment ago (bound, read, closed).
inline int freeLoopbackPort() {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (s < 0 || bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (s >= 0) close(s);
    return -1;
  }
  close(s);
  return ntohs(a.sin_port);
}

inline double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace bt

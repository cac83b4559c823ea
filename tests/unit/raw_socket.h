// Raw TCP helpers for the bootstrap tests: a stranger's connection to a bootstrap listener.
#pragma once

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>

#include "misc/socket.h"
#include "unit/unit_helpers.h"

namespace bt {

// The 12 bytes every bootstrap connection starts with.
struct __attribute__((packed)) Handshake {
  uint64_t magic;
  uint32_t type;
};

inline int rawConnect(const baton::SocketAddress& a) {
  int fd = socket(a.sa.sa_family, SOCK_STREAM, 0);
  const socklen_t len = a.sa.sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  if (fd >= 0 && connect(fd, &a.sa, len) != 0) close(fd), fd = -1;
  return fd;
}

inline void rawSend(int fd, const void* p, size_t n) { ASSERT_EQ(send(fd, p, n, MSG_NOSIGNAL), (ssize_t)n); }

// True once the other side has closed the connection (EOF or reset), within `seconds`.
inline bool closedByPeer(int fd, double seconds) {
  const auto t0 = std::chrono::steady_clock::now();
  char b[256];
  while (secondsSince(t0) < seconds) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    ssize_t r = recv(fd, b, sizeof b, MSG_DONTWAIT);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) return true;
  }
  return false;
}

}  // namespace bt

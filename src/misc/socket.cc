// TCP sockets for the bootstrap and the NET back-end (socket.h): addresses, the interface choice,
// and reads and writes bounded by deadlines.
#include "misc/socket.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "exec_model.h"
#include "misc/debug.h"
#include "misc/param.h"

namespace baton {

namespace {
std::atomic<uint64_t> gLastTimeoutSec{120};
}

// Read on every bootstrap operation (tests change it at run time), so without envInt's INFO line.
uint64_t bootstrapTimeoutSec() {
  const int64_t v = envInt("BATON_BOOTSTRAP_TIMEOUT", 120, EnvLog::kQuiet);
  const uint64_t sec = v > 0 ? (uint64_t)v : 120;
  gLastTimeoutSec.store(sec, std::memory_order_relaxed);
  return sec;
}
uint64_t bootstrapTimeoutSecUsed() { return gLastTimeoutSec.load(std::memory_order_relaxed); }
uint64_t bootstrapDeadline() { return nowNs() + bootstrapTimeoutSec() * 1000000000ull; }

std::string addressToString(const SocketAddress& a) {
  char host[INET6_ADDRSTRLEN] = "?";
  if (a.sa.sa_family == AF_INET) {
    inet_ntop(AF_INET, &a.sin.sin_addr, host, sizeof host);
    return std::string(host) + ":" + std::to_string(ntohs(a.sin.sin_port));
  }
  if (a.sa.sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &a.sin6.sin6_addr, host, sizeof host);
    return "[" + std::string(host) + "]:" + std::to_string(ntohs(a.sin6.sin6_port));
  }
  return "<invalid address family " + std::to_string(a.sa.sa_family) + ">";
}

ncclResult_t parseAddress(const char* text, SocketAddress* out, bool numericOnly) {
  std::string s(text ? text : "");
  size_t colon = s.rfind(':');
  if (s.empty() || colon == std::string::npos || colon + 1 == s.size())
    return batonError(ncclInvalidArgument, "address '%s' is not host:port", s.c_str());
  std::string host = s.substr(0, colon), port = s.substr(colon + 1);
  if (host.size() > 1 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (numericOnly) hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0 || !res)
    return batonError(ncclInvalidArgument, "cannot resolve address '%s': %s", s.c_str(), gai_strerror(rc));
  memset(out, 0, sizeof *out);
  memcpy(out, res->ai_addr, std::min<size_t>(res->ai_addrlen, sizeof *out));
  freeaddrinfo(res);
  return ncclSuccess;
}

namespace {
bool isLoopback(const SocketAddress& a) {
  if (a.sa.sa_family == AF_INET) return (ntohl(a.sin.sin_addr.s_addr) >> 24) == 127;
  if (a.sa.sa_family == AF_INET6) return IN6_IS_ADDR_LOOPBACK(&a.sin6.sin6_addr);
  return false;
}

// NCCL_SOCKET_IFNAME syntax: comma list of prefixes; '^' excludes; '=' means exact names.
bool ifnameMatches(const std::string& spec, const char* name) {
  std::string list = spec;
  bool exclude = false, exact = false;
  if (!list.empty() && list[0] == '^') exclude = true, list = list.substr(1);
  if (!list.empty() && list[0] == '=') exact = true, list = list.substr(1);
  bool hit = false;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    std::string item = list.substr(pos, comma - pos);
    if (!item.empty() && (exact ? item == name : strncmp(name, item.c_str(), item.size()) == 0)) hit = true;
    pos = comma + 1;
  }
  return exclude ? !hit : hit;
}

// Up interfaces with an IPv4/IPv6 address that `spec` (NCCL_SOCKET_IFNAME syntax) allows, each
// ranked by NCCL's automatic order: ib*, then ordinary interfaces, then docker*, lo, virbr*; the
// other address family (NCCL_SOCKET_FAMILY) comes after all of those.
ncclResult_t candidateInterfaces(const std::string& spec, std::vector<NetInterface>* out) {
  const int family = envInt("NCCL_SOCKET_FAMILY", 0) == 6 ? AF_INET6 : AF_INET;
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) != 0) return batonError(ncclSystemError, "getifaddrs failed: %s", strerror(errno));
  for (ifaddrs* i = ifs; i; i = i->ifa_next) {
    if (!i->ifa_addr || !(i->ifa_flags & IFF_UP)) continue;
    if (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6) continue;
    if (i->ifa_addr->sa_family == AF_INET6 &&
        IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr))
      continue;
    if (!spec.empty() && !ifnameMatches(spec, i->ifa_name)) continue;
    NetInterface c{};
    memcpy(&c.addr, i->ifa_addr, i->ifa_addr->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6));
    c.name = i->ifa_name;
    const char* n = i->ifa_name;
    c.rank = !strncmp(n, "ib", 2)       ? 0
             : !strncmp(n, "docker", 6) ? 2
             : !strncmp(n, "lo", 2)     ? 3
             : !strncmp(n, "virbr", 5)  ? 4
                                        : 1;
    if (c.addr.sa.sa_family != family) c.rank += 10;
    out->push_back(c);
  }
  freeifaddrs(ifs);
  if (out->empty())
    return batonError(ncclSystemError, "no usable (up, IPv4/IPv6) network interface%s%s%s",
                      spec.empty() ? "" : " matches NCCL_SOCKET_IFNAME='", spec.c_str(), spec.empty() ? "" : "'");
  std::stable_sort(out->begin(), out->end(),
                   [](const NetInterface& a, const NetInterface& b) { return a.rank < b.rank; });
  for (NetInterface& c : *out) {
    if (c.addr.sa.sa_family == AF_INET) c.addr.sin.sin_port = 0;
    else c.addr.sin6.sin6_port = 0;
  }
  return ncclSuccess;
}
}  // namespace

ncclResult_t chooseBindAddress(const SocketAddress* towards, SocketAddress* out, std::string* ifName) {
  std::string spec = envStr("NCCL_SOCKET_IFNAME");
  if (spec.empty() && towards && isLoopback(*towards)) spec = "=lo";
  std::vector<NetInterface> cands;
  BATON_CHECK(candidateInterfaces(spec, &cands));
  *out = cands[0].addr;
  if (ifName) *ifName = cands[0].name;
  return ncclSuccess;
}

ncclResult_t findNetInterfaces(std::vector<NetInterface>* out) {
  const std::string spec = envStr("NCCL_SOCKET_IFNAME");
  std::vector<NetInterface> cands;
  BATON_CHECK(candidateInterfaces(spec, &cands));
  out->clear();
  // Every interface NCCL_SOCKET_IFNAME names; without it, the best class only. One address each.
  for (const NetInterface& c : cands) {
    if (spec.empty() && c.rank != cands[0].rank) break;
    bool seen = false;
    for (const NetInterface& o : *out) seen |= o.name == c.name;
    if (!seen) out->push_back(c);
  }
  return ncclSuccess;
}

socklen_t socketAddrLen(const SocketAddress& a) {
  return a.sa.sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
}

ncclResult_t socketListen(SocketAddress* addr, int* fd) {
  int s = socket(addr->sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return batonError(ncclSystemError, "socket() failed: %s", strerror(errno));
  int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(s, &addr->sa, socketAddrLen(*addr)) != 0) {
    int e = errno;
    close(s);
    return batonError(ncclSystemError, "cannot bind a socket to %s: %s", addressToString(*addr).c_str(), strerror(e));
  }
  if (listen(s, SOMAXCONN) != 0) {
    int e = errno;
    close(s);
    return batonError(ncclSystemError, "listen() failed: %s", strerror(e));
  }
  socklen_t len = sizeof *addr;
  getsockname(s, &addr->sa, &len);
  *fd = s;
  return ncclSuccess;
}

namespace {
int remainingMs(uint64_t deadlineNs) {
  if (deadlineNs == 0) return 100;
  uint64_t now = nowNs();
  if (now >= deadlineNs) return 0;
  uint64_t ms = (deadlineNs - now) / 1000000 + 1;
  return ms > 100 ? 100 : (int)ms;  // wake at least every 100 ms to look at the abort flag
}
}  // namespace

ncclResult_t socketSendAll(int fd, const void* buf, size_t n, uint64_t deadlineNs) {
  const char* p = static_cast<const char*>(buf);
  while (n) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      p += w;
      n -= w;
      continue;
    }
    if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      return batonError(ncclRemoteError, "bootstrap send failed: %s", strerror(errno));
    if (deadlineNs && nowNs() >= deadlineNs)
      return batonError(ncclRemoteError, "bootstrap send timed out after %llus (BATON_BOOTSTRAP_TIMEOUT)",
                        (unsigned long long)bootstrapTimeoutSecUsed());
    pollfd pfd{fd, POLLOUT, 0};
    poll(&pfd, 1, remainingMs(deadlineNs));
  }
  return ncclSuccess;
}

bool socketSendQuiet(int fd, const void* buf, size_t n, uint64_t deadlineNs) {
  const char* p = static_cast<const char*>(buf);
  while (n) {
    const ssize_t w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      p += w, n -= (size_t)w;
      continue;
    }
    if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
    if (nowNs() >= deadlineNs) return false;
    pollfd pfd{fd, POLLOUT, 0};
    poll(&pfd, 1, 10);
  }
  return true;
}

ncclResult_t socketRecvAll(int fd, void* buf, size_t n, uint64_t deadlineNs, const volatile int* abortFlag) {
  char* p = static_cast<char*>(buf);
  while (n) {
    ssize_t r = recv(fd, p, n, MSG_DONTWAIT);
    if (r > 0) {
      p += r;
      n -= r;
      continue;
    }
    if (r == 0) return batonError(ncclRemoteError, "bootstrap peer closed the connection (%zu bytes missing)", n);
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      return batonError(ncclRemoteError, "bootstrap recv failed: %s", strerror(errno));
    if (abortRequested(abortFlag))
      return batonError(ncclInvalidUsage, "bootstrap recv interrupted: communicator aborted");
    if (deadlineNs && nowNs() >= deadlineNs)
      return batonError(ncclRemoteError, "bootstrap recv timed out after %llus (BATON_BOOTSTRAP_TIMEOUT)",
                        (unsigned long long)bootstrapTimeoutSecUsed());
    pollfd pfd{fd, POLLIN, 0};
    poll(&pfd, 1, remainingMs(deadlineNs));
  }
  return ncclSuccess;
}

ncclResult_t socketSendHandshake(int fd, uint64_t magic, uint32_t type, uint64_t deadlineNs) {
  struct {
    uint64_t magic;
    uint32_t type;
  } __attribute__((packed)) hs{magic, type};
  return socketSendAll(fd, &hs, sizeof hs, deadlineNs);
}

ncclResult_t socketConnect(const SocketAddress& addr, uint64_t magic, uint32_t type, uint64_t deadlineNs,
                           const volatile int* abortFlag, int* fd, bool listenerKnown) {
  uint32_t delayMs = 1;
  while (true) {
    int s = socket(addr.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) return batonError(ncclSystemError, "socket() failed: %s", strerror(errno));
    if (connect(s, &addr.sa, socketAddrLen(addr)) == 0) {
      int one = 1;
      setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      ncclResult_t res = socketSendHandshake(s, magic, type, deadlineNs);
      if (res != ncclSuccess) {
        close(s);
        return res;
      }
      *fd = s;
      return ncclSuccess;
    }
    int e = errno;
    close(s);
    if (listenerKnown && e == ECONNREFUSED)
      return batonError(ncclRemoteError, "nothing listens at %s any more (connection refused)",
                        addressToString(addr).c_str());
    if (e != ECONNREFUSED && e != ETIMEDOUT && e != ENETUNREACH && e != EHOSTUNREACH && e != EAGAIN && e != EINTR)
      return batonError(ncclSystemError, "cannot connect to %s: %s", addressToString(addr).c_str(), strerror(e));
    if (abortRequested(abortFlag))
      return batonError(ncclInvalidUsage, "bootstrap connect interrupted: communicator aborted");
    if (deadlineNs && nowNs() >= deadlineNs)
      return batonError(ncclSystemError,
                        "cannot connect to bootstrap peer %s: %s for %llus (BATON_BOOTSTRAP_TIMEOUT); is the process "
                        "that created the unique id alive and reachable?",
                        addressToString(addr).c_str(), strerror(e), (unsigned long long)bootstrapTimeoutSecUsed());
    usleep(delayMs * 1000);
    delayMs = delayMs < 100 ? delayMs * 2 : 100;
  }
}

ListenerState socketProbeListener(const SocketAddress& addr, int timeoutMs, int* fd) {
  int s = socket(addr.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s < 0) return ListenerState::kUnknown;
  int e = connect(s, &addr.sa, socketAddrLen(addr)) == 0 ? 0 : errno;
  if (e == EINPROGRESS) {
    pollfd pfd{s, POLLOUT, 0};
    socklen_t len = sizeof e;
    if (poll(&pfd, 1, timeoutMs) <= 0 || getsockopt(s, SOL_SOCKET, SO_ERROR, &e, &len) != 0) e = ETIMEDOUT;
  }
  if (e != 0) {
    close(s);
    return e == ECONNREFUSED ? ListenerState::kRefused : ListenerState::kUnknown;
  }
  *fd = s;
  return ListenerState::kAccepting;
}

SocketWait socketWaitReadable(int fd, uint64_t deadlineNs, const volatile int* abortFlag,
                              const std::function<bool()>& giveUp) {
  while (true) {
    pollfd pfd{fd, POLLIN, 0};
    if (poll(&pfd, 1, remainingMs(deadlineNs)) > 0) return SocketWait::kReadable;
    if (abortRequested(abortFlag)) return SocketWait::kAborted;
    if (deadlineNs && nowNs() >= deadlineNs) return SocketWait::kDeadline;
    if (giveUp && giveUp()) return SocketWait::kGaveUp;
  }
}

ncclResult_t socketAccept(int listenFd, uint64_t deadlineNs, const volatile int* abortFlag, int* fd) {
  while (true) {
    switch (socketWaitReadable(listenFd, deadlineNs, abortFlag)) {
      case SocketWait::kAborted:
        return batonError(ncclInvalidUsage, "bootstrap accept interrupted: communicator aborted");
      case SocketWait::kDeadline:
        return batonError(ncclSystemError, "bootstrap: no peer connected within %llus (BATON_BOOTSTRAP_TIMEOUT)",
                          (unsigned long long)bootstrapTimeoutSecUsed());
      default: break;
    }
    int s = accept4(listenFd, nullptr, nullptr, SOCK_CLOEXEC);
    if (s >= 0) {
      int one = 1;
      setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      *fd = s;
      return ncclSuccess;
    }
    if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
      return batonError(ncclSystemError, "accept() failed: %s", strerror(errno));
  }
}

bool socketCheckHandshake(int fd, uint64_t magic, uint32_t type, uint64_t deadlineNs) {
  struct {
    uint64_t magic;
    uint32_t type;
  } __attribute__((packed)) hs{};
  char* p = reinterpret_cast<char*>(&hs);
  size_t n = sizeof hs;
  while (n) {  // quiet version of socketRecvAll: a stranger is not an error worth a WARN
    ssize_t r = recv(fd, p, n, MSG_DONTWAIT);
    if (r > 0) {
      p += r;
      n -= r;
      continue;
    }
    if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return false;
    if (nowNs() >= deadlineNs) return false;
    pollfd pfd{fd, POLLIN, 0};
    poll(&pfd, 1, remainingMs(deadlineNs));
  }
  if (hs.magic != magic || hs.type != type) {
    BATON_INFO(kSubBootstrap, "bootstrap: dropped a connection with magic 0x%llx type %u (expected 0x%llx type %u)",
               (unsigned long long)hs.magic, hs.type, (unsigned long long)magic, type);
    return false;
  }
  return true;
}

void socketClose(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

}  // namespace baton

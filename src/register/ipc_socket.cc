// The answering side and the asking side of ipc_socket.h.
#include "register/ipc_socket.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

#include "exec_model.h"
#include "misc/debug.h"
#include "misc/socket.h"
#include "register/mem_alloc.h"

namespace baton {
namespace {

struct Request {
  uint64_t magic;
  uint64_t id;
};
struct Reply {
  uint64_t magic;
  int32_t ok;
  int32_t device;  // MemAllocation::device
  uint64_t base;
  uint64_t size;
};
constexpr uint64_t kIpcMagic = 0x6261746f6e697063ull;  // "batonipc"

socklen_t addressOf(int pid, sockaddr_un* a) {
  memset(a, 0, sizeof *a);
  a->sun_family = AF_UNIX;
  // Abstract namespace (leading NUL): nothing on disk to clean up when a process dies.
  const int n = snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "baton-ipc-%d", pid);
  return (socklen_t)(offsetof(sockaddr_un, sun_path) + 1 + n);
}

void answer(int c) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != getuid()) return;
  Request req{};
  if (recv(c, &req, sizeof req, MSG_WAITALL) != (ssize_t)sizeof req || req.magic != kIpcMagic) return;
  MemAllocation a;
  Reply rep{kIpcMagic, 0, 0, 0, 0};
  if (memFindById(req.id, &a)) rep = {kIpcMagic, 1, a.device, (uint64_t)(uintptr_t)a.base, a.size};
  iovec iov{&rep, sizeof rep};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(int))] = {};
  if (rep.ok) {
    msg.msg_control = ctrl;
    msg.msg_controllen = sizeof ctrl;
    cmsghdr* cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &a.fd, sizeof(int));
  }
  (void)sendmsg(c, &msg, MSG_NOSIGNAL);
  if (rep.ok) close(a.fd);  // memFindById's duplicate: the asker holds its own now
}

void serve(int s) {
  for (;;) {
    const int c = accept4(s, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;
    }
    answer(c);
    close(c);
  }
}

}  // namespace

ncclResult_t ipcServerStart() {
  static std::mutex mu;
  static int startedFor = 0;  // the pid whose server runs (a fork starts its own)
  std::lock_guard<std::mutex> lock(mu);
  if (startedFor == getpid()) return ncclSuccess;
  const int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return batonError(ncclSystemError, "ncclMemAlloc: IPC socket: %s", strerror(errno));
  sockaddr_un a;
  const socklen_t len = addressOf(getpid(), &a);
  if (bind(s, reinterpret_cast<sockaddr*>(&a), len) != 0 || listen(s, 64) != 0) {
    const int e = errno;
    close(s);
    return batonError(ncclSystemError, "ncclMemAlloc: IPC socket @baton-ipc-%d: %s", getpid(), strerror(e));
  }
  std::thread(serve, s).detach();  // lives as long as the process: peers may ask at any time
  startedFor = getpid();
  return ncclSuccess;
}

ncclResult_t ipcRequestAllocation(int pid, uint64_t id, const volatile int* abortFlag, int* fd, uint64_t* ownerBase,
                                  uint64_t* size, int* device) {
  *fd = -1;
  const int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return batonError(ncclSystemError, "IPC: socket: %s", strerror(errno));
  sockaddr_un a;
  const socklen_t len = addressOf(pid, &a);
  if (connect(s, reinterpret_cast<sockaddr*>(&a), len) != 0) {
    const int e = errno;
    close(s);
    return batonError(ncclRemoteError, "IPC: cannot reach process %d (@baton-ipc-%d): %s", pid, pid, strerror(e));
  }
  const Request req{kIpcMagic, id};
  Reply rep{};
  iovec iov{&rep, sizeof rep};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(int))] = {};
  msg.msg_control = ctrl;
  msg.msg_controllen = sizeof ctrl;
  ssize_t got = -1;
  if (send(s, &req, sizeof req, MSG_NOSIGNAL) == (ssize_t)sizeof req) {
    // The owner's answering thread replies at once unless the owner is stopped or hung: then the
    // watchdog raises the abort flag (BATON_TIMEOUT), and this request must end with it.
    const SocketWait w =
        socketWaitReadable(s, nowNs() + 10000000000ull, abortFlag, [pid] { return !processAlive(pid); });
    if (w == SocketWait::kAborted || w == SocketWait::kGaveUp) {
      close(s);
      return w == SocketWait::kAborted
                 ? batonError(ncclInvalidUsage, "IPC: asking process %d for allocation %llu: communicator aborted", pid,
                              (unsigned long long)id)
                 : batonError(ncclRemoteError, "IPC: process %d exited before it answered for allocation %llu", pid,
                              (unsigned long long)id);
    }
    if (w == SocketWait::kReadable) got = recvmsg(s, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    else errno = ETIMEDOUT;  // a live owner answers at once; a stuck one must not hang us forever
  }
  const int e = errno;
  close(s);
  if (got != (ssize_t)sizeof rep || rep.magic != kIpcMagic)
    return batonError(ncclRemoteError, "IPC: process %d did not answer for allocation %llu within 10 s (%s)", pid,
                      (unsigned long long)id, got < 0 ? strerror(e) : "short reply");
  if (!rep.ok)
    return batonError(ncclInvalidUsage, "IPC: process %d has no allocation %llu (freed with ncclMemFree?)", pid,
                      (unsigned long long)id);
  cmsghdr* cm = CMSG_FIRSTHDR(&msg);
  if (!cm || cm->cmsg_type != SCM_RIGHTS) return batonError(ncclRemoteError, "IPC: process %d sent no descriptor", pid);
  memcpy(fd, CMSG_DATA(cm), sizeof(int));
  *ownerBase = rep.base;
  *size = rep.size;
  *device = rep.device;
  return ncclSuccess;
}

}  // namespace baton

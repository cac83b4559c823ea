// The bootstrap root: a thread that collects every rank's listener address and hands out the table.
//
// It serves exactly one rendezvous, then exits. It drops connections whose handshake or length is
// wrong (a port scanner, a stale rank from another job) and keeps serving; it fails the whole
// rendezvous, telling every rank why, on an inconsistent nranks or a duplicate rank; and it gives
// up after BATON_BOOTSTRAP_TIMEOUT.
#include <unistd.h>

#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/bootstrap_wire.h"
#include "bootstrap/rendezvous.h"
#include "exec_model.h"
#include "misc/debug.h"
#include "misc/param.h"

namespace baton {
namespace {

void replyAll(const std::vector<int>& fds, ncclResult_t status, const std::string& msg,
              const std::vector<SocketAddress>* table, uint64_t deadline) {
  CheckInReply r{};
  r.status = status;
  snprintf(r.message, sizeof r.message, "%s", msg.c_str());
  for (int fd : fds) {
    if (fd < 0) continue;
    if (socketSendAll(fd, &r, sizeof r, deadline) != ncclSuccess) continue;
    if (table) socketSendAll(fd, table->data(), table->size() * sizeof(SocketAddress), deadline);
  }
}

// The deadline comes from the starting thread: this one must not read the environment, which the
// application may be changing meanwhile (setenv racing getenv can crash in glibc).
void rootThread(int listenFd, uint64_t magic, uint64_t deadline) {
  Rendezvous rv;
  std::vector<int> fds;  // by rank; a failing check-in's connection is appended to hear why
  std::string failure;
  ncclResult_t failCode = ncclInvalidUsage;  // inconsistent ranks; a timeout is ncclSystemError
  quietErrors() = true;  // this thread's failures are reported to the ranks, not as ncclGetLastError
  while (true) {
    int fd = -1;
    if (socketAccept(listenFd, deadline, nullptr, &fd) != ncclSuccess) {
      failure = "bootstrap root: only " + std::to_string(rv.arrived()) + " of " + std::to_string(rv.nranks()) +
                " ranks checked in within BATON_BOOTSTRAP_TIMEOUT" +
                (rv.nranks() ? " (missing ranks: " + rv.missing() + ")" : "");
      failCode = ncclSystemError;
      break;
    }
    // A legitimate rank sends its check-in right after connecting; give a stranger 2 s at most.
    const uint64_t connDeadline = std::min<uint64_t>(deadline, nowNs() + 2000000000ull);
    uint32_t len = 0;
    CheckIn ci{};
    const bool read = socketCheckHandshake(fd, magic, kSocketBootstrap, connDeadline) &&
                      socketRecvAll(fd, &len, sizeof len, connDeadline, nullptr) == ncclSuccess &&
                      len == sizeof(CheckIn) && socketRecvAll(fd, &ci, sizeof ci, connDeadline, nullptr) == ncclSuccess;
    const Rendezvous::Verdict v = read ? rv.checkIn(len, ci) : Rendezvous::kDrop;
    if (v == Rendezvous::kDrop) {
      BATON_INFO(kSubBootstrap, "bootstrap root: dropped a malformed check-in (length %u, rank %d, nranks %d)", len,
                 ci.rank, ci.nranks);
      socketClose(fd);
      continue;
    }
    if (fds.empty()) fds.assign(rv.nranks(), -1);
    if (v == Rendezvous::kFail) {
      failure = rv.failure();
      fds.push_back(fd);
      break;
    }
    fds[ci.rank] = fd;
    if (rv.complete()) break;
  }
  if (failure.empty()) {
    replyAll(fds, ncclSuccess, "", &rv.table(), deadline);
  } else {
    BATON_WARN("%s", failure.c_str());
    replyAll(fds, failCode, failure, nullptr, deadline);
  }
  for (int& fd : fds) socketClose(fd);
  close(listenFd);
}

}  // namespace

ncclResult_t bootstrapStartRoot(BootstrapHandle* handle, RootBind bind) {
  SocketAddress addr{};
  if (bind == RootBind::kGivenAddress) {
    addr = handle->addr;
  } else {
    SocketAddress loopback{};
    if (bind == RootBind::kLoopback) BATON_CHECK(parseAddress("127.0.0.1:0", &loopback));
    BATON_CHECK(chooseBindAddress(bind == RootBind::kLoopback ? &loopback : nullptr, &addr, nullptr));
  }
  int fd = -1;
  BATON_CHECK(socketListen(&addr, &fd));
  handle->addr = addr;
  std::thread(rootThread, fd, handle->magic, bootstrapDeadline()).detach();
  BATON_INFO(kSubBootstrap, "bootstrap root listening on %s", addressToString(addr).c_str());
  return ncclSuccess;
}

ncclResult_t bootstrapGetUniqueId(ncclUniqueId* id) {
  memset(id, 0, sizeof *id);
  if (const std::string commId = envStr("NCCL_COMM_ID"); !commId.empty()) {
    const char* env = commId.c_str();
    BootstrapHandle h{};
    if (parseAddress(env, &h.addr) != ncclSuccess)
      return batonError(ncclInvalidArgument, "NCCL_COMM_ID='%s' is not a usable host:port (%s)", env, lastError());
    h.magic = kNcclMagic;  // rank 0 starts the root at that address during init
    memcpy(id, &h, sizeof h);
    return ncclSuccess;
  }
  return bootstrapGetUniqueIdFresh(id);
}

ncclResult_t bootstrapGetUniqueIdFresh(ncclUniqueId* id, bool loopback) {
  memset(id, 0, sizeof *id);
  BootstrapHandle h{};
  std::random_device rd;
  h.magic = (uint64_t(rd()) << 32) ^ rd();
  if (h.magic == kNcclMagic || h.magic == 0) h.magic ^= 1;
  BATON_CHECK(bootstrapStartRoot(&h, loopback ? RootBind::kLoopback : RootBind::kChosenInterface));
  memcpy(id, &h, sizeof h);
  return ncclSuccess;
}

ncclResult_t bootstrapParseId(const ncclUniqueId* id, BootstrapHandle* out) {
  memcpy(out, id, sizeof *out);
  const unsigned char* bytes = reinterpret_cast<const unsigned char*>(id);
  bool padZero = true;
  for (size_t i = sizeof *out; i < sizeof *id; ++i) padZero &= bytes[i] == 0;
  const int fam = out->addr.sa.sa_family;
  const int port = fam == AF_INET    ? ntohs(out->addr.sin.sin_port)
                   : fam == AF_INET6 ? ntohs(out->addr.sin6.sin6_port)
                                     : 0;
  if (!socketAddressUsable(out->addr) || !padZero || out->magic == 0)
    return batonError(ncclInvalidArgument,
                      "commId is not a valid ncclUniqueId (address family %d, port %d, magic 0x%llx%s): was it "
                      "produced by ncclGetUniqueId and copied whole?",
                      fam, port, (unsigned long long)out->magic, padZero ? "" : ", non-zero padding");
  return ncclSuccess;
}

}  // namespace baton

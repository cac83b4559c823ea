// TCP sockets for the bootstrap: addresses, interface choice, and reads/writes with deadlines.
//
// Every connection starts with NCCL's handshake: the 8-byte magic and a 4-byte socket type. An
// acceptor drops a connection whose magic is wrong and keeps serving.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "nccl.h"

namespace baton {

// IPv4 or IPv6 address, 28 bytes like NCCL's ncclSocketAddress.
union SocketAddress {
  sockaddr sa;
  sockaddr_in sin;
  sockaddr_in6 sin6;
};
static_assert(sizeof(SocketAddress) == 28, "SocketAddress is NCCL's 28-byte union");

enum SocketType : uint32_t {
  kSocketUnknown = 0,
  kSocketBootstrap = 1,
  kSocketNet = 3,
  kSocketNetIb = 4,
  kSocketWatchdog = 16
};                                                      // NCCL's values; 16 is baton's own
constexpr uint64_t kNcclMagic = 0x0280028002800280ull;  // NCCL_MAGIC: used with NCCL_COMM_ID

std::string addressToString(const SocketAddress& a);
socklen_t socketAddrLen(const SocketAddress& a);
// "host:port", "[v6]:port" or "v6:port" (last colon) -> address. Resolves host names, unless
// `numericOnly` (the fuzz target's setting: a random host name would become a DNS query).
ncclResult_t parseAddress(const char* text, SocketAddress* out, bool numericOnly = false);
// The address to bind for bootstrap traffic: NCCL_SOCKET_IFNAME, or the interface that reaches
// `towards` (when given), or the first non-loopback interface, else loopback. Port 0.
ncclResult_t chooseBindAddress(const SocketAddress* towards, SocketAddress* out, std::string* ifName);

struct NetInterface {
  std::string name;
  SocketAddress addr;  // port 0
  int rank = 0;        // place in NCCL's automatic order (0 best)
};
// The NET socket transport's devices: every interface NCCL_SOCKET_IFNAME allows (NCCL's syntax:
// prefixes, ^ excludes, = exact), or without it every interface of the best class in NCCL's order
// (ib*, then ordinary ones, then docker*, lo, virbr*). Error when none matches, naming the value.
ncclResult_t findNetInterfaces(std::vector<NetInterface>* out);

// Listen on `addr` (port 0 picks one); `addr` is updated with the bound port.
ncclResult_t socketListen(SocketAddress* addr, int* fd);
// Connect with retries until `deadlineNs` (monotonic), then send the handshake. `listenerKnown`:
// the address is a listener that existed (a bootstrap peer from the root's table), so a refused
// connection means it has closed (its process exited) and fails at once instead of being retried.
ncclResult_t socketConnect(const SocketAddress& addr, uint64_t magic, uint32_t type, uint64_t deadlineNs,
                           const volatile int* abortFlag, int* fd, bool listenerKnown = false);
// Sends the 12-byte handshake every baton connection starts with.
ncclResult_t socketSendHandshake(int fd, uint64_t magic, uint32_t type, uint64_t deadlineNs);
// One connection attempt, at most `timeoutMs`: kAccepting (connected, *fd is the socket),
// kRefused (nothing listens there), kUnknown (no answer in time, or the network is unreachable).
enum class ListenerState { kAccepting, kRefused, kUnknown };
ListenerState socketProbeListener(const SocketAddress& addr, int timeoutMs, int* fd);
// Why socketWaitReadable returned.
enum class SocketWait { kReadable, kAborted, kDeadline, kGaveUp };
// Waits until `fd` has something to read (data, or a connection to accept), looking every 100 ms
// at the abort flag, the deadline (0: none) and `giveUp` (if set: a test that ends the wait, such
// as "the peer process exited"). Every wait of the bootstrap, the watchdog and the IPC socket that
// an abort or a dead peer must end is this one.
SocketWait socketWaitReadable(int fd, uint64_t deadlineNs, const volatile int* abortFlag,
                              const std::function<bool()>& giveUp = nullptr);
// Accept one connection, waiting until deadlineNs (0: forever) or the abort flag.
ncclResult_t socketAccept(int listenFd, uint64_t deadlineNs, const volatile int* abortFlag, int* fd);
// Read/write exactly `n` bytes before deadlineNs; EOF or timeout is an error.
ncclResult_t socketRecvAll(int fd, void* buf, size_t n, uint64_t deadlineNs, const volatile int* abortFlag);
ncclResult_t socketSendAll(int fd, const void* buf, size_t n, uint64_t deadlineNs);
// Writes all of `n` bytes by `deadlineNs`, quietly: false on a closed connection or a peer that
// reads too slowly, and no error message (the caller says what that means: a failed peer, a RAS
// client gone); never a SIGPIPE.
bool socketSendQuiet(int fd, const void* buf, size_t n, uint64_t deadlineNs);
// Read the handshake; false (and no error) if it is not `magic`/`type` (a stranger's bytes).
bool socketCheckHandshake(int fd, uint64_t magic, uint32_t type, uint64_t deadlineNs);
void socketClose(int& fd);

// BATON_BOOTSTRAP_TIMEOUT seconds (default 120) as an absolute monotonic deadline from now.
uint64_t bootstrapDeadline();
uint64_t bootstrapTimeoutSec();
// The value the last of those read, for timeout messages: it never reads the environment, so the
// library's own threads (the bootstrap root's) may call it while the application runs setenv.
uint64_t bootstrapTimeoutSecUsed();

}  // namespace baton

// Fuzz target: what the socket NET back-end's receiver (transports/net/socket/) does with the bytes
// a peer sends: its hello on each socket, then frame headers on the control socket and payload on
// the data sockets. Real sockets on loopback: the target plays a corrupt or hostile sender.
//
// Input: flags (helper threads or not; whether the hellos are the input's own bytes), up to four
// candidate receive buffers (size, tag), then the bytes for the control socket and for each data
// socket. The sender then closes. The receiver must finish within the time limit: the message
// delivered whole into a buffer it offered, or an error with a message. Never a hang, never a
// write outside the buffers (ASan watches them).
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "exec_model.h"
#include "fuzz_input.h"
#include "misc/socket.h"
#include "net/socket/socket_comm.h"

using namespace baton;

namespace {

NetBackend* backend() {
  static NetBackend* b = [] {
    setenv("NCCL_SOCKET_IFNAME", "lo", 1);
    setenv("NCCL_NSOCKS_PERTHREAD", "2", 1);
    NetBackend* nb = netsock::makeSocketBackend();
    if (nb->init() != ncclSuccess) abort();
    return nb;
  }();
  return b;
}

// A raw TCP connection to the listener (no handshake).
int dial(const SocketAddress& addr) {
  const int s = socket(addr.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0 || connect(s, &addr.sa, socketAddrLen(addr)) != 0) abort();
  return s;
}

void sendBytes(int fd, std::string_view b) {
  while (!b.empty()) {
    const ssize_t w = send(fd, b.data(), b.size(), MSG_NOSIGNAL);
    if (w <= 0) return;  // the receiver closed it (a stranger's socket): fine
    b.remove_prefix((size_t)w);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  baton_fuzz::Input in(data, size);
  const uint8_t flags = in.u8();
  setenv("NCCL_SOCKET_NTHREADS", (flags & 1) ? "1" : "0", 1);
  NetBackend* b = backend();
  NetHandle nh{};
  NetListenComm* listen = nullptr;
  if (b->listen(0, &nh, &listen) != ncclSuccess) abort();
  netsock::Handle h;
  memcpy(&h, nh.data, sizeof h);

  // Connect every socket, each with its hello (or the input's bytes in its place).
  std::vector<int> fds;
  for (int i = 0; i <= h.nSocks; ++i) {
    const int fd = dial(h.addr);
    const netsock::Hello hello{h.magic, kSocketNet, (uint32_t)i};
    if (flags & 2) sendBytes(fd, in.bytes(in.range(0, 2 * sizeof hello)));
    else sendBytes(fd, std::string_view(reinterpret_cast<const char*>(&hello), sizeof hello));
    fds.push_back(fd);
  }
  NetRecvComm* recv = nullptr;
  // A stranger's hello is dropped and no comm comes; ours is accepted within a millisecond.
  const uint64_t acceptDeadline = nowNs() + 30000000ull;
  while (!recv && nowNs() < acceptDeadline) {
    if (b->accept(listen, &recv) != ncclSuccess) break;
    if (!recv) usleep(100);
  }

  // The receive this peer's bytes will meet: up to four candidates.
  const int n = in.range(1, 4);
  std::vector<std::unique_ptr<char[]>> bufs(n);
  std::vector<void*> ptrs(n);
  std::vector<size_t> sizes(n);
  std::vector<uint64_t> tags(n);
  for (int i = 0; i < n; ++i) {
    sizes[i] = (size_t)in.u8() << (in.u8() % 12);  // up to 1 MiB
    tags[i] = in.u8();
    bufs[i].reset(new char[sizes[i] ? sizes[i] : 1]);
    ptrs[i] = bufs[i].get();
  }
  sendBytes(fds[0], in.bytes(in.u8() | (size_t)in.u8() << 8));
  for (size_t i = 1; i < fds.size(); ++i) sendBytes(fds[i], in.bytes(in.u8() | (size_t)in.u8() << 8));
  for (int fd : fds) shutdown(fd, SHUT_WR);  // the sender is done

  if (recv) {
    NetMemHandle* mh[4] = {};
    NetRequest* req = nullptr;
    if (b->irecv(recv, n, ptrs.data(), sizes.data(), tags.data(), mh, &req) == ncclSuccess && req) {
      const uint64_t deadline = nowNs() + 5000000000ull;
      int done = 0, index = -1;
      size_t got = 0;
      uint64_t tag = 0;
      while (true) {
        if (b->test(req, &done, &got, &index, &tag) != ncclSuccess) {
          if (baton::lastError()[0] == 0) abort();
          break;
        }
        if (done) {
          if (index < 0 || index >= n || got > sizes[index] || (tag & kNetTagMatchMask) != tags[index]) abort();
          break;
        }
        if (nowNs() > deadline) abort();  // the sender has closed: waiting longer is a hang
      }
    }
    b->closeRecv(recv);
  }
  for (int fd : fds) close(fd);
  b->closeListen(listen);
  return 0;
}

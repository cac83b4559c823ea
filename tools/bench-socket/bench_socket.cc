// bench-socket: the socket back-end's own round trip against a plain TCP ping-pong (issue 45), so a
// small message's time across hosts can be split into the network, the back-end and the proxy's
// hand-offs (docs/perf.md, lesson 08).
//
//   build/bin/bench-socket [--sizes 8,64,1K,8K,64K] [-n ROUNDS] [-r REPEATS] [--ifname lo] [--no-pin]
//
// Two threads, each pinned to its own CPU (0 and 1; --no-pin leaves them to the scheduler), play
// ping-pong over loopback (or the interface given), four ways, one after the other per repeat:
//   plain-spin   one TCP connection (TCP_NODELAY) both ways, send(), then recv(MSG_DONTWAIT) until
//                the answer is whole: each answer carries the ACK of the ping it answers
//   spin-2conns  the same over two connections, one each way, as the back-end connects: every
//                message is acknowledged by a packet of its own
//   plain-block  one connection with a blocking recv()
//   backend      baton's socket back-end (transports/net/socket/): isend, irecv, test() until done,
//                as the proxy drives it, one connection each way (BATON_SOCKET_DELAYED_ACK applies)
// It prints per size the median over repeats of the one-way time (half a round trip) in µs and
// backend / spin-2conns. Each answer is checked against the ping it answers.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "misc/debug.h"
#include "net/net_backend.h"
#include "net/socket/socket_comm.h"

namespace {

// "8", "64K", "1M": bytes (binary units). False if it is not a size.
bool parseBytes(const std::string& s, size_t* out) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (end == s.c_str()) return false;
  const int shift = *end == 'K' || *end == 'k' ? 10 : *end == 'M' || *end == 'm' ? 20 : 0;
  if (shift) ++end;
  *out = size_t(v << shift);
  return *end == '\0' && v < (1ull << 30);
}

struct Options {
  std::vector<size_t> sizes{8, 64, 1024, 8192, 65536};
  int rounds = 5000, repeats = 5;
  bool pin = true;
  std::string ifname = "lo";
};

void pinTo(int cpu, bool pin) {
  if (!pin) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu % std::max(1u, std::thread::hardware_concurrency()), &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "bench-socket: %s\n", what.c_str());
  std::exit(1);
}

// Each side's part of a ping-pong: `first` sends first. Returns seconds for `rounds` round trips.
template <class SendFn, class RecvFn>
double pingPong(bool first, int rounds, size_t bytes, SendFn send, RecvFn recv) {
  std::vector<char> out(bytes), in(bytes);
  auto t0 = std::chrono::steady_clock::now();
  for (int i = -rounds / 10; i < rounds; ++i) {  // the first tenth warms up
    if (i == 0) t0 = std::chrono::steady_clock::now();
    out[0] = char(i), out[bytes - 1] = char(i + 1);
    if (first) send(out.data()), recv(in.data());
    else recv(in.data()), send(out.data());
    if (in[0] != char(i) || in[bytes - 1] != char(i + 1)) fail("a ping-pong answer carried the wrong bytes");
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Two connected TCP sockets on loopback.
void plainPair(int fds[2]) {
  const int l = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET, a.sin_addr.s_addr = htonl(INADDR_LOOPBACK), a.sin_port = 0;
  socklen_t len = sizeof a;
  if (l < 0 || bind(l, (sockaddr*)&a, sizeof a) || listen(l, 1) || getsockname(l, (sockaddr*)&a, &len))
    fail("loopback listen failed");
  fds[0] = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(fds[0], (sockaddr*)&a, sizeof a)) fail("loopback connect failed");
  fds[1] = accept(l, nullptr, nullptr);
  close(l);
  const int one = 1;
  for (int i = 0; i < 2; ++i) setsockopt(fds[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

double plainRun(size_t bytes, const Options& o, bool spin, bool twoConns = false) {
  int fds[2], back[2];
  plainPair(fds);
  if (twoConns) plainPair(back);
  auto side = [&](int me, double* secs) {
    pinTo(me, o.pin);
    const int fd = fds[me];
    const int out = twoConns ? (me == 0 ? fds[0] : back[1]) : fd, in = twoConns ? (me == 0 ? back[0] : fds[1]) : fd;
    auto send = [&](const char* p) {
      for (size_t done = 0; done < bytes;) {
        const ssize_t w = ::send(out, p + done, bytes - done, MSG_NOSIGNAL);
        if (w <= 0) fail("send failed");
        done += size_t(w);
      }
    };
    auto recv = [&](char* p) {
      for (size_t done = 0; done < bytes;) {
        const ssize_t r = ::recv(in, p + done, bytes - done, spin ? MSG_DONTWAIT : 0);
        if (r > 0) done += size_t(r);
        else if (r == 0 || (errno != EAGAIN && errno != EINTR)) fail("recv failed");
      }
    };
    *secs = pingPong(me == 0, o.rounds, bytes, send, recv);
  };
  double secs[2];
  std::thread peer(side, 1, &secs[1]);
  side(0, &secs[0]);
  peer.join();
  close(fds[0]), close(fds[1]);
  if (twoConns) close(back[0]), close(back[1]);
  return secs[0] / o.rounds / 2 * 1e6;
}

double backendRun(baton::NetBackend* b, size_t bytes, const Options& o) {
  // One connection each way: side s sends on send[s] to side 1-s, which receives on recv[1-s].
  baton::NetSendComm* send[2] = {};
  baton::NetRecvComm* recv[2] = {};
  for (int s = 0; s < 2; ++s) {
    baton::NetHandle h{};
    baton::NetListenComm* l = nullptr;
    if (b->listen(0, &h, &l) != ncclSuccess || b->connect(0, h, nullptr, &send[s]) != ncclSuccess)
      fail(std::string("socket back-end: ") + baton::lastError());
    while (!recv[1 - s])
      if (b->accept(l, &recv[1 - s]) != ncclSuccess) fail(std::string("accept: ") + baton::lastError());
    b->closeListen(l);
  }
  auto side = [&](int me, double* secs) {
    pinTo(me, o.pin);
    auto wait = [&](baton::NetRequest* r) {
      for (int done = 0; !done;) {
        size_t n = 0;
        if (b->test(r, &done, &n, nullptr, nullptr) != ncclSuccess) fail(baton::lastError());
      }
    };
    auto sendFn = [&](char* p) {
      baton::NetRequest* r = nullptr;
      while (!r)
        if (b->isend(send[me], p, bytes, 1, nullptr, &r) != ncclSuccess) fail(baton::lastError());
      wait(r);
    };
    auto recvFn = [&](char* p) {
      baton::NetRequest* r = nullptr;
      void* data = p;
      const uint64_t tag = 1;
      while (!r)
        if (b->irecv(recv[me], 1, &data, &bytes, &tag, nullptr, &r) != ncclSuccess) fail(baton::lastError());
      wait(r);
    };
    *secs = pingPong(me == 0, o.rounds, bytes, sendFn, recvFn);
  };
  double secs[2];
  std::thread peer(side, 1, &secs[1]);
  side(0, &secs[0]);
  peer.join();
  for (int s = 0; s < 2; ++s) b->closeSend(send[s]), b->closeRecv(recv[s]);
  return secs[0] / o.rounds / 2 * 1e6;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    bool ok = v != nullptr;
    if (a == "--no-pin") {
      o.pin = false;
      continue;
    }
    if (a == "--sizes" && v) {
      o.sizes.clear();
      for (const char *p = v, *q; ok && *p; p = *q ? q + 1 : q) {
        q = std::strchr(p, ',');
        q = q ? q : p + std::strlen(p);
        size_t b = 0;
        ok = parseBytes(std::string(p, q), &b) && b >= 2;
        o.sizes.push_back(b);
      }
    } else if (a == "-n" && v) ok = (o.rounds = std::atoi(v)) >= 10;
    else if (a == "-r" && v) ok = (o.repeats = std::atoi(v)) >= 1;
    else if (a == "--ifname" && v) o.ifname = v;
    else ok = false;
    if (!ok) {
      std::fprintf(stderr,
                   "bench-socket: bad argument '%s' (--sizes 8,64K -n ROUNDS -r REPEATS --ifname IF --no-pin)\n",
                   a.c_str());
      return 2;
    }
    ++i;
  }
  setenv("NCCL_SOCKET_IFNAME", o.ifname.c_str(), 1);
  std::unique_ptr<baton::NetBackend> b(baton::netsock::makeSocketBackend());
  if (b->init() != ncclSuccess || b->devices() < 1) fail(std::string("socket back-end: ") + baton::lastError());
  std::printf("# one-way time (half a round trip), us: median of %d repeats of %d round trips; %s\n", o.repeats,
              o.rounds, o.pin ? "threads on CPUs 0 and 1" : "threads unpinned");
  std::printf("%10s %12s %12s %12s %12s %16s\n", "size (B)", "plain-spin", "spin-2conns", "plain-block", "backend",
              "backend/spin-2");
  for (size_t bytes : o.sizes) {
    std::vector<double> spin, spin2, block, backend;
    for (int r = 0; r < o.repeats; ++r) {
      spin.push_back(plainRun(bytes, o, true));
      spin2.push_back(plainRun(bytes, o, true, true));
      block.push_back(plainRun(bytes, o, false));
      backend.push_back(backendRun(b.get(), bytes, o));
    }
    std::printf("%10zu %12.2f %12.2f %12.2f %12.2f %15.2fx\n", bytes, median(spin), median(spin2), median(block),
                median(backend), median(backend) / median(spin2));
    std::fflush(stdout);
  }
  return 0;
}

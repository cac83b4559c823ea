// baton-run: process plumbing (free port, watchdog, spawning ranks) and the
// line-prefixing output relay. See baton_run.h for the contracts.
#include "baton_run.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

namespace batonrun {

void writeAll(int fd, const char* buf, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, buf, len);
    if (n > 0) {
      buf += n;
      len -= static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};  // our stdout may be non-blocking
      poll(&p, 1, 100);
    } else {
      return;  // EPIPE and friends: drop the output, keep supervising
    }
  }
}

void writeStr(int fd, const std::string& s) { writeAll(fd, s.data(), s.size()); }

namespace {
const struct {
  int sig;
  const char* name;
} kSignals[] = {
    {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},   {SIGTRAP, "SIGTRAP"},
    {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},   {SIGKILL, "SIGKILL"}, {SIGUSR1, "SIGUSR1"},
    {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"}, {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"},
    {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"}, {SIGSYS, "SIGSYS"},
};
}  // namespace

std::string signalName(int sig) {
  for (const auto& e : kSignals)
    if (e.sig == sig) return e.name;
  return "signal " + std::to_string(sig);
}

int signalNumber(const std::string& text) {
  const std::string name = text.rfind("SIG", 0) == 0 ? text : "SIG" + text;
  for (const auto& e : kSignals)
    if (name == e.name) return e.sig;
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  return !text.empty() && *end == 0 && v > 0 && v < 65 ? (int)v : 0;
}

namespace {
int gSelfPipeW = -1;  // signal handler -> poll loop

void onSignal(int sig) {
  int saved = errno;
  unsigned char c = static_cast<unsigned char>(sig);
  ssize_t n = write(gSelfPipeW, &c, 1);
  (void)n;
  errno = saved;
}
}  // namespace

int setupProcess(int nranks) {
  for (int fd = 0; fd <= 2; ++fd)  // keep 0..2 taken so pipes never land there
    if (fcntl(fd, F_GETFD) < 0) open("/dev/null", O_RDWR);
  rlimit rl{};  // two pipes per rank plus slack
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rlim_t(4 * nranks + 64)) {
    rl.rlim_cur = std::min<rlim_t>(rl.rlim_max, 4 * nranks + 64);
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  prctl(PR_SET_CHILD_SUBREAPER, 1);  // orphaned grandchildren come to us
  int p[2];
  if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) {
    perror("baton-run: pipe");
    std::exit(1);
  }
  gSelfPipeW = p[1];
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return p[0];
}

namespace {

// The first port of the kernel's ephemeral range (ports it hands to bind(port 0) and connect()).
int ephemeralLow() {
  int lo = 32768, hi = 60999;
  if (FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (std::fscanf(f, "%d %d", &lo, &hi) != 2) lo = 32768;
    std::fclose(f);
  }
  return lo;
}

// Binds port (0: the kernel picks) on ss; returns the port bound, or 0.
int tryBind(sockaddr_storage* ss, socklen_t len, int port) {
  auto* v4 = reinterpret_cast<sockaddr_in*>(ss);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(ss);
  (ss->ss_family == AF_INET6 ? v6->sin6_port : v4->sin_port) = htons((uint16_t)port);
  int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  int got = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(ss), len) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(ss), &len) == 0)
    got = ntohs(ss->ss_family == AF_INET6 ? v6->sin6_port : v4->sin_port);
  close(fd);
  return got;
}

}  // namespace

int pickFreePort(const std::string& host, std::string* err) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    len = sizeof(*v6);
  } else {
    v4->sin_family = AF_INET;
    if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) != 1)
      v4->sin_addr.s_addr = htonl(INADDR_ANY);  // a host name: any address
    len = sizeof(*v4);
  }
  // The port is free now, but rank 0 binds it only later. A port from the ephemeral range could
  // meanwhile go to any socket's bind(0) or connect() on this host (the ranks' own included), and
  // rank 0 would fail with "Address already in use"; below that range only an explicit bind takes it.
  const int low = ephemeralLow();
  std::random_device rd;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (low > 2048)
      for (int i = 0; i < 64; ++i)
        if (int port = tryBind(&ss, len, low / 2 + (int)(rd() % (unsigned)(low - low / 2))); port) return port;
    if (int port = tryBind(&ss, len, 0); port) return port;
    // The literal is not a local address (or IPv6 is off): use the wildcard.
    if (ss.ss_family == AF_INET6) v6->sin6_addr = in6addr_any;
    else v4->sin_addr.s_addr = htonl(INADDR_ANY);
  }
  *err = std::strerror(errno);
  return 0;
}

pid_t startWatchdog(int* keepaliveFd) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return -1;
  pid_t pid = fork();
  if (pid < 0) {
    close(p[0]);
    close(p[1]);
    return -1;
  }
  if (pid == 0) {
    close(p[1]);
    setpgid(0, 0);
    // Forwarded SIGINT/SIGTERM and a hung-up terminal are for the ranks.
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    int dn = open("/dev/null", O_RDWR);
    if (dn >= 0) {  // do not hold our caller's pipes open
      dup2(dn, 0), dup2(dn, 1), dup2(dn, 2);
      if (dn > 2) close(dn);
    }
    char c;
    while (read(p[0], &c, 1) < 0 && errno == EINTR) {}
    kill(0, SIGKILL);  // baton-run is gone or done: take the whole group
    _exit(0);
  }
  setpgid(pid, pid);  // also in the parent, so ranks can join right away
  close(p[0]);
  *keepaliveFd = p[1];
  return pid;
}

namespace {
void setNonblock(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }
}  // namespace

Spawn spawnRank(const Options& opt, int rank, const std::string& commId, pid_t pgid, Rank& r, int* errNo) {
  int out[2], err[2], st[2];
  if (pipe2(out, O_CLOEXEC) != 0) return *errNo = errno, Spawn::sysError;
  if (pipe2(err, O_CLOEXEC) != 0) {
    *errNo = errno;
    close(out[0]), close(out[1]);
    return Spawn::sysError;
  }
  if (pipe2(st, O_CLOEXEC) != 0) {
    *errNo = errno;
    close(out[0]), close(out[1]), close(err[0]), close(err[1]);
    return Spawn::sysError;
  }
  // Built before fork so the child only does async-signal-safe-ish work.
  std::vector<char*> args;
  for (const auto& a : opt.argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const bool keepStdin = rank == 0 && !isatty(0);  // a tty would SIGTTIN us
  const pid_t parent = getpid();

  pid_t pid = fork();
  if (pid < 0) {
    *errNo = errno;
    for (int fd : {out[0], out[1], err[0], err[1], st[0], st[1]}) close(fd);
    return Spawn::sysError;
  }
  if (pid == 0) {
    setpgid(0, pgid);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // launcher died before prctl
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE}) signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    if (!keepStdin) {
      int dn = open("/dev/null", O_RDONLY);
      if (dn >= 0 && dn != 0) dup2(dn, 0), close(dn);
    }
    dup2(out[1], 1);  // dup2 clears close-on-exec on the target
    dup2(err[1], 2);
    setenv("NCCL_COMM_ID", commId.c_str(), 1);
    setenv("BATON_RANK", std::to_string(rank).c_str(), 1);
    setenv("BATON_NRANKS", std::to_string(opt.nranks).c_str(), 1);
    setenv("BATON_LOCAL_RANK", std::to_string(rank).c_str(), 1);
    setenv("BATON_LOCAL_NRANKS", std::to_string(opt.nranks).c_str(), 1);
    if (!opt.cpus.empty()) {  // inherited by every thread the rank starts, as with mpirun --bind-to core
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(opt.cpus[rank], &set);
      sched_setaffinity(0, sizeof set, &set);
    }
    execvp(args[0], args.data());
    int e = errno;
    ssize_t n = write(st[1], &e, sizeof e);
    (void)n;
    _exit(127);
  }
  setpgid(pid, pgid);  // EACCES once the child has exec'd: harmless
  close(out[1]), close(err[1]), close(st[1]);
  int e = 0;
  ssize_t n;
  while ((n = read(st[0], &e, sizeof e)) < 0 && errno == EINTR) {}
  close(st[0]);
  if (n > 0) {  // exec failed: the child has exited 127
    close(out[0]), close(err[0]);
    waitpid(pid, nullptr, 0);
    *errNo = e;
    return Spawn::execFailed;
  }
  setNonblock(out[0]);
  setNonblock(err[0]);
  r.pid = pid;
  r.alive = true;
  r.out = Stream{out[0], 1, rank, {}, false};
  r.err = Stream{err[0], 2, rank, {}, false};
  return Spawn::ok;
}

// Lines longer than this are written in pieces rather than buffered forever.
namespace {
constexpr size_t kMaxPending = 64 * 1024;

void emitLines(Stream& s, bool prefix, bool eof) {
  const std::string tag = "[" + std::to_string(s.rank) + "] ";
  std::string out;
  size_t start = 0, nl;
  while ((nl = s.pending.find('\n', start)) != std::string::npos) {
    if (prefix && !s.midline) out += tag;
    out.append(s.pending, start, nl + 1 - start);
    s.midline = false;
    start = nl + 1;
  }
  s.pending.erase(0, start);
  if (eof || s.pending.size() > kMaxPending) {
    if (!s.pending.empty()) {
      if (prefix && !s.midline) out += tag;
      out += s.pending;
      s.pending.clear();
      s.midline = true;
    }
    if (eof && prefix && s.midline) out += '\n';  // keep ranks' lines apart
  }
  writeStr(s.outFd, out);  // whole lines in one write: no interleaving
}
}  // namespace

bool pump(Stream& s, bool prefix, int maxReads) {
  char buf[65536];
  for (int i = 0; s.fd >= 0 && i < maxReads; ++i) {
    ssize_t n = read(s.fd, buf, sizeof buf);
    if (n > 0) {
      s.pending.append(buf, static_cast<size_t>(n));
      emitLines(s, prefix, false);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    emitLines(s, prefix, true);  // EOF (or a read error): flush and close
    close(s.fd);
    s.fd = -1;
  }
  return s.fd >= 0;
}

std::vector<int> allowedCpus() {
  cpu_set_t set;
  std::vector<int> out;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

}  // namespace batonrun

// baton-run: starts N local ranks of a program, relays their output with a
// "[rank] " prefix, and tears the job down when a rank fails.
//
//   baton-run -n N [--grace SECONDS] [--[no-]prefix] [--] program [args...]
//
// Each rank gets NCCL_COMM_ID=<host>:<free port>, BATON_RANK, BATON_NRANKS,
// BATON_LOCAL_RANK and BATON_LOCAL_NRANKS. All ranks live in one process
// group led by a watchdog (see launch.cc), so no rank or grandchild outlives
// baton-run, even when baton-run itself is SIGKILLed.
#include "baton_run.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <unordered_map>

using namespace batonrun;
using Clock = std::chrono::steady_clock;

namespace {

const char kUsage[] =
    "usage: baton-run -n N [--bind-to core|none] [--grace SECONDS] [--[no-]prefix] [--] program [args...]\n"
    "\n"
    "Starts N ranks of program on this host. Each rank gets NCCL_COMM_ID=<host>:<port>\n"
    "(a free TCP port), BATON_RANK, BATON_NRANKS, BATON_LOCAL_RANK, BATON_LOCAL_NRANKS.\n"
    "\n"
    "  -n N             number of ranks, 1..1024\n"
    "  --bind-to core|none\n"
    "                   core: rank r runs on the r-th CPU this launcher may use (all\n"
    "                   its threads); none: wherever the kernel puts it. Default, as\n"
    "                   OpenMPI's mpirun: core for 1 or 2 ranks, else none\n"
    "  --grace SECONDS  after a rank fails, how long the others may run on before\n"
    "                   SIGTERM (then SIGKILL 1 s later); default 3, env BATON_RUN_GRACE\n"
    "  --no-prefix      do not prefix output lines with \"[rank] \" (the default for\n"
    "                   nccl-tests' names, *_perf; --prefix puts it back)\n"
    "  -h, --help       show this help\n"
    "\n"
    "BATON_RUN_HOST replaces 127.0.0.1 in NCCL_COMM_ID. Rank 0 inherits stdin unless\n"
    "it is a terminal; the other ranks read /dev/null. SIGINT/SIGTERM are forwarded.\n"
    "With BATON_DUMP_SIGNAL set, the ranks still running when the grace ends get that\n"
    "signal first (they dump their flight recorders: baton-doctor), and 1 s more.\n"
    "Exit status: 0 if all ranks exit 0, else the first failing rank's code (128+signal\n"
    "if it was killed); 127 if the program cannot be executed; 2 on a usage error.\n";

[[noreturn]] void usageError(const std::string& msg) {
  writeStr(2, "baton-run: " + msg + "\n" + kUsage);
  std::exit(2);
}

bool parseInt(const std::string& s, long* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

double parseGrace(const std::string& s, const char* what) {
  char* end = nullptr;
  errno = 0;
  double v = s.empty() ? -1 : std::strtod(s.c_str(), &end);
  if (s.empty() || errno != 0 || *end != '\0' || !std::isfinite(v) || v < 0 || v > 1e6)
    usageError(std::string(what) + " must be a number of seconds >= 0 (got '" + s + "')");
  return v;
}

Options parseArgs(int argc, char** argv) {
  Options opt;
  bool haveN = false, haveGrace = false, havePrefix = false;
  std::string bindTo;  // --bind-to; empty: the default rule
  std::string nText;
  int i = 1;
  auto value = [&](const std::string& flag) -> std::string {
    if (i + 1 >= argc) usageError("option " + flag + " needs a value");
    return argv[++i];
  };
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "-h" || a == "--help") {
      writeStr(1, kUsage);
      std::exit(0);
    } else if (a == "-n") {
      nText = value(a), haveN = true;
    } else if (a.rfind("-n", 0) == 0 && a.size() > 2 && a[1] == 'n') {
      nText = a.substr(a[2] == '=' ? 3 : 2), haveN = true;
    } else if (a == "--grace") {
      opt.graceSec = parseGrace(value(a), "--grace"), haveGrace = true;
    } else if (a.rfind("--grace=", 0) == 0) {
      opt.graceSec = parseGrace(a.substr(8), "--grace"), haveGrace = true;
    } else if (a == "--bind-to" || a.rfind("--bind-to=", 0) == 0) {
      bindTo = a == "--bind-to" ? value(a) : a.substr(10);
      if (bindTo != "core" && bindTo != "none") usageError("--bind-to takes core or none (got '" + bindTo + "')");
    } else if (a == "--no-prefix") {
      opt.prefix = false;
    } else if (a == "--prefix") {
      opt.prefix = true, havePrefix = true;
    } else if (a.size() > 1 && a[0] == '-') {
      usageError("unknown option '" + a + "'");
    } else {
      break;  // the program; everything after it is its own arguments
    }
  }
  for (; i < argc; ++i) opt.argv.emplace_back(argv[i]);
  long n = 0;
  if (!haveN) usageError("missing -n N (number of ranks)");
  if (!parseInt(nText, &n) || n < 1 || n > kMaxRanks)
    usageError("-n must be an integer from 1 to " + std::to_string(kMaxRanks) + " (got '" + nText + "')");
  opt.nranks = static_cast<int>(n);
  if (opt.argv.empty() || opt.argv[0].empty()) usageError("no program given");
  // Two forked ranks start on their parent's CPU, and on a small machine they can share it for the
  // first milliseconds to seconds of a run, until the kernel moves one: every hand-off then costs a
  // context switch (5 us instead of 0.5 for a 512 B AllReduce here; docs/perf.md, "The first size").
  const std::vector<int> cpus = allowedCpus();
  if (bindTo == "core" && opt.nranks > (int)cpus.size())
    usageError("--bind-to core: " + std::to_string(opt.nranks) + " ranks but " + std::to_string(cpus.size()) +
               " CPUs to bind them to (use --bind-to none)");
  if (bindTo == "core" || (bindTo.empty() && opt.nranks <= 2 && opt.nranks <= (int)cpus.size()))
    opt.cpus.assign(cpus.begin(), cpus.begin() + opt.nranks);
  // nccl-tests' programs (all_reduce_perf, ...) print for scripts that parse their lines as they
  // are, and only rank 0 prints: no prefix unless asked for.
  const std::string& prog = opt.argv[0];
  const std::string base = prog.substr(prog.rfind('/') == std::string::npos ? 0 : prog.rfind('/') + 1);
  if (!havePrefix && base.size() > 5 && base.compare(base.size() - 5, 5, "_perf") == 0) opt.prefix = false;
  const char* g = std::getenv("BATON_RUN_GRACE");
  if (!haveGrace && g && *g) opt.graceSec = parseGrace(g, "BATON_RUN_GRACE");
  return opt;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt = parseArgs(argc, argv);
  const int selfPipeR = setupProcess(opt.nranks);

  const char* h = std::getenv("BATON_RUN_HOST");
  std::string host = (h && *h) ? h : "127.0.0.1";
  std::string err;
  int port = pickFreePort(host, &err);
  if (port == 0) {
    writeStr(2, "baton-run: cannot find a free TCP port: " + err + "\n");
    return 1;
  }
  bool v6 = host.find(':') != std::string::npos && host[0] != '[';
  std::string commId = (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);

  int keepalive = -1;
  pid_t watchdog = startWatchdog(&keepalive);
  if (watchdog < 0) {
    perror("baton-run: fork");
    return 1;
  }
  const pid_t pgid = watchdog;
  auto finish = [&](int code) {
    kill(-pgid, SIGKILL);  // ranks, grandchildren and the watchdog
    close(keepalive);      // (would make the watchdog do the same)
    // Reap what we can (subreaper: orphans are ours too) so nothing lingers
    // as a zombie; bounded, since a setsid()ed descendant escapes the kill.
    auto until = Clock::now() + std::chrono::milliseconds(500);
    for (;;) {
      pid_t p = waitpid(-1, nullptr, WNOHANG);
      if (p > 0 || (p < 0 && errno == EINTR)) continue;
      if (p < 0 || Clock::now() >= until) break;  // ECHILD: all reaped
      usleep(2000);
    }
    return code;
  };

  std::vector<Rank> ranks(opt.nranks);
  std::unordered_map<pid_t, int> rankOf;
  for (int r = 0; r < opt.nranks; ++r) {
    int e = 0;
    Spawn s = spawnRank(opt, r, commId, pgid, ranks[r], &e);
    if (s == Spawn::execFailed) {
      writeStr(2, "baton-run: cannot execute '" + opt.argv[0] + "': " + std::strerror(e) + "\n");
      return finish(127);
    }
    if (s == Spawn::sysError) {
      writeStr(2, "baton-run: cannot start rank " + std::to_string(r) + ": " + std::strerror(e) + "\n");
      return finish(1);
    }
    rankOf[ranks[r].pid] = r;
  }

  int alive = opt.nranks, firstCode = 0, signalsSeen = 0;
  bool terminating = false, swept = false, dumpAsked = false;
  const char* dumpEnv = getenv("BATON_DUMP_SIGNAL");
  const int dumpSignal = dumpEnv && *dumpEnv ? signalNumber(dumpEnv) : 0;
  std::optional<Clock::time_point> graceDeadline, killDeadline, drainDeadline;
  const auto grace = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opt.graceSec));

  auto reap = [&] {
    int st = 0;
    pid_t pid;
    while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
      auto it = rankOf.find(pid);
      if (it == rankOf.end()) continue;  // watchdog or an orphaned grandchild
      Rank& rk = ranks[it->second];
      rk.alive = false;
      --alive;
      pump(rk.out, opt.prefix, 64);  // its last words before our message
      pump(rk.err, opt.prefix, 64);
      if (WIFEXITED(st) && WEXITSTATUS(st) == 0) continue;
      int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      if (firstCode == 0) firstCode = code;
      if (terminating) continue;  // a consequence of our own signal
      std::string what =
          WIFEXITED(st) ? "exited with code " + std::to_string(code) : "killed by signal " + signalName(WTERMSIG(st));
      writeStr(2, "baton-run: rank " + std::to_string(it->second) + " " + what + "\n");
      if (!graceDeadline) graceDeadline = Clock::now() + grace;
    }
  };

  std::vector<pollfd> pfds;
  std::vector<Stream*> pstreams;
  for (;;) {
    reap();
    auto now = Clock::now();
    if (alive > 0 && !terminating && !dumpAsked && dumpSignal && graceDeadline && now >= *graceDeadline) {
      // BATON_DUMP_SIGNAL: the ranks still running dump their flight recorders (lesson 14) before
      // they are ended, so baton-doctor hears from a rank that sits in user code too.
      writeStr(2, "baton-run: asking " + std::to_string(alive) + " remaining rank(s) for a dump (" +
                      signalName(dumpSignal) + ")\n");
      for (const Rank& rk : ranks)
        if (rk.alive) kill(rk.pid, dumpSignal);
      dumpAsked = true;
      graceDeadline = now + std::chrono::seconds(1);
    }
    if (alive > 0 && !terminating && graceDeadline && now >= *graceDeadline) {
      writeStr(2, "baton-run: terminating " + std::to_string(alive) + " remaining rank(s)\n");
      kill(-pgid, SIGTERM);
      terminating = true;
      killDeadline = now + std::chrono::seconds(1);
    }
    if (alive > 0 && killDeadline && now >= *killDeadline) {
      kill(-pgid, SIGKILL);
      killDeadline.reset();
    }
    if (alive == 0 && !swept) {  // stray grandchildren holding our pipes
      kill(-pgid, SIGKILL);
      swept = true;
      drainDeadline = now + std::chrono::seconds(1);
    }

    pfds.assign(1, pollfd{selfPipeR, POLLIN, 0});
    pstreams.assign(1, nullptr);
    for (Rank& rk : ranks)
      for (Stream* s : {&rk.out, &rk.err})
        if (s->fd >= 0) pfds.push_back({s->fd, POLLIN, 0}), pstreams.push_back(s);
    if (alive == 0 && (pfds.size() == 1 || now >= *drainDeadline)) break;

    int timeout = -1;
    for (const auto& d : {terminating ? std::nullopt : graceDeadline, killDeadline, drainDeadline}) {
      if (!d) continue;
      auto ms = std::chrono::ceil<std::chrono::milliseconds>(*d - now).count();
      int t = static_cast<int>(std::clamp<long long>(ms, 0, 1 << 30));
      timeout = timeout < 0 ? t : std::min(timeout, t);
    }
    if (poll(pfds.data(), pfds.size(), timeout) < 0 && errno != EINTR) {
      perror("baton-run: poll");
      return finish(firstCode ? firstCode : 1);
    }
    if (pfds[0].revents & POLLIN) {
      unsigned char sigs[64];
      ssize_t n;
      while ((n = read(selfPipeR, sigs, sizeof sigs)) > 0) {
        for (ssize_t k = 0; k < n; ++k) {
          int sig = sigs[k];
          if (sig == SIGCHLD) continue;  // reap() runs every iteration
          if (++signalsSeen == 1) {
            writeStr(2, "baton-run: got " + signalName(sig) + ", forwarding to ranks\n");
            kill(-pgid, sig);  // the watchdog ignores it
            terminating = true;
            killDeadline = Clock::now() + grace + std::chrono::seconds(1);
          } else if (signalsSeen == 2) {
            writeStr(2, "baton-run: got " + signalName(sig) + " again, killing ranks\n");
            kill(-pgid, SIGKILL);
          }
        }
      }
    }
    for (size_t k = 1; k < pfds.size(); ++k)
      if (pfds[k].revents) pump(*pstreams[k], opt.prefix, 4);
  }
  for (Rank& rk : ranks)  // descendants that escaped the group: stop waiting
    for (Stream* s : {&rk.out, &rk.err})
      if (s->fd >= 0) close(s->fd), s->fd = -1;
  return finish(firstCode);
}

// baton-run: local launcher that starts N ranks of a program on this host.
//
// Shared declarations between main.cc (options and the supervision
// loop) and launch.cc (port choice, watchdog, spawning, output relay).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

namespace batonrun {

inline constexpr int kMaxRanks = 1024;

struct Options {
  int nranks = 0;
  double graceSec = 3.0;          // --grace / BATON_RUN_GRACE
  bool prefix = true;             // false with --no-prefix
  std::vector<std::string> argv;  // program and its arguments
  // --bind-to: rank r runs on cpus[r] (an empty list: no binding). OpenMPI's mpirun rule by
  // default: each rank bound to a core of its own when there are at most 2 and the CPUs allow.
  std::vector<int> cpus;
};

// The CPUs this process may run on, in order (sched_getaffinity).
std::vector<int> allowedCpus();

// One relayed child output stream (the stdout or stderr of one rank).
struct Stream {
  int fd = -1;    // non-blocking read end; -1 once EOF was seen
  int outFd = 1;  // where complete lines go: 1 or 2
  int rank = 0;
  std::string pending;   // bytes of a line whose '\n' has not arrived yet
  bool midline = false;  // part of the current line was already written
};

struct Rank {
  pid_t pid = -1;
  bool alive = false;
  Stream out, err;
};

// Process-wide setup: fds 0..2 open, RLIMIT_NOFILE raised for nranks,
// child subreaper, SIGPIPE ignored, and SIGCHLD/SIGINT/SIGTERM/SIGHUP
// written as one byte each to a self-pipe whose read end is returned.
int setupProcess(int nranks);

// Writes all of buf to fd, retrying on EINTR/EAGAIN; gives up silently on
// other errors (e.g. EPIPE when our own reader went away).
void writeAll(int fd, const char* buf, size_t len);
void writeStr(int fd, const std::string& s);

// "SIGSEGV" etc., or "signal N" for ones not in the table.
std::string signalName(int sig);
// "SIGUSR1", "USR1" or a number -> the signal (0: none of these).
int signalNumber(const std::string& text);

// A port on host (an IPv4/IPv6 literal; anything else, or a failed bind,
// falls back to the wildcard address) that binds now: a random one below the
// kernel's ephemeral range, else what bind(port 0) gives. Returns the port,
// or 0 with *err set.
int pickFreePort(const std::string& host, std::string* err);

// Forks a watchdog that leads the process group all ranks join. It holds
// the read end of a pipe whose write end (*keepaliveFd) only baton-run
// keeps; when baton-run dies for any reason (even SIGKILL) the watchdog sees
// EOF and SIGKILLs the whole group, grandchildren included.
pid_t startWatchdog(int* keepaliveFd);

enum class Spawn { ok, execFailed, sysError };

// Starts one rank: pipes for stdout/stderr, process group pgid,
// PR_SET_PDEATHSIG(SIGKILL), the BATON_* / NCCL_COMM_ID environment, then
// execvp. Waits until the exec either succeeded or failed (reported through
// a close-on-exec pipe); on failure *errNo holds the errno.
Spawn spawnRank(const Options& opt, int rank, const std::string& commId, pid_t pgid, Rank& r, int* errNo);

// Reads what is available on s (at most maxReads reads) and writes every
// complete line, prefixed with "[rank] " when prefix is set. At EOF flushes
// a partial last line, closes the fd and returns false.
bool pump(Stream& s, bool prefix, int maxReads);

}  // namespace batonrun

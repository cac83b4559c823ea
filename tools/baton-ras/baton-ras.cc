// baton-ras: asks a running job's RAS service what its communicators are doing (lesson 14,
// docs/fault-tolerance.md, "The RAS service"). The options and the protocol are those of NCCL's
// `ncclras` client, so either client talks to either library:
//
//   baton-ras                  the job's status (text)
//   baton-ras -v               verbose: every rank's counts and last collective
//   baton-ras -f json          the status as JSON
//   baton-ras -t 2             wait at most 2 s for other processes' answers (0: no limit)
//   baton-ras -m [GROUPS]      monitor: print events (a rank declared dead) until interrupted
//   baton-ras -h HOST -p PORT  where the service listens (default: NCCL_RAS_ADDR, else localhost:28028)
//
// It speaks text lines: CLIENT PROTOCOL 2 (answered SERVER PROTOCOL 2), TIMEOUT n, SET FORMAT f, then
// STATUS, VERBOSE STATUS or MONITOR, and prints what comes back until the service closes.
// Exit status: 0 answered, 1 no service or a protocol error.
#include <getopt.h>
#include <netdb.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

constexpr int kProtocol = 2;
constexpr int kDefaultTimeout = 5;  // the service's default wait for other processes

struct Options {
  std::string host = "localhost", port = "28028", format, monitorGroups;
  int timeout = -1;  // -1: the service's default
  bool verbose = false, monitor = false;
};

void usage(const char* argv0, FILE* to) {
  fprintf(to,
          "Usage: %s [OPTION]...\n"
          "Query the state of a running NCCL job (baton or NCCL) through its RAS service.\n\n"
          "  -f, --format=FMT       text or json (text by default)\n"
          "  -h, --host=HOST        the RAS service's host (NCCL_RAS_ADDR's, else localhost)\n"
          "  -m, --monitor[=GROUPS] print events until interrupted; GROUPS: lifecycle (default), trace, all\n"
          "  -p, --port=PORT        the RAS service's port (NCCL_RAS_ADDR's, else 28028)\n"
          "  -t, --timeout=SECS     how long the service waits for other processes (%d s; 0: no limit)\n"
          "  -v, --verbose          more detail: every rank's counts and last collective\n"
          "      --help             this text\n"
          "      --version          the client's version\n",
          argv0, kDefaultTimeout);
}

// NCCL_RAS_ADDR as the library reads it: host:port, host, :port or [v6]:port.
void addrFromEnv(Options* o) {
  const char* env = getenv("NCCL_RAS_ADDR");
  if (!env || !*env) return;
  std::string s = env, host = s, port;
  if (s[0] == '[') {
    const size_t close = s.find(']');
    if (close == std::string::npos) return;
    host = s.substr(1, close - 1);
    if (close + 2 <= s.size() && s[close + 1] == ':') port = s.substr(close + 2);
  } else if (const size_t colon = s.rfind(':'); colon != std::string::npos && s.find(':') == colon) {
    host = s.substr(0, colon), port = s.substr(colon + 1);
  }
  if (!host.empty()) o->host = host;
  if (!port.empty()) o->port = port;
}

bool parse(int argc, char** argv, Options* o) {
  const option longOpts[] = {{"format", required_argument, nullptr, 'f'},
                             {"host", required_argument, nullptr, 'h'},
                             {"monitor", optional_argument, nullptr, 'm'},
                             {"port", required_argument, nullptr, 'p'},
                             {"timeout", required_argument, nullptr, 't'},
                             {"verbose", no_argument, nullptr, 'v'},
                             {"help", no_argument, nullptr, 'H'},
                             {"version", no_argument, nullptr, 'V'},
                             {nullptr, 0, nullptr, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "f:h:m::p:t:v", longOpts, nullptr)) != -1) {
    switch (c) {
      case 'f':
        o->format = optarg;
        if (strcasecmp(optarg, "text") != 0 && strcasecmp(optarg, "json") != 0) {
          fprintf(stderr, "baton-ras: invalid format '%s' (text or json)\n", optarg);
          return false;
        }
        break;
      case 'h': o->host = optarg; break;
      case 'm':
        o->monitor = true;
        if (optarg) o->monitorGroups = optarg;
        break;
      case 'p': o->port = optarg; break;
      case 't': {
        char* end = nullptr;
        const long t = strtol(optarg, &end, 10);
        if (t < 0 || !*optarg || *end) {
          fprintf(stderr, "baton-ras: invalid timeout '%s' (whole seconds, 0 or more)\n", optarg);
          return false;
        }
        o->timeout = (int)t;
        break;
      }
      case 'v': o->verbose = true; break;
      case 'H': usage(argv[0], stdout), exit(0);
      case 'V': printf("baton-ras (RAS client protocol %d)\n", kProtocol), exit(0);
      default: usage(argv[0], stderr); return false;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "baton-ras: unexpected argument '%s'\n", argv[optind]);
    return false;
  }
  return true;
}

void setRecvTimeout(int fd, int secs) {
  timeval tv{secs, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

int connectTo(const Options& o) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_UNSPEC, hints.ai_socktype = SOCK_STREAM;
  if (const int rc = getaddrinfo(o.host.c_str(), o.port.c_str(), &hints, &res); rc != 0) {
    fprintf(stderr, "baton-ras: resolving %s:%s: %s\n", o.host.c_str(), o.port.c_str(), gai_strerror(rc));
    return -1;
  }
  int fd = -1, err = 0;
  for (addrinfo* a = res; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) continue;
    setRecvTimeout(fd, 1);  // a service that does not answer the handshake in a second is not one
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) err = errno, close(fd), fd = -1;
  }
  freeaddrinfo(res);
  if (fd < 0)
    fprintf(stderr,
            "baton-ras: cannot connect to the RAS service at %s:%s: %s\n"
            "  Is the job running on this host with the RAS service on (NCCL_RAS_ENABLE), and does\n"
            "  NCCL_RAS_ADDR (or -h/-p) name where it listens?\n",
            o.host.c_str(), o.port.c_str(), strerror(err));
  return fd;
}

bool sendLine(int fd, const std::string& line) {
  const std::string s = line + "\n";
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t w = send(fd, s.data() + done, s.size() - done, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    done += (size_t)w;
  }
  return true;
}

// One answer line (up to its newline); false on a closed connection or a timeout.
bool readLine(int fd, std::string* line) {
  line->clear();
  char c;
  while (true) {
    const ssize_t r = recv(fd, &c, 1, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    if (c == '\n') return true;
    *line += c;
  }
}

// Sends `cmd` and expects `want` at the start of the answer.
bool exchange(int fd, const std::string& cmd, const char* want, std::string* answer) {
  if (!sendLine(fd, cmd) || !readLine(fd, answer)) {
    fprintf(stderr, "baton-ras: no answer to '%s' (%s)\n", cmd.c_str(), errno ? strerror(errno) : "closed");
    return false;
  }
  if (strncasecmp(answer->c_str(), want, strlen(want)) != 0) {
    fprintf(stderr, "baton-ras: unexpected answer to '%s': %s\n", cmd.c_str(), answer->c_str());
    return false;
  }
  return true;
}

// Copies the rest of the connection to stdout until the service closes it.
bool copyOut(int fd) {
  char buf[4096];
  while (true) {
    const ssize_t r = recv(fd, buf, sizeof buf, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      fprintf(stderr, "baton-ras: %s while reading the answer\n", strerror(errno));
      return false;
    }
    if (r == 0) return true;
    if (fwrite(buf, 1, (size_t)r, stdout) != (size_t)r) return false;
    fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  addrFromEnv(&o);
  if (!parse(argc, argv, &o)) return 1;
  const int fd = connectTo(o);
  if (fd < 0) return 1;
  std::string answer;
  if (!exchange(fd, "CLIENT PROTOCOL " + std::to_string(kProtocol), "SERVER PROTOCOL ", &answer)) return 1;
  if (atoi(answer.c_str() + strlen("SERVER PROTOCOL ")) != kProtocol)
    fprintf(stderr, "baton-ras: the service speaks protocol %s, this client %d; going on\n",
            answer.c_str() + strlen("SERVER PROTOCOL "), kProtocol);
  if (o.timeout >= 0 && !exchange(fd, "TIMEOUT " + std::to_string(o.timeout), "OK", &answer)) return 1;
  if (!o.format.empty() && !exchange(fd, "SET FORMAT " + o.format, "OK", &answer)) return 1;
  if (o.monitor) {
    if (!exchange(fd, o.monitorGroups.empty() ? "MONITOR" : "MONITOR " + o.monitorGroups, "OK", &answer)) return 1;
    fprintf(stderr, "RAS monitor: watching for events (Ctrl+C to stop)...\n");
    setRecvTimeout(fd, 0);  // events come when they come
    const bool ok = copyOut(fd);
    fprintf(stderr, "baton-ras: the job closed the connection\n");
    return ok ? 0 : 1;
  }
  // The service waits up to the timeout for other processes, then writes: allow for both.
  setRecvTimeout(fd, o.timeout == 0 ? 0 : (o.timeout > 0 ? o.timeout : kDefaultTimeout) + 5);
  if (!sendLine(fd, o.verbose ? "VERBOSE STATUS" : "STATUS")) {
    fprintf(stderr, "baton-ras: cannot send the query: %s\n", strerror(errno));
    return 1;
  }
  const bool ok = copyOut(fd);
  close(fd);
  return ok ? 0 : 1;
}

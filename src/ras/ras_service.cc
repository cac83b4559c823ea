// The RAS service's thread: the listener, its clients, the gathering of every communicator's ranks
// and the monitor's events (ras_service.h).
#include "ras/ras_service.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "comm.h"
#include "comm_registry.h"
#include "fault/watchdog.h"
#include "misc/debug.h"
#include "misc/json_text.h"
#include "misc/param.h"
#include "misc/socket.h"
#include "ras/client_protocol.h"
#include "ras/status_report.h"

namespace baton {

namespace {

constexpr const char* kDefaultAddr = "localhost:28028";  // NCCL's
constexpr size_t kMaxClients = 32;

std::string localTime() {
  const time_t t = time(nullptr);
  tm lt;
  localtime_r(&t, &lt);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &lt);
  return buf;
}

// "10.77.0.2:4711" -> "10.77.0.2" (the watchdog's addresses name a rank's host).
std::string hostOf(const std::string& where) {
  const size_t colon = where.rfind(':');
  return colon == std::string::npos ? where : where.substr(0, colon);
}

// A status is a few kB: a client that reads none of it for 2 s is dropped, not waited for.
bool sendAll(int fd, const std::string& s) { return socketSendQuiet(fd, s.data(), s.size(), nowNs() + 2000000000ull); }

struct Client {
  int fd = -1;
  std::string in;
  RasSession session;
  bool monitor = false;
  uint64_t lastLineNs = 0;  // when it connected or last sent a whole line
};

class RasService {
 public:
  RasService(std::string host, std::string port, uint64_t idleNs)
      : host_(std::move(host)), port_(std::move(port)), idleNs_(idleNs) {}
  void run();

 private:
  bool tryListen();
  void onClient(Client& c);
  RasJobView gather(double timeoutSec);
  void checkDeaths(bool quiet);

  std::string host_, port_;
  uint64_t idleNs_;  // a client that sends no whole line for this long is dropped (not a monitor)
  int lfd_ = -1;
  bool saidTaken_ = false, gaveUp_ = false;
  uint64_t nextTryNs_ = 0;
  std::vector<Client> clients_;
  std::set<std::pair<uint64_t, int>> reportedDead_;
};

// Binds the address, or learns that another process holds it (try again later) or that it cannot
// be bound at all (give up: say so once).
bool RasService::tryListen() {
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_UNSPEC, hints.ai_socktype = SOCK_STREAM, hints.ai_flags = AI_PASSIVE;
  const int rc = getaddrinfo(host_.empty() ? nullptr : host_.c_str(), port_.c_str(), &hints, &res);
  if (rc != 0) {
    BATON_WARN("RAS: NCCL_RAS_ADDR %s:%s: %s; the RAS service is off", host_.c_str(), port_.c_str(), gai_strerror(rc));
    gaveUp_ = true;
    return false;
  }
  int err = 0;
  for (addrinfo* a = res; a && lfd_ < 0; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 16) == 0) lfd_ = fd;
    else err = errno, close(fd);
  }
  freeaddrinfo(res);
  if (lfd_ >= 0) {
    BATON_INFO(kSubInit, "RAS: pid %d serves NCCL's RAS clients on %s:%s (ncclras, baton-ras)", (int)getpid(),
               host_.c_str(), port_.c_str());
    return true;
  }
  if (err == EADDRINUSE) {
    if (!saidTaken_)
      BATON_INFO(kSubInit, "RAS: %s:%s is taken (another process of this host serves it); retrying every second",
                 host_.c_str(), port_.c_str());
    saidTaken_ = true;
    return false;
  }
  BATON_WARN("RAS: cannot listen on NCCL_RAS_ADDR %s:%s: %s; the RAS service is off", host_.c_str(), port_.c_str(),
             strerror(err));
  gaveUp_ = true;
  return false;
}

// Every communicator this process is a rank of: its local ranks read here, the others asked over
// the watchdog's mesh (once per communicator).
RasJobView RasService::gather(double timeoutSec) {
  const uint64_t t0 = nowNs();
  const uint64_t timeoutNs = timeoutSec > 0 ? (uint64_t)(timeoutSec * 1e9) : 24ull * 3600 * 1000000000ull;
  RasJobView job;
  std::map<uint64_t, size_t> index;
  std::map<uint64_t, std::map<std::string, std::string>> nodeOfAddr;  // per comm: address -> host name
  std::set<uint64_t> asked;
  forEachReadyComm([&](ncclComm* comm) {
    auto [it, fresh] = index.emplace(comm->commHash, job.comms.size());
    if (fresh) {
      RasCommView v;
      v.hash = comm->commHash, v.nRanks = comm->nRanks;
      v.ranks.resize(comm->nRanks);
      for (int r = 0; r < comm->nRanks; ++r) {
        v.ranks[r].pid = comm->peers[r].pid;
        v.ranks[r].why =
            "in another process, and this communicator has no watchdog to ask it through (BATON_TIMEOUT=0)";
      }
      job.comms.push_back(std::move(v));
    }
    RasCommView& v = job.comms[it->second];
    RasRankView& me = v.ranks[comm->rank];
    me.kind = RasRankView::kPresent, me.state = rasStateOf(comm), me.node = me.state.host, me.pid = me.state.pid;
    me.why.clear();
    if (!comm->watchdog || !asked.insert(comm->commHash).second) return;
    const std::vector<Watchdog::RasAnswer> answers = comm->watchdog->rasGather(timeoutNs);
    for (int p = 0; p < comm->nRanks; ++p) {
      const Watchdog::RasAnswer& a = answers[p];
      RasRankView& r = v.ranks[p];
      if (p == comm->rank) {
        nodeOfAddr[comm->commHash][hostOf(a.where)] = me.node;
        continue;
      }
      if (r.kind == RasRankView::kPresent) continue;  // a rank of this process, read directly
      r.why.clear();
      if (a.replied) {
        r.kind = RasRankView::kPresent, r.state = a.state, r.node = a.state.host, r.pid = a.state.pid;
        nodeOfAddr[comm->commHash][hostOf(a.where)] = r.node;
      } else {
        r.kind = a.dead ? RasRankView::kDead : a.left ? RasRankView::kLeft : RasRankView::kUnresponsive;
        r.node = hostOf(a.where);  // named after a peer on the same address below, where one answered
        r.why = a.why;
        if (r.kind == RasRankView::kUnresponsive) ++job.timeouts;
      }
    }
  });
  for (RasCommView& v : job.comms)
    for (RasRankView& r : v.ranks) {
      if (r.kind == RasRankView::kPresent || r.node.empty()) continue;
      const auto& names = nodeOfAddr[v.hash];
      if (auto n = names.find(r.node); n != names.end()) r.node = n->second;
    }
  job.collectSec = (nowNs() - t0) / 1e9;
  job.timestamp = localTime();
  return job;
}

// The monitor's lifecycle events: a peer the watchdog declared dead since the last look.
void RasService::checkDeaths(bool quiet) {
  std::vector<std::string> text, json;
  char myHost[64];
  rasHostName(myHost, sizeof myHost);
  forEachReadyComm([&](ncclComm* comm) {
    if (!comm->watchdog) return;
    const std::string myAddr = hostOf(comm->watchdog->addressOf(comm->rank));
    for (const Watchdog::RasAnswer& d : comm->watchdog->deadRanks()) {
      if (!reportedDead_.insert({comm->commHash, d.state.rank}).second || quiet) continue;
      const int pid = comm->peers[d.state.rank].pid;
      // A peer at this rank's own address is on this host: name it as this host names itself.
      const std::string node = hostOf(d.where) == myAddr ? std::string(myHost) : hostOf(d.where);
      char line[768];
      snprintf(line, sizeof line,
               "[%s] PEER_DEAD: Process %d on node %s managing rank %d of communicator %016llx: %s\n",
               localTime().c_str(), pid, node.c_str(), d.state.rank, (unsigned long long)comm->commHash, d.why.c_str());
      text.push_back(line);
      std::string j = "{";
      jsonField(j, "timestamp", localTime().c_str());
      jsonField(j, "group", "LIFECYCLE");
      jsonField(j, "event", "PEER_DEAD");
      jsonKey(j, "peer");
      j += "{";
      jsonField(j, "host", node.c_str());
      jsonField(j, "pid", pid);
      jsonKey(j, "ranks");
      j += "[" + std::to_string(d.state.rank) + "],";
      jsonKey(j, "cuda_devs"), j += "[],";
      jsonKey(j, "nvml_devs"), j += "[]";
      j += "},";
      char hash[32];
      snprintf(hash, sizeof hash, "0x%016llx", (unsigned long long)comm->commHash);
      jsonField(j, "communicator", hash);
      jsonField(j, "details", d.why.c_str());
      jsonClose(j, '}');
      json.push_back(j + "\n");
    }
  });
  for (Client& c : clients_) {
    if (!c.monitor || !(c.session.monitorGroups & kRasLifecycle)) continue;
    for (size_t i = 0; i < text.size() && c.fd >= 0; ++i)
      if (!sendAll(c.fd, c.session.json ? json[i] : text[i])) close(c.fd), c.fd = -1;
  }
}

void RasService::onClient(Client& c) {
  char buf[4096];
  const ssize_t n = recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
    close(c.fd), c.fd = -1;
    return;
  }
  if (n < 0) return;
  c.in.append(buf, (size_t)n);
  if (c.in.size() > 65536) {  // no command is that long: not a RAS client
    close(c.fd), c.fd = -1;
    return;
  }
  size_t nl;
  while (c.fd >= 0 && (nl = c.in.find('\n')) != std::string::npos) {
    const std::string line = c.in.substr(0, nl);
    c.in.erase(0, nl + 1);
    c.lastLineNs = nowNs();
    if (c.monitor) continue;  // a monitoring client only listens
    std::string reply;
    const RasAction act = rasOnLine(c.session, line, &reply);
    if (act == RasAction::kStatus) {
      const RasJobView job = gather(c.session.timeoutSec);
      reply = c.session.json ? rasStatusJson(job) : rasStatusText(job, c.session.verbose);
    }
    if (act == RasAction::kMonitor) {
      bool others = false;
      for (const Client& o : clients_) others |= o.fd >= 0 && o.monitor;
      if (!others) checkDeaths(/*quiet=*/true);  // deaths before monitoring started are old news
      c.monitor = true;
    }
    if (!sendAll(c.fd, reply) || act == RasAction::kStatus) close(c.fd), c.fd = -1;  // a status ends the session
  }
}

void RasService::run() {
  std::vector<pollfd> pfds;
  while (true) {
    const uint64_t now = nowNs();
    if (lfd_ < 0 && !gaveUp_ && now >= nextTryNs_) {
      tryListen();
      nextTryNs_ = now + 1000000000ull;
    }
    if (gaveUp_ && clients_.empty()) return;
    pfds.clear();
    if (lfd_ >= 0) pfds.push_back({lfd_, POLLIN, 0});
    for (const Client& c : clients_) pfds.push_back({c.fd, POLLIN, 0});
    poll(pfds.data(), pfds.size(), 200);
    size_t i = 0;
    if (lfd_ >= 0 && pfds[i++].revents) {
      const int fd = accept4(lfd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd >= 0 && clients_.size() >= kMaxClients) close(fd);
      else if (fd >= 0) clients_.push_back(Client{fd, {}, {}, false, nowNs()});
    }
    for (size_t k = 0; k + i < pfds.size() && k < clients_.size(); ++k)
      if (pfds[k + i].revents) onClient(clients_[k]);
    bool monitoring = false;
    for (Client& c : clients_) {
      monitoring |= c.fd >= 0 && c.monitor;
      if (c.fd >= 0 && !c.monitor && nowNs() - c.lastLineNs > idleNs_) close(c.fd), c.fd = -1;  // silent
    }
    if (monitoring) checkDeaths(false);
    std::erase_if(clients_, [](const Client& c) { return c.fd < 0; });
  }
}

}  // namespace

bool rasParseAddr(const std::string& spec, std::string* host, std::string* port) {
  std::string h = spec, p = "28028";
  if (!spec.empty() && spec[0] == '[') {  // [v6]:port
    const size_t close = spec.find(']');
    if (close == std::string::npos) return false;
    h = spec.substr(1, close - 1);
    if (close + 1 < spec.size()) {
      if (spec[close + 1] != ':') return false;
      p = spec.substr(close + 2);
    }
  } else if (const size_t colon = spec.rfind(':'); colon != std::string::npos) {
    if (spec.find(':') != colon) return false;  // a bare v6 address needs brackets
    h = spec.substr(0, colon), p = spec.substr(colon + 1);
  }
  if (h.empty()) h = "localhost";
  if (p.empty() || p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos || std::stoi(p) > 65535)
    return false;
  *host = h, *port = p;
  return true;
}

void rasServiceStart() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (envInt("NCCL_RAS_ENABLE", 1) == 0) return;
    const std::string spec = envStr("NCCL_RAS_ADDR", kDefaultAddr);
    std::string host, port;
    if (!rasParseAddr(spec, &host, &port)) {
      BATON_WARN("RAS: NCCL_RAS_ADDR '%s' is not host:port; the RAS service is off", spec.c_str());
      return;
    }
    // Never freed and detached: it serves as long as the process lives, and touches no object
    // that exit() destroys (the registry's lock is a plain mutex).
    const double idle = envSeconds("BATON_RAS_IDLE_TIMEOUT", 60);
    RasService* service = new RasService(host, port, (uint64_t)(std::max(idle, 0.1) * 1e9));
    std::thread([service] { service->run(); }).detach();
  });
}

}  // namespace baton

// The watchdog's mesh, heartbeats and failure reports (watchdog.h).
#include "fault/watchdog.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "comm.h"
#include "comm_error.h"
#include "fault/child_comm.h"
#include "fault/watchdog_wire.h"
#include "misc/debug.h"
#include "misc/socket.h"

namespace baton {

namespace {

constexpr uint64_t kWatchdogMagic = 0x7761746368646f67ull;  // "watchdog", mixed with the comm's hash

// A peer that reads nothing for 100 ms while its socket buffer is full is not healthy.
constexpr uint64_t kSendPatienceNs = 100000000ull;

}  // namespace

Watchdog::Watchdog(ncclComm* comm, uint64_t timeoutNs)
    : comm_(comm),
      rank_(comm->rank),
      nRanks_(comm->nRanks),
      timeoutNs_(timeoutNs),
      intervalNs_(timeoutNs / 5),
      fds_(comm->nRanks, -1),
      lastHeard_(comm->nRanks, 0),
      left_(comm->nRanks, false),
      inbuf_(comm->nRanks),
      where_(comm->nRanks),
      dead_(comm->nRanks + 1),
      deadWhy_(comm->nRanks),
      agreement_(comm->rank, comm->nRanks, [this](int peer, const AgreeMsg& m) { send(peer, m.type, &m); }) {}

ncclResult_t Watchdog::start(ncclComm* comm, uint64_t timeoutNs, SubsystemPtr<Watchdog>* out) {
  std::unique_ptr<Watchdog> w(new Watchdog(comm, timeoutNs));
  const int me = comm->rank, n = comm->nRanks;
  SocketAddress listen{};
  int lfd = -1;
  BATON_CHECK(chooseBindAddress(&comm->id.addr, &listen, nullptr));
  BATON_CHECK(socketListen(&listen, &lfd));
  std::vector<SocketAddress> addrs(n);
  addrs[me] = listen;
  ncclResult_t res = comm->bootstrap->allGather(addrs.data(), sizeof(SocketAddress));
  for (int p = 0; p < n; ++p) w->where_[p] = addressToString(addrs[p]);
  const uint64_t magic = kWatchdogMagic ^ comm->commHash;
  const uint64_t deadline = bootstrapDeadline();
  // Lower ranks listen, higher ranks connect: a connect completes in the listener's backlog, so
  // every rank can first connect to all below it, then accept all above it.
  for (int p = 0; p < me && res == ncclSuccess; ++p) {
    res = socketConnect(addrs[p], magic, kSocketWatchdog, deadline, &comm->abortFlag, &w->fds_[p]);
    const int32_t r = me;
    if (res == ncclSuccess) res = socketSendAll(w->fds_[p], &r, sizeof r, deadline);
  }
  for (int k = me + 1; k < n && res == ncclSuccess;) {
    int fd = -1;
    res = socketAccept(lfd, deadline, &comm->abortFlag, &fd);
    if (res != ncclSuccess) break;
    int32_t r = -1;
    if (!socketCheckHandshake(fd, magic, kSocketWatchdog, deadline) ||
        socketRecvAll(fd, &r, sizeof r, deadline, &comm->abortFlag) != ncclSuccess || r <= me || r >= n ||
        w->fds_[r] >= 0) {
      socketClose(fd);  // a stranger, or a rank that is not ours to accept
      continue;
    }
    w->fds_[r] = fd;
    ++k;
  }
  socketClose(lfd);
  if (res != ncclSuccess)
    return batonError(res, "rank %d: the watchdog mesh (BATON_TIMEOUT) could not connect: %s", me, lastError());
  const uint64_t now = nowNs();
  for (int p = 0; p < n; ++p) {
    if (w->fds_[p] < 0) continue;
    fcntl(w->fds_[p], F_SETFL, fcntl(w->fds_[p], F_GETFL) | O_NONBLOCK);
    w->lastHeard_[p] = now;
  }
  w->wakeFd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  w->thread_ = std::thread([p = w.get()] { p->run(); });
  BATON_INFO(kSubInit, "rank %d: watchdog up, %d peers, heartbeat every %.2f s, timeout %.2f s", me, n - 1,
             w->intervalNs_ / 1e9, timeoutNs / 1e9);
  *out = SubsystemPtr<Watchdog>(w.release(), SubsystemDeleter<Watchdog>{[](Watchdog* p) { delete p; }});
  return ncclSuccess;
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    // From here on this rank is leaving: a peer that already left, or whose goodbye crosses ours,
    // is not news to report (reporting it would fail the operations of ranks still finishing).
    leaving_ = true;
    closing_ = true;  // a thread waiting in agree() or failedRanks() returns now
    for (int p = 0; p < nRanks_; ++p)
      if (fds_[p] >= 0 && !dead_.has(p)) send(p, kWireBye, nullptr);  // leaving, not failing
  }
  cv_.notify_all();
  {
    // Wait for those threads to leave (they hold mu_ when they wake), so mu_ and cv_ outlive them.
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return waiters_ == 0; });
  }
  stop_.store(true);
  if (wakeFd_ >= 0) {
    const uint64_t one = 1;
    (void)!write(wakeFd_, &one, sizeof one);
  }
  if (thread_.joinable()) thread_.join();
  for (int& fd : fds_) socketClose(fd);
  socketClose(wakeFd_);
}

static_assert(kRasStateWords <= kWireMaxRasWords, "a RAS reply must fit the frames peers accept");

void Watchdog::send(int peer, uint32_t type, const AgreeMsg* msg) {
  sendFrame(peer, type, msg ? msg->round : 0, msg ? msg->key : 0, msg ? msg->value.words.data() : nullptr,
            msg ? msg->value.words.size() : 0);
}

void Watchdog::sendFrame(int peer, uint32_t type, uint32_t round, uint64_t key, const void* words, size_t nWords) {
  if (fds_[peer] < 0 || left_[peer]) return;
  const WireHeader h{type, round, key, (uint32_t)nWords, 0};
  std::string buf(reinterpret_cast<const char*>(&h), sizeof h);
  if (nWords) buf.append(static_cast<const char*>(words), nWords * 8);
  if (!socketSendQuiet(fds_[peer], buf.data(), buf.size(), nowNs() + kSendPatienceNs) && !leaving_) {
    // Reported by the thread's next pass (suspect() would re-enter the agreement that is sending).
    shutdown(fds_[peer], SHUT_RDWR);
    const uint64_t one = 1;
    (void)!write(wakeFd_, &one, sizeof one);
  }
}

void Watchdog::reportDead(int peer, const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (peer >= 0 && peer < nRanks_ && peer != rank_ && !left_[peer]) suspect(peer, why);
}

void Watchdog::suspect(int peer, const std::string& why) {
  if (dead_.has(peer) || leaving_) return;
  dead_.add(peer);
  deadWhy_[peer] = why;
  socketClose(fds_[peer]);
  const PeerInfo& info = comm_->peers[peer];
  char msg[512];
  const bool local = info.hostHash == comm_->peers[rank_].hostHash;
  snprintf(msg, sizeof msg, "rank %d (pid %d%s%s) failed: %s", peer, info.pid, local ? ", this host" : " at ",
           local ? "" : where_[peer].c_str(), why.c_str());
  BATON_WARN("rank %d: %s", rank_, msg);
  commNoteFailureCause(comm_, peer);          // told to the ring neighbours with the failure
  commSetError(comm_, ncclRemoteError, msg);  // every in-flight operation of this rank returns
  commAbortChildInit(comm_, peer);            // and a shrink that counted on it stops
  agreement_.onSuspect(peer);
  startFailureEpoch();
  cv_.notify_all();
}

void Watchdog::startFailureEpoch() {
  const uint64_t key = kAgreeFailureKind + failureEpoch_;
  if (failureEpoch_ > 0 && !agreement_.decided(key, nullptr)) return;  // the running one took the news
  ++failureEpoch_;
  agreement_.join(kAgreeFailureKind + failureEpoch_, dead_);
}

bool Watchdog::receive(int peer) {
  char tmp[4096];
  while (true) {
    const ssize_t r = recv(fds_[peer], tmp, sizeof tmp, MSG_DONTWAIT);
    if (r > 0) {
      inbuf_[peer].append(tmp, (size_t)r);
      lastHeard_[peer] = nowNs();
      continue;
    }
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
    return false;  // EOF, reset or error
  }
}

void Watchdog::onBytes(int peer) {
  std::string& in = inbuf_[peer];
  size_t off = 0;
  while (true) {
    WireHeader h;
    size_t len = 0;
    const FrameRead got = readWatchdogFrame(std::string_view(in).substr(off), dead_.words.size(), &h, &len);
    if (got == FrameRead::kNeedMore) break;
    if (got == FrameRead::kStranger) {  // not a message of ours: end the connection (it is reported)
      in.clear();
      shutdown(fds_[peer], SHUT_RDWR);
      return;
    }
    if (h.type == kWireBye) {
      // Gone without failing: no error, but no agreement may wait for it either (an application
      // that destroys a communicator on one rank while others use it learns that it is gone).
      left_[peer] = true;
      agreement_.onGone(peer);
    } else if (h.type == kWireRasQuery) {
      // Answered here, by the watchdog's thread: the rank's own threads are never asked to stop.
      const RasRankState st = rasStateOf(comm_);
      sendFrame(peer, kWireRasReply, 0, h.key, &st, kRasStateWords);
    } else if (h.type == kWireRasReply) {
      if (h.nWords == kRasStateWords && h.key == rasQuery_ && peer < (int)rasAnswers_.size()) {
        memcpy(&rasAnswers_[peer].state, in.data() + off + sizeof h, sizeof(RasRankState));
        rasAnswers_[peer].replied = true;
      }
    } else if ((h.type == kAgreeRound || h.type == kAgreeDecide) && !leaving_ && h.nWords == dead_.words.size() &&
               !(h.key >= kAgreeVoteKind && h.key < voteFloor_)) {
      AgreeMsg m = agreeMsgFromFrame(h, in.data() + off, nRanks_ + 1);
      // Its value names ranks the sender believes dead: news for this rank too.
      for (int r = 0; r < nRanks_; ++r) {
        if (!m.value.has(r) || dead_.has(r) || (r == peer && r != rank_)) continue;
        char why[160];
        if (r == rank_) {
          snprintf(why, sizeof why, "rank %d: the other ranks declared this rank failed (rank %d reported it)", rank_,
                   peer);
          commSetError(comm_, ncclRemoteError, why);
          dead_.add(r);
          agreement_.onSuspect(r);  // excluded: no agreement of this rank waits for anyone now
          continue;
        }
        snprintf(why, sizeof why, "reported by rank %d", peer);
        suspect(r, why);
      }
      if ((h.key & ~((1ull << 56) - 1)) == kAgreeFailureKind && !agreement_.joined(h.key)) {
        failureEpoch_ = std::max(failureEpoch_, h.key - kAgreeFailureKind);
        agreement_.join(h.key, dead_);  // failure epochs need no local input: join at once
      }
      agreement_.onMessage(peer, m);
    }
    off += len;
  }
  in.erase(0, off);
}

void Watchdog::run() {
  std::vector<pollfd> pfds;
  std::vector<int> who;
  while (!stop_.load()) {
    pfds.assign(1, pollfd{wakeFd_, POLLIN, 0});
    who.assign(1, -1);
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int p = 0; p < nRanks_; ++p)
        if (fds_[p] >= 0) pfds.push_back({fds_[p], POLLIN, 0}), who.push_back(p);
    }
    poll(pfds.data(), pfds.size(), (int)std::max<uint64_t>(intervalNs_ / 2000000, 10));
    if (pfds[0].revents) {
      uint64_t v;
      (void)!read(wakeFd_, &v, sizeof v);
    }
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 1; i < pfds.size(); ++i) {
      const int p = who[i];
      if (fds_[p] < 0) continue;
      const bool open = receive(p);
      onBytes(p);
      if (open) continue;
      if (left_[p]) socketClose(fds_[p]);
      else suspect(p, "its watchdog connection closed (the process exited or was killed)");
    }
    const uint64_t now = nowNs();
    for (int p = 0; p < nRanks_; ++p) {
      if (fds_[p] < 0 || left_[p] || dead_.has(p) || now - lastHeard_[p] <= timeoutNs_) continue;
      char why[160];
      snprintf(why, sizeof why,
               "no heartbeat for %.1f s (BATON_TIMEOUT): the process is stopped or hung, or its host is unreachable",
               (now - lastHeard_[p]) / 1e9);
      suspect(p, why);
    }
    if (now - lastSentNs_ >= intervalNs_) {
      lastSentNs_ = now;
      for (int p = 0; p < nRanks_; ++p)
        if (!dead_.has(p)) send(p, kWireHeartbeat, nullptr);
    }
    cv_.notify_all();
  }
}

// Counts a thread inside agree() or failedRanks(), so the destructor waits until it has left.
struct Watchdog::Waiter {
  Watchdog* w;
  explicit Waiter(Watchdog* w) : w(w) { ++w->waiters_; }
  ~Waiter() {
    --w->waiters_;
    w->cv_.notify_all();
  }
};

void Watchdog::close() {
  std::lock_guard<std::mutex> lock(mu_);
  closing_ = true;
  cv_.notify_all();
}

ncclResult_t Watchdog::agree(uint64_t key, const RankSet& proposal, uint64_t timeoutNs, RankSet* decided) {
  std::unique_lock<std::mutex> lock(mu_);
  Waiter waiter(this);
  RankSet p = proposal;
  p.merge(dead_);
  agreement_.join(key, p);
  if (key >= kAgreeVoteKind && key > kAgreeVoteKind + 1 && key - 1 > voteFloor_) {
    voteFloor_ = key - 1;  // keep this vote and the one before; older ones are done everywhere
    agreement_.forgetRange(kAgreeVoteKind, voteFloor_);
  }
  if (timeoutNs == 0) return ncclSuccess;
  auto done = [&] { return closing_ || agreement_.decided(key, decided); };
  if (!cv_.wait_for(lock, std::chrono::nanoseconds(timeoutNs), done) && key >= kAgreeVoteKind) {
    // Given up on: from now on this rank's value says "roll back", so no decision made from here
    // can commit; a commit decided elsewhere before still reaches us, so wait for it once more.
    agreement_.amend(key, nRanks_);
    cv_.wait_for(lock, std::chrono::nanoseconds(timeoutNs), done);
  }
  if (closing_) return batonError(ncclInvalidUsage, "rank %d: the communicator was aborted during agreement", rank_);
  if (!agreement_.decided(key, decided))
    return batonError(ncclRemoteError, "rank %d: agreement 0x%llx did not finish within %.1f s", rank_,
                      (unsigned long long)key, timeoutNs / 1e9);
  return ncclSuccess;
}

std::vector<Watchdog::RasAnswer> Watchdog::rasGather(uint64_t timeoutNs) {
  std::unique_lock<std::mutex> lock(mu_);
  Waiter waiter(this);
  rasAnswers_.assign(nRanks_, RasAnswer{});
  const uint64_t query = ++rasQuery_;
  auto pending = [&] {
    for (int p = 0; p < nRanks_; ++p) {
      RasAnswer& a = rasAnswers_[p];
      a.dead = dead_.has(p), a.left = left_[p];
      if (p != rank_ && !a.replied && !a.dead && !a.left) return true;
    }
    return false;
  };
  for (int p = 0; p < nRanks_; ++p)
    if (p != rank_ && !dead_.has(p)) sendFrame(p, kWireRasQuery, 0, query, nullptr, 0);
  const uint64_t one = 1;
  (void)!write(wakeFd_, &one, sizeof one);  // the thread polls the replies' sockets
  cv_.wait_for(lock, std::chrono::nanoseconds(timeoutNs), [&] { return closing_ || !pending(); });
  pending();  // refresh the dead and left marks
  std::vector<RasAnswer> out = std::move(rasAnswers_);
  rasAnswers_.clear();
  for (int p = 0; p < nRanks_; ++p) out[p].where = where_[p], out[p].why = deadWhy_[p];
  return out;
}

std::vector<Watchdog::RasAnswer> Watchdog::deadRanks() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<RasAnswer> out;
  for (int p = 0; p < nRanks_; ++p) {
    if (p == rank_ || !dead_.has(p)) continue;
    RasAnswer a;
    a.state.rank = p, a.dead = true, a.where = where_[p], a.why = deadWhy_[p];
    out.push_back(std::move(a));
  }
  return out;
}

bool Watchdog::anyDead(const std::vector<int>& ranks) {
  std::lock_guard<std::mutex> lock(mu_);
  for (int r : ranks)
    if (dead_.has(r)) return true;
  return false;
}

ncclResult_t Watchdog::failedRanks(uint64_t timeoutNs, RankSet* decided) {
  const uint64_t deadline = nowNs() + timeoutNs;
  std::unique_lock<std::mutex> lock(mu_);
  Waiter waiter(this);
  while (true) {
    const uint64_t key = kAgreeFailureKind + failureEpoch_;
    RankSet v;
    if (failureEpoch_ > 0 && agreement_.decided(key, &v)) {
      RankSet known = dead_;
      known.merge(v);
      if (known == v) {  // nothing this rank knows is missing from the decision
        *decided = v;
        return ncclSuccess;
      }
      for (int r = 0; r < nRanks_; ++r)
        if (v.has(r) && !dead_.has(r)) dead_.add(r);
    }
    if (failureEpoch_ == 0 || agreement_.decided(key, nullptr)) startFailureEpoch();
    const uint64_t now = nowNs();
    if (now >= deadline)
      return batonError(ncclRemoteError, "rank %d: the survivors did not agree on the failed ranks within %.1f s",
                        rank_, timeoutNs / 1e9);
    cv_.wait_for(lock, std::chrono::nanoseconds(std::min<uint64_t>(deadline - now, 100000000ull)));
    if (closing_) return batonError(ncclInvalidUsage, "rank %d: the communicator was aborted during agreement", rank_);
  }
}

}  // namespace baton

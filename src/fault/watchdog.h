// The watchdog (lesson 10): each rank of a communicator that spans processes keeps one TCP
// connection to every other rank and a thread that watches them. It is baton's failure detector
// and the channel its agreement runs over; NCCL's RAS keep-alive mesh is the same idea, used there
// only to diagnose.
//
// Detect: a peer whose process dies closes its sockets (the kernel sends FIN or RST, on any host):
// EOF or a reset means dead at once. A peer that is alive but silent (SIGSTOP, a cut link, a host
// gone without a word) is caught by heartbeats: every rank sends one every BATON_TIMEOUT / 5, and
// a peer not heard from for BATON_TIMEOUT is dead. A rank that leaves properly (ncclCommDestroy,
// ncclCommAbort) says goodbye first and is not reported.
//
// Propagate: on the first dead peer the watchdog puts the communicator in error
// (ncclRemoteError, naming the rank and why), which raises the abort flag so every in-flight
// operation of this rank returns, and starts an agreement on the failed set; the others receive
// it, learn the news and do the same: the failure revokes the communicator on every survivor.
//
// Agree: agreement.h, keyed by kind. Failure epochs (each later failure starts a new one) are
// joined automatically; allreduce votes only by the rank whose operation finished.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm.h"
#include "fault/agreement.h"
#include "fault/rank_state.h"
#include "nccl.h"

namespace baton {

constexpr uint64_t kAgreeFailureKind = 1ull << 56;  // + epoch: who failed
constexpr uint64_t kAgreeVoteKind = 2ull << 56;     // + operation number: commit or roll back

class Watchdog {
 public:
  // Collective over the communicator's bootstrap (init): listen, exchange addresses, connect to
  // every rank, start the thread. timeoutNs is BATON_TIMEOUT.
  // *out: the communicator's (comm->watchdog), which the core releases without this header.
  static ncclResult_t start(ncclComm* comm, uint64_t timeoutNs, SubsystemPtr<Watchdog>* out);
  ~Watchdog();  // says goodbye, stops the thread, closes the connections

  // Runs agreement `key` with this rank's proposal (its known dead ranks are added) and waits,
  // at most `timeoutNs`, for the decision (0: joins and returns at once, *decided untouched).
  ncclResult_t agree(uint64_t key, const RankSet& proposal, uint64_t timeoutNs, RankSet* decided);
  // The failed set the survivors agree on: the last decision if this rank knows of no failure
  // beyond it, else a new agreement epoch. Bit nRanks is never set.
  ncclResult_t failedRanks(uint64_t timeoutNs, RankSet* decided);
  uint64_t timeoutNs() const { return timeoutNs_; }
  // ncclCommAbort from another thread: a thread waiting in agree() or failedRanks() returns now.
  void close();
  // Another part of this rank found `peer` gone (its bootstrap listener refuses connections):
  // dead, as if its watchdog connection had closed, unless it said goodbye.
  void reportDead(int peer, const std::string& why);
  // Whether this rank already knows one of `ranks` to be dead.
  bool anyDead(const std::vector<int>& ranks);

  // NCCL's RAS service (src/ras/): every other rank's RasRankState, asked over this mesh and
  // answered by the peers' watchdog threads; waits at most `timeoutNs` for the answers. A rank
  // known dead, or gone (it said goodbye), is not asked. Queries from one thread at a time.
  struct RasAnswer {
    RasRankState state;
    bool replied = false, dead = false, left = false;
    std::string where, why;  // its watchdog address; why it is dead
  };
  std::vector<RasAnswer> rasGather(uint64_t timeoutNs);
  // Where `rank`'s watchdog listened (host:port), for messages; fixed after start.
  const std::string& addressOf(int rank) const { return where_[rank]; }
  // The ranks this rank knows dead (state.rank), with why and where (the RAS monitor's events).
  std::vector<RasAnswer> deadRanks();

 private:
  Watchdog(ncclComm* comm, uint64_t timeoutNs);
  struct Waiter;
  void run();
  // Under mu_.
  void send(int peer, uint32_t type, const AgreeMsg* msg);
  void sendFrame(int peer, uint32_t type, uint32_t round, uint64_t key, const void* words, size_t nWords);
  void suspect(int peer, const std::string& why);
  void onBytes(int peer);
  void startFailureEpoch();
  bool receive(int peer);  // false: the connection ended

  ncclComm* comm_;
  int rank_, nRanks_;
  uint64_t timeoutNs_, intervalNs_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int> fds_;              // -1: me, gone or dead
  std::vector<uint64_t> lastHeard_;   // monotonic ns
  std::vector<bool> left_;            // said goodbye
  std::vector<std::string> inbuf_;    // bytes of a message not complete yet
  std::vector<std::string> where_;    // each peer's watchdog address, for messages
  RankSet dead_;                      // this rank's own knowledge, grows only
  std::vector<std::string> deadWhy_;  // why each dead rank is dead
  uint64_t rasQuery_ = 0;             // the RAS query whose answers rasAnswers_ collects
  std::vector<RasAnswer> rasAnswers_;
  Agreement agreement_;
  uint64_t failureEpoch_ = 0;            // the newest failure agreement this rank is in
  uint64_t voteFloor_ = kAgreeVoteKind;  // votes below this are forgotten; their late messages dropped
  uint64_t lastSentNs_ = 0;
  bool leaving_ = false;  // the destructor said goodbye: report nothing more
  bool closing_ = false;  // the destructor runs: agree() and failedRanks() return
  int waiters_ = 0;       // threads inside agree() or failedRanks()
  std::atomic<bool> stop_{false};
  int wakeFd_ = -1;
  std::thread thread_;
};

}  // namespace baton

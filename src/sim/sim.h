// The discrete-event simulator: runs a step schedule (what every rank's channels send and receive,
// step by step, as the library would execute it) over the links of a topology graph and predicts
// its time. Lesson 06/07 use it to show what baton would do on machines you do not have.
//
// The model: each (rank, channel) is a stream that runs its steps in order. A step may receive on
// one connection and send on another. It starts when the stream's previous step has finished, the
// data it receives has arrived (the sender's matching step on that connection has been delivered),
// and, when it sends, the FIFO has credit (the receiver has finished the step `depth` earlier on
// that connection). A send of B wire bytes crosses the links of the connection's path: each link
// direction is a resource that carries one transfer at a time at its bandwidth, so channels whose
// paths share a link contend (sim.cc states the exact rules), and a transfer pays the latency of the
// slowest link class on its path once: NCCL's per-hop latency (NVLink, PCI or network). Plus a fixed
// per-step cost (the protocol's step overhead).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "topo/topo.h"

namespace baton {

struct SimConn {
  int srcRank = -1, dstRank = -1;
  int depth = 8;  // FIFO slots (NCCL_STEPS)
};

struct SimStep {
  int recvConn = -1;       // index into SimSchedule::conns, or -1
  int sendConn = -1;       // index into SimSchedule::conns, or -1
  uint64_t wireBytes = 0;  // bytes that cross the wire for the send (protocol overhead included)
};

struct SimStream {
  int rank = 0, channel = 0;
  std::vector<SimStep> steps;
};

struct SimSchedule {
  std::vector<SimConn> conns;
  std::vector<SimStream> streams;
};

struct SimParams {
  double stepOverheadUs = 0;       // fixed cost of every step (synchronisation), per protocol
  double linkLatencyUs[11] = {0};  // per link type (LinkType value); a path pays its slowest link's, once
  double streamBwGBs = 0;          // > 0: no transfer of a stream goes faster than this (a channel's own limit)
};

struct SimResult {
  double timeUs = 0;                   // when the last stream finished
  uint64_t events = 0;                 // steps simulated
  std::string error;                   // non-empty: the schedule deadlocked or referenced a bad connection
  std::vector<double> streamFinishUs;  // per SimSchedule::streams entry: when its last step finished
};

// Runs `sched` on `sys` (paths computed; ranks mapped by sys.rankNode).
SimResult simulate(const TopoSystem& sys, const SimSchedule& sched, const SimParams& params);

}  // namespace baton

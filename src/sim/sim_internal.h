// Internal to the simulator (src/sim/*.cc): the schedule and the topology resolved into flat arrays
// that the event loop indexes without lookups (sim_plan.cc builds and validates them; sim.cc runs
// them), and the names error messages use for streams and connections.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/sim.h"

namespace baton::sim_detail {

// One connection, resolved: who sends and receives on it, its path as link ids, and its FIFO.
struct ConnPlan {
  int sender = -1, receiver = -1;  // stream indices (a connection has one of each)
  int64_t nSends = 0, nRecvs = 0;
  int64_t depth = 8;
  // Deliveries and receive-finish times are kept in rings of min(depth, messages) slots: credit
  // keeps the sender at most `depth` messages ahead, so older entries are never read again.
  int64_t ring = 1;
  size_t ringOff = 0;              // into the engine's delivery / recvFinish arrays
  int linkOff = 0, linkCount = 0;  // into Plan::pathLinks; 0 links: a LOC path (same node)
  double latencyUs = 0;
  double pathBytesPerUs = 0;  // the narrowest link on the path (kLocBw for LOC), in bytes per µs
  // Progress, advanced by the event loop.
  int64_t sent = 0, recvd = 0;
};

struct Plan {
  std::vector<ConnPlan> conns;
  std::vector<int> pathLinks;          // link ids, connection by connection
  std::vector<double> linkBytesPerUs;  // per link id: TopoSystem nodes' links, flattened in order
  size_t ringSlots = 0;                // sum of ConnPlan::ring
};

// "stream 3 (rank 1, channel 1)" and "conn 2 (rank 0 -> rank 1)".
std::string streamName(const SimSchedule& sched, int s);
std::string connName(const SimSchedule& sched, int c);

// Checks the schedule against the topology and resolves it. Returns "" or the error message.
std::string buildPlan(const TopoSystem& sys, const SimSchedule& sched, const SimParams& params, Plan* out);

}  // namespace baton::sim_detail

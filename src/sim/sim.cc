// The discrete-event engine behind simulate() (sim.h); sim_plan.cc checks and resolves the schedule
// first. The exact model, times in µs, bandwidths in GB/s = 1e3 bytes per µs:
//
// Step start. Each stream runs its steps in order; step i starts at
//   start = max(finish of step i-1 (0 for the first step),
//               arrival: if it receives, the delivery time of message k on recvConn, this being the
//                        stream's k-th receive on that connection (k-th send <-> k-th receive),
//               credit:  if it sends message j on sendConn of depth D and j >= D, the finish time of
//                        the receiver's step that took message j-D (the FIFO slot is free again)).
// Send. A step that sends B = wireBytes on connection c (path = sys.rankPath(src, dst), links
//   l_1..l_k) moves through the links cut-through, each link direction carrying one transfer at a
//   time at its own bandwidth:
//   head_i    = max(head_{i-1}, freeAt[l_i])   (head_0 = start: the head enters l_i once l_i is free)
//   freeAt[l_i] = head_i + B / bw_i
//   delivery  = max(max_i freeAt[l_i], head_k + B / min(min_i bw_i, streamBwGBs when set))
//               + max_i linkLatencyUs[type of l_i]  (NCCL's per-hop latency of the path's class).
//   On idle links this is start + latency + B / (narrowest bandwidth); a busy link delays only the
//   part of the path from it on.
//   Ranks on the same node use a LOC path: no links and no contention, latency
//   linkLatencyUs[LOC] (0 by default), bandwidth kLocBw.
// Step finish. finish = max(start + stepOverheadUs, delivery if it sends). A sending step ends when
//   its data is delivered (like a GPU's store: the step is over when the data is written), and its
//   overhead overlaps the transfer. A receive-only (or empty) step ends at start + stepOverheadUs,
//   start already including the arrival. A recv+send step receives first, then sends at `start`.
// Link arbitration. Links are granted in the order transfers ask for them: by step start time, ties
//   broken by stream index (SimSchedule::streams order). A link's freeAt only grows: no backfilling
//   into idle gaps, no preemption.
// Result. timeUs = the latest stream finish; streamFinishUs[s] = stream s's last finish (0 without
//   steps); events = steps run. Errors: the checks of sim_plan.cc, and deadlock: no step can start
//   while streams have steps left; the message names up to 4 blocked streams, their step and what
//   they wait for (a message or credit on a named connection).
//
// Implementation: a stream is queued as (start, stream index) once every dependency of its next
// step is known, which fixes that start. Popping in time order grants links in request order, and
// after a step only three streams can become ready: itself, its send's receiver (arrival), its
// receive's sender (credit). O(log streams) per step; a stream whose next step would be popped
// next anyway runs it without touching the queue (same order, same times).
#include <algorithm>
#include <cstdint>
#include <functional>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "sim/sim_internal.h"

namespace baton {

namespace {

using sim_detail::ConnPlan;
using sim_detail::Plan;

struct Event {
  double t;
  int stream;
  // Min-heap order by (time, stream index): deterministic ties.
  bool operator>(const Event& o) const { return t != o.t ? t > o.t : stream > o.stream; }
};

struct StreamState {
  size_t next = 0;        // index of the step to run next
  double prevFinish = 0;  // finish of step next-1
  bool queued = false;
};

class Engine {
 public:
  Engine(const SimSchedule& sched, const SimParams& params, Plan plan)
      : sched_(sched),
        params_(params),
        plan_(std::move(plan)),
        state_(sched.streams.size()),
        freeAt_(plan_.linkBytesPerUs.size(), 0.0),
        delivery_(plan_.ringSlots, 0.0),
        recvFinish_(plan_.ringSlots, 0.0) {}

  void run(SimResult* res) {
    for (int s = 0; s < static_cast<int>(state_.size()); ++s) tryQueue(s, 0);
    while (!queue_.empty()) {
      Event ev = queue_.top();
      queue_.pop();
      state_[ev.stream].queued = false;
      for (;;) {
        const SimStep& step = sched_.streams[ev.stream].steps[state_[ev.stream].next];
        runStep(ev.stream, step, ev.t);
        ++res->events;
        if (step.sendConn >= 0) tryQueue(plan_.conns[step.sendConn].receiver, ev.t);
        if (step.recvConn >= 0) tryQueue(plan_.conns[step.recvConn].sender, ev.t);
        // Fast path: when this stream's next step would be the next pop anyway, run it now.
        Event next{0, ev.stream};
        if (!readyNext(ev.stream, ev.t, &next.t)) break;
        if (!queue_.empty() && next > queue_.top()) {
          state_[ev.stream].queued = true;
          queue_.push(next);
          break;
        }
        ev = next;
      }
    }
    res->streamFinishUs.resize(state_.size());
    for (size_t s = 0; s < state_.size(); ++s) {
      res->streamFinishUs[s] = state_[s].prevFinish;
      res->timeUs = std::max(res->timeUs, state_[s].prevFinish);
    }
    res->error = deadlockMessage();
  }

 private:
  double& deliverySlot(const ConnPlan& c, int64_t k) { return delivery_[c.ringOff + k % c.ring]; }
  double& recvFinishSlot(const ConnPlan& c, int64_t k) { return recvFinish_[c.ringOff + k % c.ring]; }

  // When stream s's next step can start, if all of its dependencies are known.
  bool readyTime(int s, double* out) {
    const StreamState& st = state_[s];
    const SimStep& step = sched_.streams[s].steps[st.next];
    double t = st.prevFinish;
    if (step.recvConn >= 0) {
      const ConnPlan& c = plan_.conns[step.recvConn];
      if (c.sent <= c.recvd) return false;  // message not sent yet
      t = std::max(t, deliverySlot(c, c.recvd));
    }
    if (step.sendConn >= 0) {
      const ConnPlan& c = plan_.conns[step.sendConn];
      if (c.sent >= c.depth) {
        int64_t freed = c.sent - c.depth;    // the message whose slot this send reuses
        if (c.recvd <= freed) return false;  // no credit yet
        t = std::max(t, recvFinishSlot(c, freed));
      }
    }
    *out = t;
    return true;
  }

  // Stream s has a next step, is not queued, and that step's dependencies are known: its start.
  bool readyNext(int s, double now, double* t) {
    const StreamState& st = state_[s];
    if (st.queued || st.next >= sched_.streams[s].steps.size() || !readyTime(s, t)) return false;
    // A newly satisfied dependency is never earlier than `now`; max() keeps the clock monotone.
    *t = std::max(*t, now);
    return true;
  }

  void tryQueue(int s, double now) {
    double t;
    if (!readyNext(s, now, &t)) return;
    state_[s].queued = true;
    queue_.push(Event{t, s});
  }

  void runStep(int s, const SimStep& step, double start) {
    double finish = start + params_.stepOverheadUs;
    if (step.sendConn >= 0) {
      ConnPlan& c = plan_.conns[step.sendConn];
      const int* links = plan_.pathLinks.data() + c.linkOff;
      const double bytes = static_cast<double>(step.wireBytes);
      // Cut-through, link by link: the transfer's head enters link i when it has left link i-1's
      // entry and link i is free; each link is then busy for its own share of time.
      double head = start, tail = start;
      for (int i = 0; i < c.linkCount; ++i) {
        head = std::max(head, freeAt_[links[i]]);
        freeAt_[links[i]] = head + bytes / plan_.linkBytesPerUs[links[i]];
        tail = std::max(tail, freeAt_[links[i]]);
      }
      const double delivered = std::max(tail, head + bytes / c.pathBytesPerUs) + c.latencyUs;
      deliverySlot(c, c.sent) = delivered;
      ++c.sent;
      finish = std::max(finish, delivered);
    }
    if (step.recvConn >= 0) {
      ConnPlan& c = plan_.conns[step.recvConn];
      recvFinishSlot(c, c.recvd) = finish;
      ++c.recvd;
    }
    state_[s].prevFinish = finish;
    ++state_[s].next;
  }

  // Why stream s's next step cannot start (it is blocked: readyTime returned false).
  std::string blockedReason(int s) {
    const SimStep& step = sched_.streams[s].steps[state_[s].next];
    std::string who = sim_detail::streamName(sched_, s) + " step " + std::to_string(state_[s].next);
    if (step.recvConn >= 0) {
      const ConnPlan& c = plan_.conns[step.recvConn];
      if (c.sent <= c.recvd)
        return who + " waits for message " + std::to_string(c.recvd) + " on " +
               sim_detail::connName(sched_, step.recvConn) + " from " + sim_detail::streamName(sched_, c.sender) +
               " (at step " + std::to_string(state_[c.sender].next) + ")";
    }
    const ConnPlan& c = plan_.conns[step.sendConn];
    return who + " waits for credit to send message " + std::to_string(c.sent) + " on " +
           sim_detail::connName(sched_, step.sendConn) + " (depth " + std::to_string(c.depth) +
           "): " + sim_detail::streamName(sched_, c.receiver) + " has taken " + std::to_string(c.recvd) +
           " messages (at step " + std::to_string(state_[c.receiver].next) + ")";
  }

  std::string deadlockMessage() {
    std::string msg;
    int shown = 0, blocked = 0;
    for (int s = 0; s < static_cast<int>(state_.size()); ++s) {
      if (state_[s].next >= sched_.streams[s].steps.size()) continue;
      ++blocked;
      if (shown < 4) msg += (shown++ ? "; " : "") + blockedReason(s);
    }
    if (!blocked) return "";
    return "deadlock: " + std::to_string(blocked) + " stream(s) cannot progress: " + msg +
           (blocked > shown ? "; ..." : "");
  }

  const SimSchedule& sched_;
  const SimParams& params_;
  Plan plan_;
  std::vector<StreamState> state_;
  std::vector<double> freeAt_;      // per link id
  std::vector<double> delivery_;    // ring slots per connection
  std::vector<double> recvFinish_;  // ring slots per connection
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> queue_;
};

}  // namespace

SimResult simulate(const TopoSystem& sys, const SimSchedule& sched, const SimParams& params) {
  SimResult res;
  Plan plan;
  res.error = sim_detail::buildPlan(sys, sched, params, &plan);
  if (!res.error.empty()) return res;
  Engine(sched, params, std::move(plan)).run(&res);
  return res;
}

}  // namespace baton

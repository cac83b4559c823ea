// The simulator's preparation pass: checks a step schedule against itself and the topology (every
// connection used by exactly one sending and one receiving stream of the right ranks, as many sends
// as receives, a valid path between the two ranks) and resolves it into the flat Plan the event
// loop runs. Errors name the stream (rank, channel), the step and the connection.
#include <algorithm>
#include <iterator>
#include <string>

#include "sim/sim_internal.h"

namespace baton::sim_detail {

std::string streamName(const SimSchedule& sched, int s) {
  const SimStream& st = sched.streams[s];
  return "stream " + std::to_string(s) + " (rank " + std::to_string(st.rank) + ", channel " +
         std::to_string(st.channel) + ")";
}

std::string connName(const SimSchedule& sched, int c) {
  const SimConn& cn = sched.conns[c];
  return "conn " + std::to_string(c) + " (rank " + std::to_string(cn.srcRank) + " -> rank " +
         std::to_string(cn.dstRank) + ")";
}

namespace {

// A channel's own speed limit (GB/s): a GPU channel is one block, which moves far less than an
// NVSwitch port; the links it crosses are still held only for bytes / link bandwidth.
double streamCap(const SimParams& p) { return p.streamBwGBs > 0 ? p.streamBwGBs : 1e300; }

// The step index of stream s's n-th use of connection c (as receiver or sender); -1 if none.
int64_t nthUse(const SimSchedule& sched, int s, int c, int64_t n, bool recv) {
  const std::vector<SimStep>& steps = sched.streams[s].steps;
  for (size_t i = 0; i < steps.size(); ++i) {
    if ((recv ? steps[i].recvConn : steps[i].sendConn) != c) continue;
    if (n-- == 0) return static_cast<int64_t>(i);
  }
  return -1;
}

// Registers stream s as the sender (recv=false) or receiver of connection c at step i.
std::string claim(const SimSchedule& sched, Plan* plan, int s, size_t i, int c, bool recv) {
  // Messages are built only on error: this runs for every step of schedules with millions.
  auto where = [&] { return streamName(sched, s) + " step " + std::to_string(i); };
  if (c < 0 || c >= static_cast<int>(sched.conns.size()))
    return where() + ": " + (recv ? "recvConn " : "sendConn ") + std::to_string(c) +
           " is not a connection (the schedule has " + std::to_string(sched.conns.size()) + ")";
  const SimConn& cn = sched.conns[c];
  int want = recv ? cn.dstRank : cn.srcRank;
  if (sched.streams[s].rank != want)
    return where() + (recv ? " receives on " : " sends on ") + connName(sched, c) + ", but " +
           (recv ? "its receiver" : "its sender") + " is rank " + std::to_string(want);
  ConnPlan& cp = plan->conns[c];
  int& owner = recv ? cp.receiver : cp.sender;
  if (owner >= 0 && owner != s)
    return where() + (recv ? " receives on " : " sends on ") + connName(sched, c) + ", which " +
           streamName(sched, owner) + " already " + (recv ? "receives on" : "sends on") +
           " (one stream per end of a connection)";
  owner = s;
  ++(recv ? cp.nRecvs : cp.nSends);
  return "";
}

// As many sends as receives on every used connection; otherwise name the first unmatched step.
std::string checkCounts(const SimSchedule& sched, const Plan& plan, int c) {
  const ConnPlan& cp = plan.conns[c];
  if (cp.nSends == cp.nRecvs) return "";
  bool extraRecv = cp.nRecvs > cp.nSends;
  int s = extraRecv ? cp.receiver : cp.sender;
  int other = extraRecv ? cp.sender : cp.receiver;
  int64_t k = extraRecv ? cp.nSends : cp.nRecvs;  // the first message without a partner
  std::string msg = streamName(sched, s) + " step " + std::to_string(nthUse(sched, s, c, k, extraRecv)) +
                    (extraRecv ? " receives message " : " sends message ") + std::to_string(k) + " on " +
                    connName(sched, c) + ", but ";
  if (other < 0) return msg + "no stream " + (extraRecv ? "sends" : "receives") + " on it";
  return msg + "its " + (extraRecv ? "sender " : "receiver ") + streamName(sched, other) +
         (extraRecv ? " sends only " : " receives only ") + std::to_string(k) + " on it";
}

// Resolves connection c's path between its ranks' nodes into link ids, latency and bandwidth.
std::string resolvePath(const TopoSystem& sys, const SimSchedule& sched, const SimParams& params,
                        const std::vector<int>& linkBase, int c, Plan* plan) {
  const SimConn& cn = sched.conns[c];
  ConnPlan& cp = plan->conns[c];
  const int nRanks = static_cast<int>(sys.rankNode.size());
  const int nNodes = static_cast<int>(sys.nodes.size());
  for (int r : {cn.srcRank, cn.dstRank}) {
    if (r < 0 || r >= nRanks)
      return connName(sched, c) + ": rank " + std::to_string(r) + " is not a rank of the topology (" +
             std::to_string(nRanks) + " ranks)";
    if (sys.rankNode[r] < 0 || sys.rankNode[r] >= nNodes)
      return connName(sched, c) + ": rank " + std::to_string(r) + " maps to no node";
  }
  if (cn.depth < 1) return connName(sched, c) + ": FIFO depth " + std::to_string(cn.depth) + " < 1";
  cp.depth = cn.depth;
  cp.linkOff = static_cast<int>(plan->pathLinks.size());
  const int a = sys.rankNode[cn.srcRank], b = sys.rankNode[cn.dstRank];
  if (a == b) {  // same node: a LOC copy, no links to contend for
    cp.latencyUs = params.linkLatencyUs[static_cast<int>(LinkType::LOC)];
    cp.pathBytesPerUs = std::min(kLocBw, streamCap(params)) * 1e3;
    return "";
  }
  const std::string what =
      connName(sched, c) + ": path from node " + std::to_string(a) + " to node " + std::to_string(b);
  if (a >= static_cast<int>(sys.paths.size()) || b >= static_cast<int>(sys.paths[a].size()) ||
      sys.paths[a][b].hops.empty())
    return what + " has no hops (paths not computed, or the ranks are disconnected)";
  double minBw = 0;
  int at = a;
  const std::vector<TopoPath::Hop>& hops = sys.paths[a][b].hops;
  for (size_t h = 0; h < hops.size(); ++h) {
    const TopoPath::Hop& hop = hops[h];
    std::string hopName = what + ", hop " + std::to_string(h);
    if (hop.node != at)
      return hopName + " leaves node " + std::to_string(hop.node) + " but the path is at node " + std::to_string(at);
    if (hop.link < 0 || hop.link >= static_cast<int>(sys.nodes[at].links.size()))
      return hopName + ": node " + std::to_string(at) + " has no link " + std::to_string(hop.link);
    const TopoLink& l = sys.nodes[at].links[hop.link];
    int type = static_cast<int>(l.type);
    if (type < 0 || type >= static_cast<int>(std::size(params.linkLatencyUs)))
      return hopName + ": link type " + std::to_string(type) + " out of range";
    if (!(l.bw > 0)) return hopName + ": link bandwidth " + std::to_string(l.bw) + " GB/s";
    if (l.remote < 0 || l.remote >= nNodes) return hopName + ": link leads to no node";
    plan->pathLinks.push_back(linkBase[at] + hop.link);
    cp.latencyUs = std::max(cp.latencyUs, params.linkLatencyUs[type]);
    minBw = h == 0 ? l.bw : std::min(minBw, l.bw);
    at = l.remote;
  }
  if (at != b) return what + " ends at node " + std::to_string(at);
  cp.linkCount = static_cast<int>(hops.size());
  cp.pathBytesPerUs = std::min(minBw, streamCap(params)) * 1e3;  // GB/s -> bytes per µs
  return "";
}

}  // namespace

std::string buildPlan(const TopoSystem& sys, const SimSchedule& sched, const SimParams& params, Plan* plan) {
  plan->conns.assign(sched.conns.size(), ConnPlan{});
  for (int s = 0; s < static_cast<int>(sched.streams.size()); ++s) {
    const std::vector<SimStep>& steps = sched.streams[s].steps;
    for (size_t i = 0; i < steps.size(); ++i) {
      if (steps[i].recvConn != -1) {
        std::string e = claim(sched, plan, s, i, steps[i].recvConn, true);
        if (!e.empty()) return e;
      }
      if (steps[i].sendConn != -1) {
        std::string e = claim(sched, plan, s, i, steps[i].sendConn, false);
        if (!e.empty()) return e;
      }
    }
  }
  std::vector<int> linkBase(sys.nodes.size() + 1, 0);
  for (size_t n = 0; n < sys.nodes.size(); ++n)
    linkBase[n + 1] = linkBase[n] + static_cast<int>(sys.nodes[n].links.size());
  plan->linkBytesPerUs.assign(linkBase.back(), 0);
  for (size_t n = 0; n < sys.nodes.size(); ++n)
    for (size_t l = 0; l < sys.nodes[n].links.size(); ++l)
      plan->linkBytesPerUs[linkBase[n] + l] = sys.nodes[n].links[l].bw * 1e3;
  plan->ringSlots = 0;
  for (int c = 0; c < static_cast<int>(sched.conns.size()); ++c) {
    ConnPlan& cp = plan->conns[c];
    if (cp.sender < 0 && cp.receiver < 0) continue;  // unused: its path does not matter
    std::string e = checkCounts(sched, *plan, c);
    if (e.empty()) e = resolvePath(sys, sched, params, linkBase, c, plan);
    if (!e.empty()) return e;
    cp.ring = std::max<int64_t>(1, std::min(cp.depth, cp.nSends));
    cp.ringOff = plan->ringSlots;
    plan->ringSlots += static_cast<size_t>(cp.ring);
  }
  return "";
}

}  // namespace baton::sim_detail

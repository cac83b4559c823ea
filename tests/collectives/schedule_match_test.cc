// The simulator runs the plan the library executes: for ring and tree AllReduce, every protocol,
// 2, 3 and 5 ranks (trees also with every rank its own node: binary trees), the environment's
// channels and 3 channels (trees 0 and 1 of the double binary tree), and sizes from one float to
// 3 MiB (51203 floats: 3 channels cut unevenly), one real ncclAllReduce moves every channel
// connector's `step` counter (sender and receiver side) by exactly the number of steps that
// baton::buildSchedule, given a CommGraph rebuilt from the communicators' rings and trees and
// their Tunables, sends and receives on that connection; connectors the schedule does not use do
// not move, and exactly the planner's channels move. The schedule also simulates without error on
// a hand-built topology (one CPU node per rank, a PCI link per ordered pair).
#include "collectives/harness.h"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "comm.h"
#include "sim/schedule.h"
#include "sim/sim.h"
#include "topo/graph.h"
#include "topo/topo.h"
#include "tuner/tuner.h"

namespace bt {
namespace {

using baton::Channel;
enum Kind { kRing = 0, kUp = 1, kDown = 2 };
using Key = std::tuple<int, int, int, int>;  // kind, channel, src rank, dst rank
struct Count {
  int64_t sent = 0, recvd = 0;
};
using Counts = std::map<Key, Count>;

// Every connector of every rank and channel with its connection key, and its step counter.
template <typename Fn>
void forEachConnector(const Comms& comms, Fn fn) {
  for (int r = 0; r < (int)comms.size(); ++r)
    for (int c = 0; c < comms[r]->nChannels; ++c) {
      Channel& ch = *comms[r]->channels[c];
      const int n = (int)ch.ringUserRanks.size();
      const int next = ch.ringUserRanks[(ch.ringIndex + 1) % n], prev = ch.ringUserRanks[(ch.ringIndex + n - 1) % n];
      fn(Key{kRing, c, r, next}, true, ch.ringSend.step);
      fn(Key{kRing, c, prev, r}, false, ch.ringRecv.step);
      const baton::TreeConns& t = ch.tree;
      if (t.up >= 0) {
        fn(Key{kUp, c, r, t.up}, true, t.upSend.step);
        fn(Key{kDown, c, t.up, r}, false, t.downRecv.step);
      }
      for (int d = 0; d < t.nDown; ++d) {
        fn(Key{kUp, c, t.down[d], r}, false, t.upRecv[d].step);
        fn(Key{kDown, c, r, t.down[d]}, true, t.downSend[d].step);
      }
    }
}

std::map<std::pair<Key, bool>, uint64_t> snapshot(const Comms& comms) {
  std::map<std::pair<Key, bool>, uint64_t> s;
  forEachConnector(comms, [&](const Key& k, bool sender, uint64_t step) { s[{k, sender}] = step; });
  return s;
}

// The graph the communicators run: rank 0's rings (every rank must agree), the ranks' tree links.
baton::CommGraph graphOf(const Comms& comms) {
  baton::CommGraph g;
  const int n = (int)comms.size();
  for (int c = 0; c < comms[0]->nChannels; ++c) {
    baton::ChannelGraph& cg = g.channels.emplace_back();
    cg.ring = comms[0]->channels[c]->ringUserRanks;
    cg.treeIndex = comms[0]->channels[c]->treeIndex;
    cg.tree.resize(n);
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(comms[r]->channels[c]->ringUserRanks, cg.ring) << "rank " << r << " channel " << c;
      const baton::TreeConns& t = comms[r]->channels[c]->tree;
      cg.tree[r].up = t.up;
      for (int d = 0; d < t.nDown; ++d) cg.tree[r].down[d] = t.down[d];
    }
  }
  return g;
}

// One CPU node per rank; a PCI link (10 GB/s) for every ordered pair, which is also its path.
baton::TopoSystem handSystem(int n) {
  baton::TopoSystem sys;
  sys.nodes.resize(n);
  sys.paths.assign(n, std::vector<baton::TopoPath>(n));
  for (int a = 0; a < n; ++a) {
    sys.rankNode.push_back(a);
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      sys.nodes[a].links.push_back({baton::LinkType::PCI, 10.0, b});
      sys.paths[a][b] = {baton::PathType::PHB, 10.0, {{a, (int)sys.nodes[a].links.size() - 1}}};
    }
  }
  return sys;
}

// Steps the schedule sends and receives per connection; connection kinds from the graph.
Counts scheduleCounts(const baton::SimSchedule& s, const baton::CommGraph& g, int algo) {
  std::vector<int> channelOf(s.conns.size(), -1);
  Counts out;
  for (const baton::SimStream& st : s.streams)
    for (const baton::SimStep& step : st.steps)
      for (int conn : {step.sendConn, step.recvConn})
        if (conn >= 0) {
          EXPECT_TRUE(channelOf[conn] < 0 || channelOf[conn] == st.channel) << "conn " << conn << " in two channels";
          channelOf[conn] = st.channel;
        }
  for (const baton::SimStream& st : s.streams)
    for (const baton::SimStep& step : st.steps)
      for (int conn : {step.sendConn, step.recvConn}) {
        if (conn < 0) continue;
        const baton::SimConn& sc = s.conns[conn];
        const int c = channelOf[conn];
        int kind = kRing;
        if (algo == baton::kAlgoTree) kind = g.channels[c].tree[sc.srcRank].up == sc.dstRank ? kUp : kDown;
        Count& cnt = out[Key{kind, c, sc.srcRank, sc.dstRank}];
        (conn == step.sendConn ? cnt.sent : cnt.recvd)++;
      }
  return out;
}

std::string keyName(const Key& k) {
  static const char* kinds[] = {"ring", "tree up", "tree down"};
  return std::string(kinds[std::get<0>(k)]) + " channel " + std::to_string(std::get<1>(k)) + " " +
         std::to_string(std::get<2>(k)) + "->" + std::to_string(std::get<3>(k));
}

void checkOne(const Comms& comms, int algo, int proto, size_t count) {
  const int n = (int)comms.size();
  SCOPED_TRACE(std::to_string(count * sizeof(float)) + " bytes");
  std::vector<std::vector<float>> send(n, std::vector<float>(count)), recv(n, std::vector<float>(count, -1.f));
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i) send[r][i] = float((r + i) % 4);
  const auto before = snapshot(comms);
  const std::string err = runRanks(n, Drive::Threads, [&](int r) {
    return ncclAllReduce(send[r].data(), recv[r].data(), count, ncclFloat, ncclSum, comms[r], nullptr);
  });
  ASSERT_EQ(err, "");
  float expect = 0;
  for (int r = 0; r < n; ++r) expect += float((r + count - 1) % 4);
  EXPECT_EQ(recv[n - 1][count - 1], expect) << "the allreduce itself went wrong";
  const auto after = snapshot(comms);
  Counts real;
  for (const auto& [k, step] : after) {
    Count& c = real[k.first];
    (k.second ? c.sent : c.recvd) = int64_t(step - before.at(k));
  }

  const baton::CommGraph graph = graphOf(comms);
  const baton::Tunables& tun = comms[0]->tun;
  baton::ScheduleSpec spec;
  spec.func = baton::kFuncAllReduce, spec.algo = baton::CollAlgo(algo), spec.proto = baton::Proto(proto);
  spec.bytes = count * sizeof(float), spec.nChannels = comms[0]->nChannels;
  spec.minChannelBytes = tun.minChannelBytes, spec.chunkSteps = tun.chunkSteps, spec.splitTree = false;
  spec.fifoDepth = tun.fifoDepth;
  spec.layout.stepBytes[baton::kProtoSimple] = tun.stepBytes;
  spec.layout.stepBytes[baton::kProtoLL] = tun.llStepBytes;
  spec.layout.stepBytes[baton::kProtoLL128] = tun.ll128StepBytes;
  baton::SimSchedule sched;
  NCCL_ASSERT(baton::buildSchedule(graph, n, spec, &sched));
  Counts planned = scheduleCounts(sched, graph, algo);

  uint64_t steps = 0, moved = 0;
  std::set<int> usedChannels;
  for (const baton::SimStream& st : sched.streams) steps += st.steps.size();
  for (const auto& [k, c] : planned) EXPECT_TRUE(real.count(k)) << keyName(k) << ": no such connector";
  for (const auto& [k, c] : real) {
    const Count p = planned.count(k) ? planned.at(k) : Count{};
    EXPECT_EQ(c.sent, p.sent) << keyName(k) << ": steps sent (real vs schedule)";
    EXPECT_EQ(c.recvd, p.recvd) << keyName(k) << ": steps received (real vs schedule)";
    moved += c.sent;
    if (c.sent) usedChannels.insert(std::get<1>(k));
  }
  EXPECT_GT(moved, 0u) << "the allreduce moved no step at all";
  EXPECT_EQ((int)usedChannels.size(), baton::channelsForBytes(spec.nChannels, spec.minChannelBytes, spec.bytes));

  baton::SimParams params;
  params.stepOverheadUs = 0.5;
  params.linkLatencyUs[(int)baton::LinkType::PCI] = 1.0;
  const baton::SimResult res = baton::simulate(handSystem(n), sched, params);
  EXPECT_EQ(res.error, "");
  EXPECT_EQ(res.events, steps);
  EXPECT_GT(res.timeUs, 0.0);
}

struct Case {
  int algo;
  int proto;
  int ranks;
  int perNode;   // BATON_RANKS_PER_NODE, 0: unset
  int channels;  // NCCL_MIN_NCHANNELS, 0: the environment's (one channel on a small machine)
};

std::string caseName(const ::testing::TestParamInfo<Case>& i) {
  static const char* protos[] = {"LL", "LL128", "Simple"};
  return std::string(i.param.algo == baton::kAlgoTree ? "Tree" : "Ring") + "_" + protos[i.param.proto] + "_" +
         std::to_string(i.param.ranks) + "ranks" + (i.param.perNode ? "_nodePerRank" : "") +
         (i.param.channels ? "_" + std::to_string(i.param.channels) + "ch" : "");
}

class ScheduleMatch : public ::testing::TestWithParam<Case> {};

TEST_P(ScheduleMatch, StepCountsPerConnection) {
  const Case& p = GetParam();
  static const char* protos[] = {"LL", "LL128", "Simple"};
  const std::string channels = std::to_string(p.channels);
  Comms comms;
  {
    ScopedEnv::Vars vars = {{"NCCL_ALGO", p.algo == baton::kAlgoTree ? "allreduce:Tree" : "allreduce:Ring"},
                            {"NCCL_PROTO", protos[p.proto]},
                            {"BATON_RANKS_PER_NODE", p.perNode ? "1" : nullptr}};
    if (p.channels) vars.push_back({"NCCL_MIN_NCHANNELS", channels.c_str()});
    ScopedEnv env(vars);
    comms = initAll(p.ranks);
  }
  ASSERT_EQ((int)comms.size(), p.ranks);
  if (p.channels) {
    ASSERT_GE(comms[0]->nChannels, p.channels);
  }
  // Trees connect on their first operation: warm up so every connector exists before the snapshot.
  std::vector<std::vector<float>> warm(p.ranks, std::vector<float>(1024, 1.f));
  ASSERT_EQ(runRanks(p.ranks, Drive::Threads,
                     [&](int r) {
                       return ncclAllReduce(warm[r].data(), warm[r].data(), 1024, ncclFloat, ncclSum, comms[r],
                                            nullptr);
                     }),
            "");
  for (size_t count : {size_t(1), size_t(100 << 10) / 4, size_t(51203), size_t(3 << 20) / 4})
    checkOne(comms, p.algo, p.proto, count);
  destroyComms(comms);
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (int algo : {baton::kAlgoRing, baton::kAlgoTree})
    for (int proto : {baton::kProtoLL, baton::kProtoLL128, baton::kProtoSimple})
      for (int n : {2, 3, 5})
        for (int perNode : {0, 1})
          for (int channels : {0, 3})
            if (perNode == 0 || algo == baton::kAlgoTree) out.push_back({algo, proto, n, perNode, channels});
  return out;
}

INSTANTIATE_TEST_SUITE_P(, ScheduleMatch, ::testing::ValuesIn(cases()), caseName);

}  // namespace
}  // namespace bt

// Fuzz target: the simulator's inputs (src/sim/, baton-topo --simulate): a topology file, the
// collective to plan on it, and step schedules, including ones no planner would write.
//
// Input: a mode byte and choices, then the topology's XML text.
//   mode 0: collective, algorithm, protocol, size, channels, chunk steps, FIFO depth, split trees,
//           host count -> the planner's schedule -> simulate. The planner's schedules never
//           deadlock, so the simulation must end without an error where the ranks are connected.
//   mode 1: a schedule built from the input bytes (connections between any ranks, streams with
//           steps naming any connection index) -> simulate: a time, or an error naming the bad
//           connection or the deadlock. Never a crash or a hang.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "sim/schedule.h"
#include "sim/sim.h"
#include "topo/graph.h"
#include "topo/topo.h"
#include "topo/xml.h"
#include "tuner/tuner.h"

using namespace baton;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  baton_fuzz::Input in(data, size);
  const int mode = in.u8() & 1;
  uint8_t choice[16];
  for (uint8_t& c : choice) c = in.u8();
  const std::string text(in.all());
  std::unique_ptr<XmlNode> xml;
  TopoSystem sys;
  if (xmlParse(text, "<fuzz>", &xml) != ncclSuccess || topoFromXml(*xml, 1 + choice[0] % 2, &sys) != ncclSuccess)
    return 0;
  if (sys.nodes.size() > 256) return 0;
  if (sys.rankNode.empty())
    for (int h = 0; h < sys.nHosts; ++h)
      for (int i = 0, placed = 0; i < (int)sys.nodes.size() && placed < 2; ++i)
        if (sys.nodes[i].type == NodeType::CPU && sys.nodes[i].host == h) sys.rankNode.push_back(i), ++placed;
  const int nRanks = (int)sys.rankNode.size();
  if (nRanks == 0 || nRanks > 64) return 0;
  topoComputePaths(&sys);
  SimParams params;
  for (int t = 0; t < 11; ++t) params.linkLatencyUs[t] = choice[1] % 4;
  params.stepOverheadUs = choice[2] % 3;
  params.streamBwGBs = choice[3] % 50;

  if (mode == 0) {
    CommGraph graph;
    if (searchGraph(sys, 1, 1 + choice[4] % 4, &graph) != ncclSuccess) return 0;
    ScheduleSpec spec;
    spec.func = CollFunc(choice[5] % kFuncCount);
    spec.algo = (choice[6] & 1) && spec.func == kFuncAllReduce ? kAlgoTree : kAlgoRing;
    spec.proto = Proto(choice[7] % kNumProtos);
    spec.bytes = (size_t)choice[8] << (choice[9] % 15);  // up to 4 MiB
    spec.root = choice[10] % nRanks;
    spec.nChannels = (int)graph.channels.size();
    spec.minChannelBytes = (size_t)1 << (10 + choice[11] % 10);
    spec.layout.stepBytes[kProtoSimple] = 512 << 10;
    spec.layout.stepBytes[kProtoLL] = 64 << 10;
    spec.layout.stepBytes[kProtoLL128] = 614400;
    spec.chunkSteps = 1 + choice[12] % 4;
    spec.fifoDepth = planFifoDepth(spec.func, 1 + choice[13] % kSteps, spec.chunkSteps);
    spec.splitTree = choice[14] & 1;
    SimSchedule sched;
    if (buildSchedule(graph, nRanks, spec, &sched) != ncclSuccess) return 0;
    const SimResult r = simulate(sys, sched, params);
    // The library's own schedules run to the end wherever every rank reaches every other (a file
    // without NET devices replicated as several hosts leaves them unjoined: an error, by design).
    bool connected = true;
    for (int a = 0; a < nRanks; ++a)
      for (int b = 0; b < nRanks; ++b) connected &= a == b || !sys.rankPath(a, b).hops.empty();
    if (!r.error.empty() && connected) {
      fprintf(stderr, "sim_input: %s\n", r.error.c_str());
      abort();
    }
    if (!(r.timeUs >= 0)) abort();
    return 0;
  }

  SimSchedule sched;
  const int nConns = choice[4] % 8, nStreams = choice[5] % 6;
  for (int c = 0; c < nConns; ++c) {
    SimConn conn;
    conn.srcRank = choice[6 + c % 8] % (nRanks + 1) - (c & 1);  // sometimes -1: out of range
    conn.dstRank = choice[7 + c % 8] % nRanks;
    conn.depth = choice[8 + c % 8] % 10;
    sched.conns.push_back(conn);
  }
  baton_fuzz::Input steps(reinterpret_cast<const uint8_t*>(text.data()), text.size());
  for (int s = 0; s < nStreams; ++s) {
    SimStream st;
    st.rank = choice[s] % nRanks;
    st.channel = s;
    for (int k = 0, m = steps.range(0, 12); k < m; ++k)
      st.steps.push_back(SimStep{steps.range(-1, nConns), steps.range(-1, nConns), (uint64_t)steps.u8() << 10});
    sched.streams.push_back(std::move(st));
  }
  const SimResult r = simulate(sys, sched, params);
  if (r.error.empty() && r.streamFinishUs.size() != sched.streams.size()) abort();
  return 0;
}

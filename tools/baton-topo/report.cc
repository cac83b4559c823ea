// The text reports of baton-topo: nodes and links, paths between ranks, rings and trees, tuner.
#include <cstdio>
#include <string>

#include "baton_topo.h"
#include "tuner/tuner.h"

namespace batontopo {

using namespace baton;

namespace {
std::string nodeLabel(const TopoSystem& s, int i) {
  const TopoNode& n = s.nodes[i];
  std::string l = nodeTypeName(n.type);
  char b[96];
  switch (n.type) {
    case NodeType::GPU: std::snprintf(b, sizeof b, "/%d", n.dev); break;
    case NodeType::CPU: std::snprintf(b, sizeof b, "/%d", n.numaId); break;
    case NodeType::NET: std::snprintf(b, sizeof b, "/%s", n.name.c_str()); break;
    case NodeType::PCI: std::snprintf(b, sizeof b, "/%s", n.busId.c_str()); break;
    default: std::snprintf(b, sizeof b, "/%d", i); break;
  }
  l += b;
  if (s.nHosts > 1) l = "h" + std::to_string(n.host) + ":" + l;
  return l;
}
}  // namespace

void printTopology(const Machine& m) {
  const TopoSystem& s = m.sys;
  int count[6] = {};
  for (const TopoNode& n : s.nodes) count[(int)n.type]++;
  std::printf("# topology: %s, %d host%s: %d GPU, %d PCI, %d NVS, %d CPU, %d NIC, %d NET\n", m.source.c_str(), s.nHosts,
              s.nHosts > 1 ? "s" : "", count[0], count[1], count[2], count[3], count[4], count[5]);
  if (!m.notes.empty()) {
    size_t a = 0;
    while (a < m.notes.size()) {
      const size_t b = m.notes.find('\n', a);
      std::printf("#   %s\n", m.notes.substr(a, b - a).c_str());
      a = b == std::string::npos ? m.notes.size() : b + 1;
    }
  }
  for (int i = 0; i < (int)s.nodes.size(); ++i) {
    const TopoNode& n = s.nodes[i];
    if (n.host != 0) continue;  // the other hosts are copies
    std::printf("%-22s", nodeLabel(s, i).c_str());
    if (n.type == NodeType::GPU) std::printf(" sm%d rank %d", n.sm, n.rank);
    if (n.type == NodeType::CPU) std::printf(" %s %s", n.arch.c_str(), n.vendor.c_str());
    for (const TopoLink& l : n.links)
      std::printf("  %s %.1f->%s", linkTypeName(l.type), l.bw, nodeLabel(s, l.remote).c_str());
    std::printf("\n");
  }
  if (m.cpuRanks)
    std::printf("# no GPU: %d CPU rank%s per host, placed on the CPU (NUMA) nodes in turn\n", m.nRanks / s.nHosts,
                m.nRanks / s.nHosts > 1 ? "s" : "");
}

void printPaths(const Machine& m) {
  const int n = m.nRanks;
  if (n > 32) {
    std::printf("# paths: %d ranks, matrix omitted (rank 0's row only)\n", n);
  } else {
    std::printf("# paths between ranks: type/bandwidth (GB/s)\n%6s", "");
    for (int b = 0; b < n; ++b) std::printf(" %11d", b);
    std::printf("\n");
  }
  for (int a = 0; a < (n > 32 ? 1 : n); ++a) {
    std::printf("%6d", a);
    for (int b = 0; b < n; ++b) {
      const TopoPath& p = m.sys.rankPath(a, b);
      char cell[32];
      std::snprintf(cell, sizeof cell, "%s/%.1f", pathTypeName(p.type), p.bw);
      std::printf(" %11s", cell);
    }
    std::printf("\n");
  }
}

void printGraph(const Machine& m) {
  std::printf("# rings and trees: %zu channel%s (%s)\n", m.graph.channels.size(),
              m.graph.channels.size() > 1 ? "s" : "", m.graph.pattern.c_str());
  for (size_t c = 0; c < m.graph.channels.size(); ++c) {
    const ChannelGraph& g = m.graph.channels[c];
    std::printf("channel %2zu ring:", c);
    for (int r : g.ring) std::printf(" %d", r);
    std::printf("   (%.1f GB/s, worst hop %s)\n", g.bw, pathTypeName(g.worstPath));
    std::printf("channel %2zu tree %d:", c, g.treeIndex);
    for (int r = 0; r < (int)g.tree.size(); ++r) {
      const TreeLinks& t = g.tree[r];
      if (t.nDown() == 0) continue;
      std::printf(" %d->", r);
      const char* sep = "";
      for (int d : t.down)
        if (d >= 0) std::printf("%s%d", sep, d), sep = ",";
    }
    for (int r = 0; r < (int)g.tree.size(); ++r)
      if (g.tree[r].up < 0) std::printf("   (root %d)", r);
    std::printf("\n");
  }
}

void printTuner(const Machine& m) {
  const TuningModel model = initialTuningModel();
  const int n = m.nRanks, nodes = m.sys.nHosts;
  std::printf("# tuner: AllReduce over %d ranks on %d node%s, baton's '%s' table (%s): predicted us\n", n, nodes,
              nodes > 1 ? "s" : "", tuningPathName(kPathShm), model.source);
  std::printf("# (a CPU model measured on this kind of machine; --simulate predicts a GPU topology instead)\n");
  const size_t sizes[] = {8, 1024, 64 << 10, 1 << 20, 16 << 20, 256 << 20};
  std::printf("%14s", "size");
  for (const CollAlgo a : kTunedAlgos)
    for (int p = 0; p < kNumProtos; ++p) std::printf(" %12s", (std::string(algoName(a)) + "/" + protoName(p)).c_str());
  std::printf("  choice\n");
  for (size_t bytes : sizes) {
    std::printf("%14zu", bytes);
    for (const CollAlgo a : kTunedAlgos)
      for (int p = 0; p < kNumProtos; ++p) {
        const double us = predictUs(model, kPathShm, kFuncAllReduce, a, Proto(p), n, nodes, bytes);
        if (us < 0) std::printf(" %12s", "-");
        else std::printf(" %12.2f", us);
      }
    AlgoProtoMask all;
    parseAlgoProtoEnv(nullptr, nullptr, &all);
    AlgoProtoChoice c;
    if (chooseAlgoProto(model, kPathShm, all, kFuncAllReduce, n, nodes, bytes, &c) == ncclSuccess)
      std::printf("  %s/%s", algoName(c.algo), protoName(c.proto));
    std::printf("\n");
  }
}

}  // namespace batontopo

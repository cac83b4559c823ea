// --dot: a Graphviz picture of the topology (nodes by type, links labelled with type and GB/s)
// with the first channels' rings drawn over the ranks. Render: dot -Tpng FILE -o FILE.png
#include <cstdio>
#include <string>

#include "baton_topo.h"

namespace batontopo {

using namespace baton;

int writeDot(const Machine& m, const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    std::perror(("baton-topo: " + path).c_str());
    return 1;
  }
  const TopoSystem& s = m.sys;
  static const char* shape[6] = {"box", "ellipse", "hexagon", "box3d", "cds", "diamond"};
  static const char* color[6] = {"palegreen", "lightgrey", "gold", "lightblue", "orange", "salmon"};
  std::fprintf(f, "// baton-topo --dot: %s\ngraph topology {\n  rankdir=TB; node [style=filled fontsize=10];\n",
               m.source.c_str());
  for (int h = 0; h < s.nHosts; ++h) {
    std::fprintf(f, "  subgraph cluster_host%d { label=\"host %d\";\n", h, h);
    for (int i = 0; i < (int)s.nodes.size(); ++i) {
      const TopoNode& n = s.nodes[i];
      if (n.host != h) continue;
      std::string label = nodeTypeName(n.type);
      if (n.type == NodeType::GPU) label += " " + std::to_string(n.dev) + "\\nrank " + std::to_string(n.rank);
      else if (n.type == NodeType::CPU) label += " " + std::to_string(n.numaId);
      else if (n.type == NodeType::NET) label += "\\n" + n.name;
      else if (n.type == NodeType::PCI) label += "\\n" + n.busId;
      std::fprintf(f, "    n%d [label=\"%s\" shape=%s fillcolor=%s];\n", i, label.c_str(), shape[(int)n.type],
                   color[(int)n.type]);
    }
    std::fprintf(f, "  }\n");
  }
  for (int i = 0; i < (int)s.nodes.size(); ++i)
    for (const TopoLink& l : s.nodes[i].links)
      if (l.remote > i)  // one edge per pair
        std::fprintf(f, "  n%d -- n%d [label=\"%s %.0f\" fontsize=8 color=grey50];\n", i, l.remote,
                     linkTypeName(l.type), l.bw);
  if (m.cpuRanks) {  // CPU ranks are not topology nodes: draw them next to their CPU
    for (int r = 0; r < m.nRanks; ++r)
      std::fprintf(f, "  r%d [label=\"rank %d\" shape=circle fillcolor=white];\n  r%d -- n%d [style=dotted];\n", r, r,
                   r, s.rankNode[r]);
  }
  static const char* ringColor[4] = {"red", "blue", "darkgreen", "purple"};
  for (size_t c = 0; c < m.graph.channels.size() && c < 4; ++c) {
    const std::vector<int>& ring = m.graph.channels[c].ring;
    for (size_t i = 0; i < ring.size() && ring.size() > 1; ++i) {
      const int a = ring[i], b = ring[(i + 1) % ring.size()];
      std::string na = m.cpuRanks ? "r" + std::to_string(a) : "n" + std::to_string(s.rankNode[a]);
      std::string nb = m.cpuRanks ? "r" + std::to_string(b) : "n" + std::to_string(s.rankNode[b]);
      std::fprintf(f, "  %s -- %s [color=%s penwidth=2 constraint=false dir=forward label=\"ch%zu\" fontcolor=%s];\n",
                   na.c_str(), nb.c_str(), ringColor[c], c, ringColor[c]);
    }
  }
  std::fprintf(f, "}\n");
  std::fclose(f);
  std::printf("# wrote %s (render: dot -Tpng %s -o %s.png)\n", path.c_str(), path.c_str(), path.c_str());
  return 0;
}

// --dot-trees: the two trees of the double binary tree (the first channel using each), over ranks,
// grouped by host: every rank is interior in at most one of them (lesson 07).
int writeTreesDot(const Machine& m, const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    std::perror(("baton-topo: " + path).c_str());
    return 1;
  }
  std::fprintf(f, "// baton-topo --dot-trees: %s, %d hosts\ndigraph trees {\n  node [shape=circle fontsize=10];\n",
               m.source.c_str(), m.sys.nHosts);
  for (int h = 0; h < m.sys.nHosts; ++h) {
    std::fprintf(f, "  subgraph cluster_host%d { label=\"host %d\"; style=rounded;", h, h);
    for (int r = 0; r < m.nRanks; ++r)
      if (m.sys.hostOfRank(r) == h) std::fprintf(f, " r%d [label=\"%d\"];", r, r);
    std::fprintf(f, " }\n");
  }
  static const char* color[2] = {"red", "blue"};
  for (int t = 0; t < 2; ++t) {
    const ChannelGraph* g = nullptr;
    for (const ChannelGraph& c : m.graph.channels)
      if (c.treeIndex == t && !g) g = &c;
    if (!g) continue;
    for (int r = 0; r < (int)g->tree.size(); ++r)
      for (int d : g->tree[r].down)
        if (d >= 0) std::fprintf(f, "  r%d -> r%d [color=%s penwidth=2];\n", r, d, color[t]);
  }
  std::fprintf(f, "  label=\"tree 0 red, tree 1 blue (parent -> child)\";\n}\n");
  std::fclose(f);
  std::printf("# wrote %s (render: dot -Tpng %s -o %s.png)\n", path.c_str(), path.c_str(), path.c_str());
  return 0;
}

}  // namespace batontopo

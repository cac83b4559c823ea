// loadMachine: the topology (file or discovery), the ranks on it, paths, and the graph search.
#include <cstdio>

#include "baton_topo.h"
#include "misc/debug.h"
#include "topo/discover.h"

namespace batontopo {

using namespace baton;

// CPU ranks: `perHost` ranks on every host, spread over its CPU (NUMA) nodes in turn.
namespace {
void placeCpuRanks(TopoSystem* sys, int perHost) {
  sys->rankNode.clear();
  for (int h = 0; h < sys->nHosts; ++h) {
    std::vector<int> cpus;
    for (int i = 0; i < (int)sys->nodes.size(); ++i)
      if (sys->nodes[i].type == NodeType::CPU && sys->nodes[i].host == h) cpus.push_back(i);
    for (int r = 0; r < perHost && !cpus.empty(); ++r) sys->rankNode.push_back(cpus[r % cpus.size()]);
  }
}
}  // namespace

int loadMachine(const Options& opt, Machine* m) {
  std::unique_ptr<XmlNode> xml;
  // Errors say which option (or NCCL_TOPO_FILE) gave the file; the XML messages name file and line.
  const char* from = opt.topoFromEnv ? "NCCL_TOPO_FILE" : "--topo";
  if (!opt.topoFile.empty()) {
    m->source = opt.topoFile;
    if (xmlLoadFile(opt.topoFile, &xml) != ncclSuccess) {
      std::fprintf(stderr, "baton-topo: %s: %s\n", from, lastError());
      return 1;
    }
  } else {
    m->source = "hwloc discovery of this machine";
    if (topoDiscoverLocal(&xml, &m->notes) != ncclSuccess) {
      std::fprintf(stderr, "baton-topo: discovery: %s\n", lastError());
      return 1;
    }
  }
  if (!opt.dumpFile.empty() && xmlSaveFile(opt.dumpFile, *xml) != ncclSuccess) {
    std::fprintf(stderr, "baton-topo: --dump: %s\n", lastError());
    return 1;
  }
  if (topoFromXml(*xml, opt.nodes, &m->sys) != ncclSuccess) {
    if (opt.topoFile.empty()) std::fprintf(stderr, "baton-topo: discovered topology: %s\n", lastError());
    else std::fprintf(stderr, "baton-topo: %s %s: %s\n", from, opt.topoFile.c_str(), lastError());
    return 1;
  }
  m->cpuRanks = m->sys.rankNode.empty();
  if (!m->cpuRanks && opt.ranksPerNode)
    std::fprintf(stderr, "baton-topo: --ranks %d ignored: %s has GPUs, one rank each\n", opt.ranksPerNode,
                 m->source.c_str());
  if (m->cpuRanks) placeCpuRanks(&m->sys, opt.ranksPerNode ? opt.ranksPerNode : 2);
  m->nRanks = (int)m->sys.rankNode.size();
  if (m->nRanks == 0) {
    std::fprintf(stderr, "baton-topo: %s has neither GPUs nor CPU nodes to put ranks on\n", m->source.c_str());
    return 1;
  }
  topoComputePaths(&m->sys);
  const int channels = opt.channels ? opt.channels : m->cpuRanks ? 1 : 16;
  if (searchGraph(m->sys, 1, channels, &m->graph) != ncclSuccess) {
    std::fprintf(stderr, "baton-topo: graph search: %s\n", lastError());
    return 1;
  }
  return 0;
}

}  // namespace batontopo

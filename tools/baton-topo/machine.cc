// loadMachine: the topology (file or discovery), the ranks on it, paths, and the graph search.
#include <cstdio>

#include "baton_topo.h"
#include "debug.h"
#include "topo/discover.h"

namespace batontopo {

using namespace baton;

// CPU ranks: `perHost` ranks on every host, spread over its CPU (NUMA) nodes in turn.
static void placeCpuRanks(TopoSystem* sys, int perHost) {
  sys->rankNode.clear();
  for (int h = 0; h < sys->nHosts; ++h) {
    std::vector<int> cpus;
    for (int i = 0; i < (int)sys->nodes.size(); ++i)
      if (sys->nodes[i].type == NodeType::CPU && sys->nodes[i].host == h) cpus.push_back(i);
    for (int r = 0; r < perHost && !cpus.empty(); ++r) sys->rankNode.push_back(cpus[r % cpus.size()]);
  }
}

int loadMachine(const Options& opt, Machine* m) {
  std::unique_ptr<XmlNode> xml;
  ncclResult_t res;
  if (!opt.topoFile.empty()) {
    m->source = opt.topoFile;
    res = xmlLoadFile(opt.topoFile, &xml);
  } else {
    m->source = "hwloc discovery of this machine";
    res = topoDiscoverLocal(&xml, &m->notes);
  }
  if (res == ncclSuccess && !opt.dumpFile.empty()) res = xmlSaveFile(opt.dumpFile, *xml);
  if (res == ncclSuccess) res = topoFromXml(*xml, opt.nodes, &m->sys);
  if (res != ncclSuccess) {
    std::fprintf(stderr, "baton-topo: %s: %s\n", m->source.c_str(), lastError());
    return 1;
  }
  m->cpuRanks = m->sys.rankNode.empty();
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

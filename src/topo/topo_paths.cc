// Paths between every pair of nodes (topoComputePaths), as NCCL's ncclTopoSetPaths computes them:
// a breadth-first search backwards from each destination, so a path has the fewest hops and, among
// paths of that length, the widest bottleneck. Its type is the worst hop with NCCL's rules: PCI to
// PCI is PXB, a PCI hop at a CPU is PHB, NVLink relayed by one GPU is NVB (a GPU relays nothing
// else, and only one GPU deep), a NET hop between hosts is NET (within a host it adds nothing: NCCL
// only cares about the GPU<->NIC part), CPU to CPU is SYS. Then the bandwidths the search starts from.
#include <algorithm>

#include "topo/topo.h"

namespace baton {
namespace {

int linkBack(const TopoNode& from, int to, LinkType type) {
  for (int l = 0; l < (int)from.links.size(); ++l)
    if (from.links[l].remote == to && from.links[l].type == type) return l;
  return -1;
}

// Fills paths[*][b]: every node's path to b.
void pathsTo(TopoSystem* sys, int b) {
  auto& nodes = sys->nodes;
  auto path = [&](int a) -> TopoPath& { return sys->paths[a][b]; };
  path(b) = TopoPath{PathType::LOC, kLocBw, {}};
  std::vector<int> frontier{b}, next;
  while (!frontier.empty()) {
    next.clear();
    for (int x : frontier) {
      const TopoNode& nx = nodes[x];
      for (const TopoLink& link : nx.links) {
        const int v = link.remote;
        const TopoNode& nv = nodes[v];
        // A path from v reaches x over v's own link back to x (bandwidth per direction).
        const int back = linkBack(nv, x, link.type);
        if (back < 0) continue;
        const TopoPath& px = path(x);
        if (x != b && nx.type == NodeType::GPU &&
            (link.type != LinkType::NVL || nv.type != NodeType::GPU || px.hops.size() > 1))
          continue;
        const double bw = std::min(px.bw, nv.links[back].bw);
        TopoPath& pv = path(v);
        // NCCL's test: first reached, or reached again at the same depth with more bandwidth.
        if (!((pv.bw == 0 || pv.hops.size() > px.hops.size()) && pv.bw < bw)) continue;
        std::vector<TopoPath::Hop> hops;
        hops.reserve(px.hops.size() + 1);
        hops.push_back({v, back});
        hops.insert(hops.end(), px.hops.begin(), px.hops.end());
        int type = static_cast<int>(link.type);
        if (link.type == LinkType::NET) type = static_cast<int>(nx.host != nv.host ? PathType::NET : PathType::LOC);
        if (nx.type == NodeType::PCI && nv.type == NodeType::PCI) type = static_cast<int>(PathType::PXB);
        if (link.type == LinkType::PCI && (nx.type == NodeType::CPU || nv.type == NodeType::CPU))
          type = static_cast<int>(PathType::PHB);
        if (nx.type == NodeType::GPU && px.type == PathType::NVL && type == static_cast<int>(PathType::NVL) &&
            hops.size() > 1)
          type = static_cast<int>(PathType::NVB);
        pv.type = static_cast<PathType>(std::max(static_cast<int>(px.type), type));
        pv.bw = bw;
        pv.hops = std::move(hops);
        if (std::find(next.begin(), next.end(), v) == next.end()) next.push_back(v);
      }
    }
    frontier.swap(next);
  }
}

// NCCL's getTotalBw: what one GPU can push at once, its NVLinks together or its PCIe link.
double rankTotalBw(const TopoSystem& sys, int r) {
  const TopoNode& n = sys.nodes[sys.rankNode[r]];
  if (n.type != NodeType::GPU) {  // a CPU rank: its best path to another rank (LOC when sharing a node)
    double best = 0;
    for (int q = 0; q < (int)sys.rankNode.size(); ++q)
      if (q != r) best = std::max(best, sys.rankPath(r, q).bw);
    return best;
  }
  double nvl = 0, pci = 0;
  for (const TopoLink& l : n.links) {
    if (l.type == LinkType::NVL) nvl += l.bw;
    if (l.type == LinkType::PCI) pci = l.bw;
  }
  return std::max(nvl, pci);
}

}  // namespace

void topoComputePaths(TopoSystem* sys) {
  const int n = (int)sys->nodes.size();
  sys->paths.assign(n, std::vector<TopoPath>(n));
  for (int b = 0; b < n; ++b) pathsTo(sys, b);

  const int nRanks = (int)sys->rankNode.size();
  sys->maxBw = sys->totalBw = 0;
  if (nRanks == 1) sys->maxBw = sys->totalBw = kLocBw;  // NCCL: a lone GPU is bounded by nothing
  if (nRanks <= 1) return;
  // maxBw: on several hosts every ring crosses the network, so only pairs on different hosts count
  // (NCCL starts from the GPU->NIC bandwidth there); on one host, any pair of ranks.
  bool crossHost = false;
  for (int r = 1; r < nRanks && !crossHost; ++r) crossHost = sys->hostOfRank(r) != sys->hostOfRank(0);
  for (int a = 0; a < nRanks; ++a) {
    for (int b = 0; b < nRanks; ++b)
      if (a != b && (!crossHost || sys->hostOfRank(a) != sys->hostOfRank(b)))
        sys->maxBw = std::max(sys->maxBw, sys->rankPath(a, b).bw);
    sys->totalBw = std::max(sys->totalBw, rankTotalBw(*sys, a));
  }
}

}  // namespace baton

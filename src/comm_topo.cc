// A communicator's topology, rings and trees (lessons 06 and 07): the core's init step that builds
// them with src/topo/ (discovery, paths, search), which knows nothing of communicators.
//
// Each rank loads its host's topology (NCCL_TOPO_FILE, else hwloc discovery, cached per process);
// the views are allgathered through the bootstrap and those of rank 0's host fused; every host of
// the job is assumed to look like that one (as NCCL's simulator and most clusters do). Each rank is
// placed on its GPU or, for CPU ranks, on the NUMA node it runs on; paths are computed and the
// graph searched. All inputs are the same on every rank (the fused tree, rank 0's knobs, the
// allgathered peer table), so every rank computes the same rings and trees.
//
// Hosts are real hosts (host hash, NCCL_HOSTID) or, with BATON_RANKS_PER_NODE=k, groups of k
// consecutive ranks: a rehearsal of multi-node trees on one machine. Transports are unaffected.
#include <algorithm>
#include <map>
#include <string>

#include "comm.h"
#include "misc/debug.h"
#include "misc/param.h"
#include "topo/discover.h"
#include "topo/graph.h"

namespace baton {
namespace {

// The XML of this rank's host: NCCL_TOPO_FILE if set, else discovery.
ncclResult_t localXml(std::unique_ptr<XmlNode>* xml, std::string* source) {
  const std::string file = envStr("NCCL_TOPO_FILE");
  if (!file.empty()) {
    *source = "NCCL_TOPO_FILE=" + file;
    if (xmlLoadFile(file, xml) == ncclSuccess) return ncclSuccess;
    const std::string why = lastError();
    return batonError(ncclInvalidArgument, "NCCL_TOPO_FILE=%s: %s", file.c_str(), why.c_str());
  }
  std::string notes;
  *source = "hwloc discovery";
  return topoDiscoverLocal(xml, &notes);
}

// Index of rank r's host, in order of first appearance.
std::vector<int> hostIndices(const ncclComm* comm) {
  std::vector<int> host(comm->nRanks);
  const int perNode = comm->tun.ranksPerNode;
  std::map<uint64_t, int> seen;
  std::vector<uint64_t> order;
  for (int r = 0; r < comm->nRanks; ++r) {
    if (perNode > 0) {
      host[r] = r / perNode;
      continue;
    }
    auto it = seen.find(comm->peers[r].hostHash);
    if (it == seen.end()) it = seen.emplace(comm->peers[r].hostHash, (int)seen.size()).first;
    host[r] = it->second;
  }
  return host;
}

// NCCL's fusion: every rank's view of its host is allgathered, and the views of the ranks on rank
// 0's host are merged in rank order (topoFuseXml). Every rank builds the job from that one tree, so
// all compute the same rings and trees whatever each one could see. (NCCL first marks each rank's
// GPU with its rank; the CPU backend's ranks drive no GPU, so there is nothing to mark yet.) A rank
// whose view failed still takes part, with an empty view, so every rank reports the failure.
ncclResult_t fuseHostViews(ncclComm* comm, const std::vector<int>& host, ncclResult_t mineOk,
                           std::unique_ptr<XmlNode>* xml) {
  const int n = comm->nRanks, me = comm->rank;
  const std::string mine = mineOk == ncclSuccess ? xmlWrite(**xml) : std::string();
  std::vector<uint64_t> lens(n);
  lens[me] = mine.size();
  BATON_CHECK(comm->bootstrap->allGather(lens.data(), sizeof(uint64_t)));
  for (int r = 0; r < n; ++r)
    if (lens[r] == 0)
      return mineOk != ncclSuccess
                 ? mineOk
                 : batonError(ncclSystemError, "rank %d could not load its host's topology (see its log)", r);
  const size_t width = *std::max_element(lens.begin(), lens.end());
  std::vector<char> all(width * n);
  std::copy(mine.begin(), mine.end(), all.begin() + width * me);
  BATON_CHECK(comm->bootstrap->allGather(all.data(), width));
  std::unique_ptr<XmlNode> fused;
  for (int r = 0; r < n; ++r) {
    if (host[r] != host[0]) continue;
    std::unique_ptr<XmlNode> view;
    const std::string text(all.data() + width * r, std::min<size_t>(lens[r], width));
    BATON_CHECK(xmlParse(text, "rank " + std::to_string(r) + "'s topology", &view));
    if (!fused) fused = std::move(view);
    else BATON_CHECK(topoFuseXml(fused.get(), *view));
  }
  *xml = std::move(fused);
  return ncclSuccess;
}

// CPU ranks sit on their host's CPU node for their NUMA id (else the host's first CPU node).
void placeCpuRanks(TopoSystem* sys, const ncclComm* comm, const std::vector<int>& host) {
  sys->rankNode.assign(comm->nRanks, -1);
  for (int r = 0; r < comm->nRanks; ++r) {
    int first = -1, match = -1;
    for (int i = 0; i < (int)sys->nodes.size(); ++i) {
      const TopoNode& n = sys->nodes[i];
      if (n.type != NodeType::CPU || n.host != host[r]) continue;
      if (first < 0) first = i;
      if (match < 0 && n.numaId == comm->peers[r].numaNode) match = i;
    }
    sys->rankNode[r] = match >= 0 ? match : first;
  }
}

// The job's topology with every rank placed and paths computed; *source names where it came from.
ncclResult_t commTopoSystem(ncclComm* comm, TopoSystem* sys, std::string* source) {
  std::unique_ptr<XmlNode> xml;
  const ncclResult_t loaded = localXml(&xml, source);
  const std::vector<int> host = hostIndices(comm);
  if (comm->nRanks > 1) BATON_CHECK(fuseHostViews(comm, host, loaded, &xml));
  else BATON_CHECK(loaded);
  const std::string dump = envStr("NCCL_TOPO_DUMP_FILE");
  if (!dump.empty() && comm->rank == envInt("NCCL_TOPO_DUMP_FILE_RANK", 0) && xmlSaveFile(dump, *xml) != ncclSuccess)
    BATON_WARN("NCCL_TOPO_DUMP_FILE=%s: %s (continuing without the dump)", dump.c_str(), lastError());
  const int nHosts = *std::max_element(host.begin(), host.end()) + 1;
  comm->nNodes = nHosts;
  if (topoFromXml(*xml, nHosts, sys) != ncclSuccess) {
    const std::string why = lastError();
    return batonError(ncclInvalidArgument, "topology from %s: %s", source->c_str(), why.c_str());
  }
  bool cpuRanks = (int)sys->rankNode.size() != comm->nRanks;
  for (int r = 0; !cpuRanks && r < comm->nRanks; ++r) cpuRanks = sys->hostOfRank(r) != host[r];
  if (cpuRanks) placeCpuRanks(sys, comm, host);
  for (int r = 0; r < comm->nRanks; ++r)
    if (sys->rankNode[r] < 0)
      return batonError(ncclInternalError, "topology from %s has no CPU node for rank %d on host %d", source->c_str(),
                        r, host[r]);
  topoComputePaths(sys);
  return ncclSuccess;
}

}  // namespace

ncclResult_t commBuildGraph(ncclComm* comm) {
  TopoSystem sys;
  std::string source;
  BATON_CHECK(commTopoSystem(comm, &sys, &source));
  CommGraph graph;
  BATON_CHECK(searchGraph(sys, comm->nChannels, comm->nChannels, &graph));
  if ((int)graph.channels.size() < comm->nChannels)
    return batonError(ncclInternalError, "graph search found %zu channels, %d needed", graph.channels.size(),
                      comm->nChannels);
  for (int c = 0; c < comm->nChannels; ++c) {
    Channel& ch = *comm->channels[c];
    const ChannelGraph& g = graph.channels[c];
    ch.ringUserRanks = g.ring;
    ch.ringIndex = (int)(std::find(g.ring.begin(), g.ring.end(), comm->rank) - g.ring.begin());
    if ((int)g.ring.size() != comm->nRanks || ch.ringIndex == comm->nRanks)
      return batonError(ncclInternalError, "graph search: channel %d's ring does not hold rank %d", c, comm->rank);
    const TreeLinks& tl = g.tree[comm->rank];
    ch.treeIndex = g.treeIndex;
    ch.tree.up = tl.up;
    ch.tree.nDown = 0;
    for (int d : tl.down)
      if (d >= 0) ch.tree.down[ch.tree.nDown++] = d;
  }
  BATON_INFO(kSubGraph, "topology from %s: %d hosts, pattern %s, %d channels", source.c_str(), sys.nHosts,
             graph.pattern.c_str(), comm->nChannels);
  return ncclSuccess;
}

}  // namespace baton

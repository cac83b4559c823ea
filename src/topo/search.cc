// searchGraph: the channels' rings and trees. Walks a speed ladder down from the system's best
// bandwidth; at each speed places as many rings as the links can carry (search_ring.cc), keeps the
// speed whose channels carry the most in total, then duplicates the channels as NCCL does (channel
// c + n repeats channel c's ring on tree 1). CPU ranks, and systems where no ring fits, get rings
// in rank order grouped by host. NCCL: src/graph/search.cc and src/graph/trees.cc.
#include <algorithm>
#include <cmath>
#include <iterator>

#include "misc/debug.h"
#include "search_ring.h"

namespace baton {

namespace {

// NCCL's intra- and inter-node ladders (sm80..sm100) merged, in GB/s per channel.
constexpr double kSpeeds[] = {90, 80, 70, 60, 50, 48, 40, 30, 28, 24,  20,  19,   18,  15,
                              12, 11, 10, 9,  7,  6,  5,  4,  3,  2.4, 1.2, 0.24, 0.12};
constexpr long kGlobalSteps = 1L << 19;  // NCCL_SEARCH_GLOBAL_TIMEOUT

// Hosts in order of their first rank; within a host, ranks in rank order.
std::vector<SearchHost> groupHosts(const TopoSystem& sys) {
  std::vector<SearchHost> hosts;
  std::vector<int> index;  // by host id
  for (int r = 0; r < (int)sys.rankNode.size(); ++r) {
    int h = sys.hostOfRank(r);
    if (h >= (int)index.size()) index.resize(h + 1, -1);
    if (index[h] < 0) {
      index[h] = (int)hosts.size();
      hosts.push_back(SearchHost{h, {}, {}});
    }
    hosts[index[h]].ranks.push_back(r);
  }
  for (int n = 0; n < (int)sys.nodes.size(); ++n) {
    const TopoNode& node = sys.nodes[n];
    if (node.type == NodeType::NET && node.host < (int)index.size() && index[node.host] >= 0) {
      hosts[index[node.host]].nets.push_back(n);
    }
  }
  return hosts;
}

// The ring in rank order grouped by host, with what its hops actually offer.
ChannelGraph rankOrderChannel(const TopoSystem& sys, const std::vector<SearchHost>& hosts) {
  ChannelGraph ch;
  for (const SearchHost& h : hosts) ch.ring.insert(ch.ring.end(), h.ranks.begin(), h.ranks.end());
  const int n = (int)ch.ring.size();
  double bw = n > 1 ? INFINITY : kLocBw;
  for (int i = 0; i < n && n > 1; ++i) {
    const TopoPath& p = sys.rankPath(ch.ring[i], ch.ring[(i + 1) % n]);
    bw = std::min(bw, p.bw);
    ch.worstPath = std::max(ch.worstPath, p.type);
  }
  ch.bw = std::max(bw, 0.1);  // NCCL's fallback speed as the floor: never report 0
  return ch;
}

double bestPairBw(const TopoSystem& sys) {
  double best = 0;
  for (size_t a = 0; a < sys.rankNode.size(); ++a)
    for (size_t b = 0; b < sys.rankNode.size(); ++b)
      if (a != b) best = std::max(best, sys.rankPath(a, b).bw);
  return best;
}

// Walks the ladder; returns the best set of channels found (empty when nothing fits).
std::vector<ChannelGraph> ladderSearch(const TopoSystem& sys, const std::vector<SearchHost>& hosts, int nMax) {
  RingSearch search(sys, hosts, kGlobalSteps);
  double maxBw = sys.maxBw > 0 ? sys.maxBw : bestPairBw(sys);
  if (sys.rankNode.size() == 1) maxBw = kLocBw;  // a lone rank: no hop limits it
  std::vector<ChannelGraph> best;
  double bestSpeed = 0;
  for (double speed : kSpeeds) {
    if (speed > maxBw + 1e-9) continue;
    // As NCCL: go down only while the speed stays above half the best one found, and only while
    // more channels could still beat the best total.
    if (!best.empty() && (speed <= 0.49 * bestSpeed || speed * nMax <= best.size() * bestSpeed + 1e-9)) break;
    search.ledger().reset();
    std::vector<ChannelGraph> found;
    ChannelGraph ch;
    while ((int)found.size() < nMax && search.findChannel((int)found.size(), speed, &ch)) found.push_back(ch);
    if (found.size() * speed > best.size() * bestSpeed + 1e-9) best = found, bestSpeed = speed;
    if (sys.totalBw > 0 && best.size() * bestSpeed >= sys.totalBw - 1e-9) break;
    if (search.exhausted()) {
      BATON_INFO(kSubGraph, "graph search: step budget spent at %.2f GB/s, keeping the best so far", speed);
      break;
    }
  }
  return best;
}

}  // namespace

ncclResult_t searchGraph(const TopoSystem& sys, int minChannels, int maxChannels, CommGraph* out) {
  if (out == nullptr) return batonError(ncclInvalidArgument, "searchGraph: out is null");
  if (maxChannels < 1 || minChannels > maxChannels) {
    return batonError(ncclInvalidArgument, "searchGraph: channels min %d max %d, expected 1 <= max and min <= max",
                      minChannels, maxChannels);
  }
  const int nRanks = (int)sys.rankNode.size();
  if (nRanks == 0) return batonError(ncclInvalidArgument, "searchGraph: the system has no ranks");
  for (int r = 0; r < nRanks; ++r) {
    if (sys.rankNode[r] < 0 || sys.rankNode[r] >= (int)sys.nodes.size()) {
      return batonError(ncclInvalidArgument, "searchGraph: rank %d sits on node %d, expected 0..%zu", r,
                        sys.rankNode[r], sys.nodes.size() - 1);
    }
  }
  if (sys.paths.size() != sys.nodes.size()) {
    return batonError(ncclInternalError, "searchGraph: %zu path rows for %zu nodes (topoComputePaths not run?)",
                      sys.paths.size(), sys.nodes.size());
  }

  const std::vector<SearchHost> hosts = groupHosts(sys);
  bool cpuOnly =
      std::all_of(sys.rankNode.begin(), sys.rankNode.end(), [&](int n) { return sys.nodes[n].type == NodeType::CPU; });
  const int nMax = std::max(1, maxChannels / 2);  // half: the other half are the duplicates
  std::vector<ChannelGraph> found;
  if (!cpuOnly) found = ladderSearch(sys, hosts, nMax);
  if (found.empty()) {
    // CPU ranks share memory bandwidth no link models; a GPU system where nothing fit falls back.
    if (!cpuOnly) BATON_INFO(kSubGraph, "graph search: no ring fits, falling back to rank order");
    found.push_back(rankOrderChannel(sys, hosts));
  }

  const int nf = (int)found.size();
  int n = maxChannels >= 2 ? 2 * nf : 1;
  n = std::max(n, minChannels);
  out->channels.clear();
  for (int c = 0; c < n; ++c) {
    ChannelGraph ch = found[c % nf];
    ch.treeIndex = (c / nf) % 2;
    buildChannelTree(sys, &ch);
    out->channels.push_back(std::move(ch));
  }
  out->pattern = hosts.size() > 1 ? "ring+chain+dbtree" : "ring+chain";
  BATON_INFO(kSubGraph,
             "graph search: %d ranks on %zu hosts, %d channels found at %.2f GB/s (worst path %d), %d in use", nRanks,
             hosts.size(), nf, found[0].bw, (int)found[0].worstPath, n);
  return ncclSuccess;
}

}  // namespace baton

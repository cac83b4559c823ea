// One channel's ring at a given speed: per host a depth-first search over the host's ranks (closest
// path types first, then widest, then rank order), every hop's path taking the speed from the links
// it crosses, backtracking within a step budget. Across hosts the ring leaves and re-enters each
// host through one NET "rail", channel c trying rail c first so channels spread over the NICs.
#include <algorithm>
#include <string>
#include <tuple>

#include "search_ring.h"

namespace baton {

namespace {
constexpr long kSegmentSteps = 16384;  // NCCL_SEARCH_TIMEOUT: DFS steps for one host's segment
constexpr double kEps = 1e-6;
}  // namespace

LinkLedger::LinkLedger(const TopoSystem& sys) : sys_(sys), intelCpu_(sys.nodes.size(), 0) {
  for (size_t n = 0; n < sys.nodes.size(); ++n) {
    const TopoNode& node = sys.nodes[n];
    intelCpu_[n] = node.type == NodeType::CPU && (node.vendor == "GenuineIntel" || node.vendor == "Intel");
  }
  reset();
}

void LinkLedger::reset() {
  avail_.resize(sys_.nodes.size());
  for (size_t n = 0; n < sys_.nodes.size(); ++n) {
    avail_[n].resize(sys_.nodes[n].links.size());
    for (size_t l = 0; l < avail_[n].size(); ++l) avail_[n][l] = sys_.nodes[n].links[l].bw;
  }
}

// GPU-to-GPU traffic through an Intel root complex moves in 64-byte packets: NCCL charges PCI links
// 6/5 of the speed on such (PHB) paths.
double LinkLedger::pciFactor(const TopoPath& p) const {
  if (p.type != PathType::PHB || p.hops.empty() || sys_.nodes[p.hops[0].node].type != NodeType::GPU) return 1.0;
  for (const TopoPath::Hop& h : p.hops) {
    if (intelCpu_[sys_.nodes[h.node].links[h.link].remote]) return 1.2;
  }
  return 1.0;
}

bool LinkLedger::fits(const TopoPath& p, double speed) const {
  if (p.type == PathType::DIS) return false;
  double f = pciFactor(p);
  for (const TopoPath::Hop& h : p.hops) {
    double need = sys_.nodes[h.node].links[h.link].type == LinkType::PCI ? speed * f : speed;
    if (avail_[h.node][h.link] + kEps < need) return false;
  }
  return true;
}

void LinkLedger::take(const TopoPath& p, double speed) {
  double f = pciFactor(p);
  for (const TopoPath::Hop& h : p.hops) {
    avail_[h.node][h.link] -= sys_.nodes[h.node].links[h.link].type == LinkType::PCI ? speed * f : speed;
  }
}

RingSearch::RingSearch(const TopoSystem& sys, const std::vector<SearchHost>& hosts, long globalSteps)
    : sys_(sys), hosts_(hosts), ledger_(sys), budget_(globalSteps) {}

struct RingSearch::Segment {
  const SearchHost* h = nullptr;
  double speed = 0;
  int end = -1;  // local index kept for the last position (-1: any)
  bool cycle = false;
  long steps = kSegmentSteps;
  std::vector<int> order;  // local indices into h->ranks
  std::vector<char> used;
};

namespace {
// Candidate order: better path type, then wider path, then the next rank in rank order (so equal
// choices give the PCI/rank order NCCL tries first), then the index itself.
using Key = std::tuple<int, double, int, int>;
Key keyOf(const TopoPath& p, int dist, int idx) { return Key((int)p.type, -p.bw, dist, idx); }
}  // namespace

bool RingSearch::extend(Segment& s) {
  if (--s.steps < 0 || --budget_ < 0) return false;
  const std::vector<int>& ranks = s.h->ranks;
  const int n = (int)ranks.size();
  if ((int)s.order.size() == n) {
    if (!s.cycle || n == 1) return true;
    const TopoPath& close = sys_.rankPath(ranks[s.order.back()], ranks[s.order[0]]);
    if (!ledger_.fits(close, s.speed)) return false;
    ledger_.take(close, s.speed);
    return true;
  }
  const int u = s.order.back();
  const bool lastPick = (int)s.order.size() == n - 1;
  std::vector<std::pair<Key, int>> cands;
  for (int v = 0; v < n; ++v) {
    if (s.used[v] || (s.end >= 0 && (v == s.end) != lastPick)) continue;
    cands.push_back({keyOf(sys_.rankPath(ranks[u], ranks[v]), (v - u + n) % n, v), v});
  }
  std::sort(cands.begin(), cands.end());
  for (const auto& [key, v] : cands) {
    const TopoPath& p = sys_.rankPath(ranks[u], ranks[v]);
    if (!ledger_.fits(p, s.speed)) continue;
    ledger_.take(p, s.speed);
    s.order.push_back(v);
    s.used[v] = 1;
    if (extend(s)) return true;
    s.used[v] = 0;
    s.order.pop_back();
    ledger_.take(p, -s.speed);
    if (s.steps < 0 || budget_ < 0) return false;
  }
  return false;
}

// A cheap necessary condition before backtracking: the hops that fit at this speed (with the NET,
// when there is one, as an extra vertex) must connect every rank both ways. It turns most hopeless
// speeds into an O(n^2) check instead of a search through every order.
bool RingSearch::precheck(const SearchHost& h, int anchorNet, double speed) const {
  const int n = (int)h.ranks.size(), m = n + (anchorNet >= 0);
  if (m <= 1) return true;
  auto node = [&](int v) { return v < n ? sys_.rankNode[h.ranks[v]] : anchorNet; };
  std::vector<char> fit(m * m, 0);
  for (int u = 0; u < m; ++u) {
    for (int v = 0; v < m; ++v) {
      if (u == v) continue;
      const TopoPath& p = u < n && v < n ? sys_.rankPath(h.ranks[u], h.ranks[v]) : nodePath(node(u), node(v));
      fit[u * m + v] = ledger_.fits(p, speed);
    }
  }
  for (int dir = 0; dir < 2; ++dir) {  // reach every vertex from vertex 0, then reach 0 from every vertex
    std::vector<char> seen(m, 0);
    std::vector<int> stack{0};
    seen[0] = 1;
    int count = 1;
    while (!stack.empty()) {
      int u = stack.back();
      stack.pop_back();
      for (int v = 0; v < m; ++v) {
        if (seen[v] || !fit[dir == 0 ? u * m + v : v * m + u]) continue;
        seen[v] = 1, ++count;
        stack.push_back(v);
      }
    }
    if (count < m) return false;
  }
  return true;
}

bool RingSearch::segment(const SearchHost& h, int anchorNet, bool cycle, double speed, std::vector<int>* order) {
  const int n = (int)h.ranks.size();
  Segment s;
  s.h = &h, s.speed = speed, s.cycle = cycle;
  s.used.assign(n, 0);
  auto run = [&](int first, int end) {
    s.order.assign(1, first);
    std::fill(s.used.begin(), s.used.end(), 0);
    s.used[first] = 1;
    s.end = end;
    return extend(s);
  };
  auto done = [&] {
    order->clear();
    for (int v : s.order) order->push_back(h.ranks[v]);
    return true;
  };
  if (anchorNet < 0) {
    if (cycle && !precheck(h, -1, speed)) return false;
    return run(0, -1) && done();
  }
  if (!precheck(h, anchorNet, speed)) return false;
  // The ring enters at the rank closest to the NET and leaves from the closest other rank.
  std::vector<std::pair<Key, int>> starts, ends;
  for (int v = 0; v < n; ++v) {
    int nv = sys_.rankNode[h.ranks[v]];
    starts.push_back({keyOf(nodePath(anchorNet, nv), 0, v), v});
    ends.push_back({keyOf(nodePath(nv, anchorNet), 0, v), v});
  }
  std::sort(starts.begin(), starts.end());
  std::sort(ends.begin(), ends.end());
  // Both NET paths are taken before the search in between: a way out that cannot fit is then
  // found at once, not after trying every order of the ranks in the middle.
  for (const auto& st : starts) {
    const TopoPath& in = nodePath(anchorNet, sys_.rankNode[h.ranks[st.second]]);
    if (!ledger_.fits(in, speed)) continue;
    ledger_.take(in, speed);
    for (const auto& e : ends) {
      if (e.second == st.second && n > 1) continue;
      const TopoPath& out = nodePath(sys_.rankNode[h.ranks[e.second]], anchorNet);
      if (ledger_.fits(out, speed)) {
        ledger_.take(out, speed);
        if (run(st.second, n > 1 ? e.second : -1)) return done();
        ledger_.take(out, -speed);
      }
      if (s.steps < 0 || budget_ < 0 || n == 1) break;
    }
    ledger_.take(in, -speed);
    if (s.steps < 0 || budget_ < 0) return false;
  }
  return false;
}

bool RingSearch::findChannel(int channel, double speed, ChannelGraph* out) {
  const int nh = (int)hosts_.size();
  const std::vector<std::vector<double>> saved = ledger_.state();
  std::vector<std::vector<int>> segs(nh);
  std::vector<int> nets;
  bool ok = false;
  if (nh == 1) {
    ok = segment(hosts_[0], -1, true, speed, &segs[0]);
  } else if (std::all_of(hosts_.begin(), hosts_.end(), [](const SearchHost& h) { return !h.nets.empty(); })) {
    size_t nRails = 0;
    for (const SearchHost& h : hosts_) nRails = std::max(nRails, h.nets.size());
    for (size_t i = 0; i < nRails && !ok && budget_ > 0; ++i) {
      size_t rail = (channel + i) % nRails;
      nets.assign(nh, -1);
      for (int j = 0; j < nh; ++j) nets[j] = hosts_[j].nets[rail % hosts_[j].nets.size()];
      ok = true;
      for (int j = 0; j < nh && ok; ++j) {  // the network hops first: cheapest to rule out
        const TopoPath& p = nodePath(nets[j], nets[(j + 1) % nh]);
        ok = ledger_.fits(p, speed);
        if (ok) ledger_.take(p, speed);
      }
      for (int j = 0; j < nh && ok; ++j) ok = segment(hosts_[j], nets[j], false, speed, &segs[j]);
      if (!ok) ledger_.restore(saved);
    }
  } else {
    // Hosts without NET nodes: each host from its first rank, joined by the direct paths.
    ok = true;
    for (int j = 0; j < nh && ok; ++j) ok = segment(hosts_[j], -1, false, speed, &segs[j]);
    for (int j = 0; j < nh && ok; ++j) {
      const TopoPath& p = sys_.rankPath(segs[j].back(), segs[(j + 1) % nh].front());
      ok = ledger_.fits(p, speed);
      if (ok) ledger_.take(p, speed);
    }
  }
  if (!ok) {
    ledger_.restore(saved);
    return false;
  }

  *out = ChannelGraph{};
  for (const std::vector<int>& seg : segs) out->ring.insert(out->ring.end(), seg.begin(), seg.end());
  out->bw = speed;
  const int n = (int)out->ring.size();
  for (int i = 0; i < n && n > 1; ++i) {
    PathType t = sys_.rankPath(out->ring[i], out->ring[(i + 1) % n]).type;
    if (sys_.hostOfRank(out->ring[i]) != sys_.hostOfRank(out->ring[(i + 1) % n]) && !nets.empty()) t = PathType::NET;
    out->worstPath = std::max(out->worstPath, t);
  }
  if (!nets.empty()) {
    int maxHost = 0;
    for (const SearchHost& h : hosts_) maxHost = std::max(maxHost, h.host);
    out->nets.assign(maxHost + 1, -1);
    for (int j = 0; j < nh; ++j) out->nets[hosts_[j].host] = nets[j];
  }
  return true;
}

}  // namespace baton

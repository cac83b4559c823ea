// Internal to the graph search (search.cc drives, search_ring.cc searches): the ledger of bandwidth
// left on every link, and the search for one channel's ring at a given speed with bounded
// backtracking. NCCL searches the same way in src/graph/search.cc (ncclTopoCompute).
#pragma once

#include <vector>

#include "graph.h"

namespace baton {

// One host's part of the communicator.
struct SearchHost {
  int host = 0;            // TopoNode::host
  std::vector<int> ranks;  // in rank order
  std::vector<int> nets;   // its NET nodes, in node order (the "rails")
};

// Bandwidth left on every directed link while channels are placed: a channel at speed s takes s
// from every link of every path its ring uses, as NCCL's followPath does.
class LinkLedger {
 public:
  explicit LinkLedger(const TopoSystem& sys);
  void reset();  // every link back to its full bandwidth
  bool fits(const TopoPath& p, double speed) const;
  void take(const TopoPath& p, double speed);  // a negative speed gives it back
  const std::vector<std::vector<double>>& state() const { return avail_; }
  void restore(const std::vector<std::vector<double>>& saved) { avail_ = saved; }

 private:
  double pciFactor(const TopoPath& p) const;
  const TopoSystem& sys_;
  std::vector<std::vector<double>> avail_;  // [node][link]
  std::vector<char> intelCpu_;              // [node]: P2P through it costs 6/5 on PCI links
};

class RingSearch {
 public:
  RingSearch(const TopoSystem& sys, const std::vector<SearchHost>& hosts, long globalSteps);
  // Finds channel `channel`'s ring at `speed` and takes its bandwidth from the ledger; false when
  // no ring fits (the ledger is then unchanged).
  bool findChannel(int channel, double speed, ChannelGraph* out);
  LinkLedger& ledger() { return ledger_; }
  bool exhausted() const { return budget_ <= 0; }  // the global step budget is spent

 private:
  struct Segment;
  // Orders h's ranks: a cycle (single host), a path from and back to NET `anchorNet`, or (anchorNet
  // -1, !cycle) a path from the host's first rank to anywhere.
  bool segment(const SearchHost& h, int anchorNet, bool cycle, double speed, std::vector<int>* order);
  bool extend(Segment& s);
  bool precheck(const SearchHost& h, int anchorNet, double speed) const;
  const TopoPath& nodePath(int a, int b) const { return sys_.paths[a][b]; }

  const TopoSystem& sys_;
  const std::vector<SearchHost>& hosts_;
  LinkLedger ledger_;
  long budget_;
};

}  // namespace baton

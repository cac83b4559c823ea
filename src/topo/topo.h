// The topology graph: GPU / PCI / NVS / CPU / NIC / NET nodes joined by typed, bandwidth-annotated
// links, and the best path between every pair of endpoints with NCCL's path types (LOC, NVL, NVB,
// PIX, PXB, PHB, SYS, NET). Built from NCCL's topology XML (read from NCCL_TOPO_FILE, or written by
// discovery); as in NCCL's src/graph/topo.h and topo.cc. Lesson 06.
//
// On a machine without GPUs a communicator's ranks are CPU ranks: each rank sits on the CPU (NUMA)
// node it runs on, and paths between ranks are paths between those nodes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nccl.h"
#include "xml.h"

namespace baton {

// Numeric values are NCCL's (topo.h); link and path types share their numbers on purpose.
enum class NodeType : int { GPU = 0, PCI = 1, NVS = 2, CPU = 3, NIC = 4, NET = 5 };
enum class LinkType : int { LOC = 0, NVL = 1, C2C = 3, PCI = 4, SYS = 9, NET = 10 };
enum class PathType : int {
  LOC = 0,
  NVL = 1,
  NVB = 2,
  C2C = 3,
  PIX = 4,
  PXB = 5,
  P2C = 6,
  PXN = 7,
  PHB = 8,
  SYS = 9,
  NET = 10,
  DIS = 11
};
const char* nodeTypeName(NodeType t);  // "GPU", ...
const char* linkTypeName(LinkType t);  // "LOC", "NVL", "C2C", "PCI", "SYS", "NET"
const char* pathTypeName(PathType t);  // "LOC", ... "DIS"

constexpr double kLocBw = 5000.0;  // GB/s, NCCL's LOC_BW

struct TopoLink {
  LinkType type = LinkType::LOC;
  double bw = 0;    // GB/s in this direction
  int remote = -1;  // index into TopoSystem::nodes
};

// The best path from one node to another: its type (the worst hop, with NCCL's rules), its
// bandwidth (the narrowest link) and the links it crosses, in order.
struct TopoPath {
  PathType type = PathType::DIS;
  double bw = 0;
  struct Hop {
    int node;  // the node the link leaves from
    int link;  // index into nodes[node].links
  };
  std::vector<Hop> hops;
};

struct TopoNode {
  NodeType type = NodeType::CPU;
  int host = 0;       // which machine of a cluster (0 for a single node)
  uint64_t id = 0;    // NCCL's id: host << 56 | local id (PCI bus id as a number, NUMA id, dev, ...)
  std::string busId;  // PCI-attached nodes: "0000:17:00.0"
  // GPU
  int dev = -1, rank = -1, sm = 0;
  bool gdr = false;
  // CPU (a NUMA domain)
  int numaId = -1;
  std::string arch, vendor, affinity;
  int familyId = 0, modelId = 0;
  // NIC / NET
  std::string name;
  int port = 0;
  uint64_t guid = 0;
  double latencyUs = 0;
  std::vector<TopoLink> links;
};

struct TopoSystem {
  std::vector<TopoNode> nodes;
  int nHosts = 1;
  // Communicator ranks: rankNode[r] = the GPU node of rank r, or its CPU node for CPU ranks.
  std::vector<int> rankNode;
  // paths[a][b], filled by topoComputePaths for every node a and b.
  std::vector<std::vector<TopoPath>> paths;
  double maxBw = 0;    // best bandwidth of any path between two ranks (search ladders start here)
  double totalBw = 0;  // best total bandwidth out of one rank

  const TopoPath& path(int a, int b) const { return paths[a][b]; }
  const TopoPath& rankPath(int ra, int rb) const { return paths[rankNode[ra]][rankNode[rb]]; }
  int hostOfRank(int r) const { return nodes[rankNode[r]].host; }
};

// XML (NCCL's format) -> graph. Validates: known element names, required attributes, positive and
// plausible bandwidths, a tree-shaped element hierarchy, nvlink targets that exist. Errors
// (ncclInvalidArgument) name the element, its line and the attribute. `nHosts` > 1 replicates the
// file as that many identical machines joined by their NET nodes (rail by rail). Ranks are numbered
// host-major over GPUs (the `rank` attribute, else dev order); a file without GPUs gets no ranks.
ncclResult_t topoFromXml(const XmlNode& root, int nHosts, TopoSystem* out);
// Graph -> XML for one host (host 0), in NCCL's format: what topoFromXml reads back to the same graph.
ncclResult_t topoToXml(const TopoSystem& sys, std::unique_ptr<XmlNode>* root);
// Fills sys->paths, maxBw, totalBw with NCCL's rules (BFS by bandwidth; PCI->PCI counts as PXB, a hop
// through a CPU as PHB, NVLink through one GPU as NVB, between hosts NET).
void topoComputePaths(TopoSystem* sys);

}  // namespace baton

// Names of node, link and path types, spelled as NCCL prints them (topoNodeTypeStr,
// topoLinkTypeStr, topoPathTypeStr) so baton's logs and baton-topo read like NCCL's.
#include "topo/topo.h"

namespace baton {

const char* nodeTypeName(NodeType t) {
  static const char* const kNames[] = {"GPU", "PCI", "NVS", "CPU", "NIC", "NET"};
  int i = static_cast<int>(t);
  return i >= 0 && i < 6 ? kNames[i] : "?";
}

const char* linkTypeName(LinkType t) {
  // Link types share path-type numbers; the gaps (2, 5-8) are path-only types.
  switch (t) {
    case LinkType::LOC: return "LOC";
    case LinkType::NVL: return "NVL";
    case LinkType::C2C: return "C2C";
    case LinkType::PCI: return "PCI";
    case LinkType::SYS: return "SYS";
    case LinkType::NET: return "NET";
  }
  return "?";
}

const char* pathTypeName(PathType t) {
  static const char* const kNames[] = {"LOC", "NVL", "NVB", "C2C", "PIX", "PXB",
                                       "P2C", "PXN", "PHB", "SYS", "NET", "DIS"};
  int i = static_cast<int>(t);
  return i >= 0 && i < 12 ? kNames[i] : "?";
}

}  // namespace baton

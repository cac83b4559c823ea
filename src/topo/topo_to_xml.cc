// Graph -> NCCL topology XML (topoToXml), host 0 only: the inverse of topoFromXml, so a graph
// written and read back is the same graph (same node order, links, paths). What the graph does not
// keep (PCI vendor/device ids, maxconn) is not written; classes are the generic ones NCCL knows.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "misc/debug.h"
#include "topo/topo_xml_common.h"

namespace baton {
namespace topoxml {
namespace {

std::string num(double v) {  // shortest text that reads back to the same double
  char b[64];
  auto r = std::to_chars(b, b + sizeof b, v);
  return std::string(b, r.ptr);
}

std::string hex(uint64_t v) {
  char b[24];
  snprintf(b, sizeof b, "0x%llx", (unsigned long long)v);
  return b;
}

// link_width and link_speed that topoFromXml turns back into exactly `bw` (x16 preferred).
ncclResult_t setPciLink(const TopoNode& n, double bw, XmlNode* pci) {
  for (int i = 0; i <= 32; ++i) {
    int width = i == 0 ? 16 : 33 - i;
    for (const PciGen& g : kPciGens)
      if (width * g.speed / 80.0 == bw) {
        pci->set("link_speed", std::string(g.gts) + " GT/s PCIe");
        pci->set("link_width", std::to_string(width));
        return ncclSuccess;
      }
  }
  return batonError(ncclInvalidArgument, "topoToXml: %s %s: PCI link of %g GB/s is no PCIe width x speed",
                    nodeTypeName(n.type), n.busId.c_str(), bw);
}

struct Writer {
  const TopoSystem& sys;
  std::vector<char> written;

  double linkBw(int from, int to, LinkType t) const {
    for (const TopoLink& l : sys.nodes[from].links)
      if (l.remote == to && l.type == t) return l.bw;
    return 0;
  }

  // The PCI children of n (every PCI neighbour but its parent), in node order: the order the
  // reader created them in, so reading the output back gives the same node indices.
  ncclResult_t children(int n, int parent, XmlNode* el) {
    std::vector<int> kids;
    for (const TopoLink& l : sys.nodes[n].links)
      if (l.type == LinkType::PCI && l.remote != parent && sys.nodes[l.remote].type != NodeType::CPU)
        kids.push_back(l.remote);
    std::sort(kids.begin(), kids.end());
    for (int k : kids) BATON_CHECK(child(k, n, el));
    return ncclSuccess;
  }

  ncclResult_t child(int c, int parent, XmlNode* parentEl) {
    const TopoNode& n = sys.nodes[c];
    if (written[c])
      return batonError(ncclInvalidArgument, "topoToXml: the PCI links around %s %s are not a tree",
                        nodeTypeName(n.type), n.busId.c_str());
    written[c] = 1;
    if (n.type == NodeType::NIC && n.busId.empty()) return nic(c, parentEl->add("nic"));  // hung off the CPU
    XmlNode* pci = parentEl->add("pci");
    pci->set("busid", n.busId);
    pci->set("class", n.type == NodeType::GPU ? "0x030200" : n.type == NodeType::NIC ? "0x020000" : "0x060400");
    BATON_CHECK(setPciLink(n, linkBw(c, parent, LinkType::PCI), pci));
    if (n.type == NodeType::GPU) return gpu(c, pci->add("gpu"));
    if (n.type == NodeType::NIC) return nic(c, pci->add("nic"));
    return children(c, parent, pci);
  }

  ncclResult_t gpu(int g, XmlNode* el) {
    const TopoNode& n = sys.nodes[g];
    el->set("dev", std::to_string(n.dev));
    el->set("sm", std::to_string(n.sm));
    el->set("rank", std::to_string(n.rank));
    el->set("gdr", n.gdr ? "1" : "0");
    const double perLink = nvlinkBwPerLink(n.sm);
    for (const TopoLink& l : n.links) {
      const TopoNode& r = sys.nodes[l.remote];
      if (l.type == LinkType::NVL) {
        XmlNode* nv = el->add("nvlink");
        nv->set("target", r.type == NodeType::GPU ? r.busId : kNvsTarget);
        nv->set("count", std::to_string(std::max(1L, std::lround(l.bw / perLink))));
        nv->set("tclass", r.type == NodeType::GPU ? "0x030200" : r.type == NodeType::NVS ? "0x068000" : "0x068001");
      } else if (l.type == LinkType::C2C) {
        XmlNode* c2c = el->add("c2c");
        c2c->set("bw", std::to_string(std::lround(l.bw * 1000)));  // MB/s
        c2c->set("count", "1");
      }
    }
    return ncclSuccess;
  }

  ncclResult_t nic(int c, XmlNode* el) {
    std::vector<int> nets;
    for (const TopoLink& l : sys.nodes[c].links)
      if (l.type == LinkType::NET && sys.nodes[l.remote].type == NodeType::NET) nets.push_back(l.remote);
    std::sort(nets.begin(), nets.end());
    for (int i : nets) {
      const TopoNode& n = sys.nodes[i];
      written[i] = 1;
      XmlNode* net = el->add("net");
      net->set("name", n.name);
      net->set("dev", std::to_string(n.dev));
      net->set("speed", std::to_string(std::llround(linkBw(i, c, LinkType::NET) * 8000)));  // Mb/s
      net->set("port", std::to_string(n.port));
      net->set("latency", num(n.latencyUs));
      net->set("guid", hex(n.guid));
      net->set("gdr", n.gdr ? "1" : "0");
    }
    return ncclSuccess;
  }
};

}  // namespace
}  // namespace topoxml

using namespace topoxml;

ncclResult_t topoToXml(const TopoSystem& sys, std::unique_ptr<XmlNode>* root) {
  auto top = std::make_unique<XmlNode>();
  top->name = "system";
  top->set("version", "1");
  Writer w{sys, std::vector<char>(sys.nodes.size(), 0)};
  for (int i = 0; i < (int)sys.nodes.size(); ++i) {
    const TopoNode& n = sys.nodes[i];
    if (n.host != 0 || n.type != NodeType::CPU) continue;
    XmlNode* cpu = top->add("cpu");
    cpu->set("numaid", std::to_string(n.numaId));
    if (!n.affinity.empty()) cpu->set("affinity", n.affinity);
    cpu->set("arch", n.arch);
    if (!n.vendor.empty()) cpu->set("vendor", n.vendor);
    if (!n.vendor.empty() || n.familyId || n.modelId) {
      cpu->set("familyid", std::to_string(n.familyId));
      cpu->set("modelid", std::to_string(n.modelId));
    }
    w.written[i] = 1;
    BATON_CHECK(w.children(i, -1, cpu));
  }
  for (int i = 0; i < (int)sys.nodes.size(); ++i) {
    const TopoNode& n = sys.nodes[i];
    if (n.host == 0 && n.type != NodeType::NVS && !w.written[i])
      return batonError(ncclInvalidArgument, "topoToXml: %s node %d (%s) hangs under no CPU: XML cannot place it",
                        nodeTypeName(n.type), i, n.busId.empty() ? n.name.c_str() : n.busId.c_str());
  }
  *root = std::move(top);
  return ncclSuccess;
}

}  // namespace baton

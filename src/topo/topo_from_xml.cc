// NCCL topology XML -> graph (topoFromXml), following ncclTopoGetSystemFromXml: one CPU node per
// <cpu>, a <pci> holding a <gpu> or <nic> becomes that GPU/NIC, other <pci> elements are switches,
// <net> elements are NET nodes behind their NIC, <nvlink> adds NVL links (to a GPU, the NVSwitch or
// the CPU), CPUs of a host are joined by SYS links. Validates what NCCL would trip over later:
// placement, required attributes, plausible bandwidths, a tree (no busid twice), nvlink targets.
// Multi-host replication is in topo_system.cc, the reverse direction (topoToXml) in topo_to_xml.cc.
#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "misc/debug.h"
#include "topo/topo_xml_common.h"

namespace baton {

using namespace topoxml;

namespace {

// Builds host 0 from the XML; replication to more hosts happens afterwards.
struct Builder {
  TopoSystem* sys = nullptr;
  std::map<uint64_t, int> busLine;   // busid -> line of its first <pci>: a busid twice is not a tree
  std::map<uint64_t, int> gpuByBus;  // busid -> GPU node
  std::map<int, int> netByDev, gpuByDev, cpuByNuma;
  std::vector<GpuElement> gpus;  // for the nvlink and c2c passes
  int nvs = -1;
  std::vector<std::unique_ptr<XmlNode>> completed;  // <gpu>/<nic> added to bare devices (below)

  int addNode(NodeType t, uint64_t id) {
    sys->nodes.emplace_back().type = t;
    sys->nodes.back().id = id;
    return (int)sys->nodes.size() - 1;
  }
  TopoNode& node(int i) { return sys->nodes[i]; }

  ncclResult_t cpu(const XmlNode& el);
  ncclResult_t pci(const XmlNode& el, int parent, int cpuIdx);
  ncclResult_t nic(const XmlNode& el, int nicIdx);
  ncclResult_t gpu(const XmlNode& el, int g);
  ncclResult_t nvlinks(const GpuElement& g);
  ncclResult_t c2cs(const GpuElement& g);
};

ncclResult_t linkBw(const XmlNode& el, double* bw) {
  long long width;
  BATON_CHECK(intAttr(el, "link_width", false, LLONG_MIN, LLONG_MAX, 16, &width));  // NCCL: missing = x16
  if (width < 1 || width > 32)
    return bad(el, "link_width=%lld is not a PCIe width (1..32; omit it when unknown)", width);
  // sysfs spells speeds "8.0 GT/s PCIe" (older kernels "8 GT/s"); NCCL reads anything else as Gen3.
  std::string s = el.attrOr("link_speed", "Unknown");
  int speed = -1;
  if (s.empty() || s.rfind("Unknown", 0) == 0) speed = 60;
  char* end = nullptr;
  double gts = strtod(s.c_str(), &end);
  std::string unit = end ? end : "";
  if (speed < 0 && end != s.c_str() && (unit == " GT/s" || unit == " GT/s PCIe"))
    for (const PciGen& g : kPciGens)
      if (std::fabs(gts - atof(g.gts)) < 1e-9) speed = g.speed;
  if (speed < 0) return bad(el, "link_speed=\"%s\" is not a PCIe speed (2.5 to 64.0 GT/s)", s.c_str());
  *bw = width * speed / 80.0;
  return ncclSuccess;
}

ncclResult_t Builder::cpu(const XmlNode& el) {
  long long numa, fam, model;
  BATON_CHECK(intAttr(el, "numaid", true, 0, 65535, 0, &numa));
  if (cpuByNuma.count((int)numa)) return bad(el, "numaid %lld appears twice", numa);
  const std::string arch = el.attrOr("arch", "");
  if (arch != "x86_64" && arch != "arm64" && arch != "ppc64")
    return bad(el, "arch=\"%s\" is not one of x86_64, arm64, ppc64", arch.c_str());
  BATON_CHECK(intAttr(el, "familyid", false, 0, 0xffff, 0, &fam));
  BATON_CHECK(intAttr(el, "modelid", false, 0, 0xffff, 0, &model));
  int c = addNode(NodeType::CPU, (uint64_t)numa);
  cpuByNuma[(int)numa] = c;
  node(c).numaId = (int)numa;
  node(c).arch = arch;
  node(c).vendor = el.attrOr("vendor", "");
  node(c).affinity = el.attrOr("affinity", "");
  node(c).familyId = (int)fam;
  node(c).modelId = (int)model;
  int cpuNic = -1;
  for (const auto& ch : el.children) {
    if (ch->name == "pci") {
      BATON_CHECK(pci(*ch, c, c));
    } else if (ch->name == "nic") {
      // A NIC without a PCI device (a socket interface, an unplaced port): NCCL hangs one NIC per
      // NUMA node off the CPU itself, at LOC bandwidth.
      if (cpuNic < 0) {
        cpuNic = addNode(NodeType::NIC, kCpuNicIdBit | (uint64_t)numa);
        connect(sys, c, cpuNic, LinkType::PCI, kLocBw);
        connect(sys, cpuNic, c, LinkType::PCI, kLocBw);
      }
      BATON_CHECK(nic(*ch, cpuNic));
    } else {
      return bad(*ch, "unexpected element inside <cpu> (expected <pci> or <nic>)");
    }
  }
  return ncclSuccess;
}

ncclResult_t Builder::pci(const XmlNode& el, int parent, int cpuIdx) {
  const std::string* busid = el.attr("busid");
  if (!busid) return bad(el, "missing required attribute busid");
  uint64_t bus;
  BATON_CHECK(busIdToNum(el, "busid", *busid, &bus));
  if (auto it = busLine.find(bus); it != busLine.end())
    return bad(el, "busid %s already appears at line %d: the PCI hierarchy must be a tree", busid->c_str(), it->second);
  busLine[bus] = el.line;
  long long cls;
  BATON_CHECK(intAttr(el, "class", true, 0, 0xffffff, 0, &cls));
  double bw = 0;
  BATON_CHECK(linkBw(el, &bw));
  const XmlNode *gpuEl = nullptr, *nicEl = nullptr;
  int nPci = 0;
  if (el.children.empty() && ((cls >> 16) == 0x03 || (cls >> 16) == 0x02)) {
    // A bare GPU or NIC (class 0x03 / 0x02), as in cloud providers' published files (Azure's
    // ndv4-topo.xml): NCCL completes them at run time from NVML and the net plugin; with nothing to
    // probe, baton completes them as that probe would start: a GPU numbered in file order with an
    // unknown sm (so no NVLink), a NIC with one port of unknown speed (NCCL's 10 Gb/s).
    auto& add = completed.emplace_back(std::make_unique<XmlNode>());
    add->line = el.line;
    if ((cls >> 16) == 0x03) {
      int dev = 0;
      while (gpuByDev.count(dev)) ++dev;
      add->name = "gpu", add->set("dev", std::to_string(dev)), add->set("sm", "0");
      gpuEl = add.get();
    } else {
      add->name = "nic";
      XmlNode* net = add->add("net");
      net->line = el.line;
      net->set("name", *busid), net->set("dev", std::to_string(netByDev.size()));
      nicEl = add.get();
    }
  }
  for (const auto& ch : el.children) {
    if (ch->name == "gpu" || ch->name == "nic") {
      if (gpuEl || nicEl) return bad(*ch, "a <pci> holds at most one <gpu> or <nic>");
      (ch->name == "gpu" ? gpuEl : nicEl) = ch.get();
    } else if (ch->name == "pci") {
      ++nPci;
    } else if (ch->name == "pcilink") {
      // NCCL joins the two halves of a Broadcom virtual switch with a LOC link; baton leaves them
      // apart (paths between them then go through the CPU: slower, never wrong).
    } else {
      return bad(*ch, "unexpected element inside <pci> (expected <pci>, <gpu> or <nic>)");
    }
  }
  if ((gpuEl || nicEl) && nPci) return bad(el, "a <pci> holding a <%s> cannot also hold <pci>", gpuEl ? "gpu" : "nic");
  int self = -1;
  if (gpuEl) {
    self = addNode(NodeType::GPU, bus);
    node(self).busId = *busid;
    gpuByBus[bus] = self;
    gpus.push_back(GpuElement{self, gpuEl, cpuIdx});
    BATON_CHECK(gpu(*gpuEl, self));
  } else if (nicEl) {
    self = addNode(NodeType::NIC, bus);
    node(self).busId = *busid;
    BATON_CHECK(nic(*nicEl, self));
  } else {
    // NCCL's class table: 0x03 GPU, 0x02 NIC, 0x068000 NVSwitch, 0x068001 CPU; without a <gpu>/<nic>
    // those are devices NCCL skips. Everything else (bridges, switches) is a PCI node.
    if ((cls >> 16) == 0x03 || (cls >> 16) == 0x02 || cls == 0x068000 || cls == 0x068001) {
      if (nPci) return bad(el, "class 0x%06llx is a device, not a bridge, yet holds <pci>", cls);
      return ncclSuccess;
    }
    self = addNode(NodeType::PCI, bus);
    node(self).busId = *busid;
    for (const auto& ch : el.children)
      if (ch->name == "pci") BATON_CHECK(pci(*ch, self, cpuIdx));
  }
  connect(sys, self, parent, LinkType::PCI, bw);
  connect(sys, parent, self, LinkType::PCI, bw);
  return ncclSuccess;
}

ncclResult_t Builder::gpu(const XmlNode& el, int g) {
  long long dev, sm, rank, gdr;
  BATON_CHECK(intAttr(el, "dev", true, 0, 4095, 0, &dev));
  BATON_CHECK(intAttr(el, "sm", true, 0, 999, 0, &sm));  // 0: not known (discovery without NVML)
  BATON_CHECK(intAttr(el, "rank", false, -1, 1 << 24, -1, &rank));
  BATON_CHECK(intAttr(el, "gdr", false, 0, 1, 0, &gdr));
  if (gpuByDev.count((int)dev)) return bad(el, "dev %lld appears twice", dev);
  gpuByDev[(int)dev] = g;
  node(g).dev = (int)dev;
  node(g).sm = (int)sm;
  node(g).rank = (int)rank;
  node(g).gdr = gdr != 0;
  for (const auto& ch : el.children)
    if (ch->name != "nvlink" && ch->name != "c2c")
      return bad(*ch, "unexpected element inside <gpu> (expected <nvlink> or <c2c>)");
  return ncclSuccess;
}

ncclResult_t Builder::nic(const XmlNode& el, int nicIdx) {
  for (const auto& ch : el.children) {
    const XmlNode& n = *ch;
    if (n.name != "net") return bad(n, "unexpected element inside <nic> (expected <net>)");
    const std::string* name = n.attr("name");
    if (!name || name->empty()) return bad(n, "missing required attribute name");
    long long dev, speed, port, gdr, maxconn;
    BATON_CHECK(intAttr(n, "dev", true, 0, 65535, 0, &dev));
    if (netByDev.count((int)dev)) return bad(n, "dev %lld appears twice (net %s)", dev, name->c_str());
    BATON_CHECK(intAttr(n, "speed", false, LLONG_MIN, LLONG_MAX, 0, &speed));
    // NCCL: a missing or non-positive speed (some NICs report -1) is unknown and counts as 10 Gb/s.
    if (speed < -1 || speed > kMaxNetMbps)
      return bad(n, "speed=%lld Mb/s of net %s is not plausible (0 to 10 Tb/s; omit it when unknown)", speed,
                 name->c_str());
    if (speed <= 0) speed = 10000;
    BATON_CHECK(intAttr(n, "port", false, 0, 255, 0, &port));
    BATON_CHECK(intAttr(n, "gdr", false, 0, 1, 0, &gdr));
    BATON_CHECK(intAttr(n, "maxconn", false, 1, LLONG_MAX, 1, &maxconn));
    double latency = 0;
    if (const std::string* l = n.attr("latency")) {
      char* end = nullptr;
      latency = strtod(l->c_str(), &end);
      if (l->empty() || *end || !std::isfinite(latency) || latency < 0 || latency > 1e6)
        return bad(n, "latency=\"%s\" is not a latency in microseconds", l->c_str());
    }
    uint64_t guid = (uint64_t)dev;  // NCCL's default: the dev index
    if (const std::string* gs = n.attr("guid")) {
      char* end = nullptr;
      errno = 0;
      guid = strtoull(gs->c_str(), &end, 0);
      if (gs->empty() || *end || errno || gs->find('-') != std::string::npos)
        return bad(n, "guid=\"%s\" is not a number", gs->c_str());
    }
    int net = addNode(NodeType::NET, (uint64_t)dev);
    netByDev[(int)dev] = net;
    TopoNode& t = node(net);
    t.name = *name;
    t.dev = (int)dev;
    t.port = (int)port;
    t.guid = guid;
    t.latencyUs = latency;
    t.gdr = gdr != 0;
    connect(sys, nicIdx, net, LinkType::NET, speed / 8000.0);
    connect(sys, net, nicIdx, LinkType::NET, speed / 8000.0);
  }
  return ncclSuccess;
}

// <nvlink> of one GPU, once every GPU exists (NCCL's second pass, ncclTopoAddNvLinks).
ncclResult_t Builder::nvlinks(const GpuElement& g) {
  const double perLink = nvlinkBwPerLink(node(g.node).sm);
  for (const auto& ch : g.el->children) {
    if (ch->name != "nvlink") continue;
    const XmlNode& n = *ch;
    long long count, tclass;
    BATON_CHECK(intAttr(n, "count", true, 1, 64, 0, &count));
    BATON_CHECK(intAttr(n, "tclass", true, 0, 0xffffff, 0, &tclass));
    const std::string* target = n.attr("target");  // only a GPU peer is looked up by it, as in NCCL
    const double bw = count * perLink;
    if ((tclass >> 16) == 0x03) {
      if (!target) return bad(n, "missing required attribute target (tclass 0x%06llx is a GPU)", tclass);
      uint64_t bus;
      BATON_CHECK(busIdToNum(n, "target", *target, &bus));
      if (bus == node(g.node).id) return bad(n, "target %s is the GPU itself (a cycle)", target->c_str());
      auto it = gpuByBus.find(bus);
      if (it == gpuByBus.end()) return bad(n, "target %s is not a GPU in this file", target->c_str());
      connect(sys, g.node, it->second, LinkType::NVL, bw);  // the peer's own <nvlink> adds the way back
    } else if ((tclass >> 16) == 0x06) {  // NCCL: 0x068001 is the CPU, any other bridge class the NVSwitch
      int remote = g.cpu;
      if (tclass != 0x068001) {
        if (nvs < 0) nvs = addNode(NodeType::NVS, 0);  // one NVSwitch node per host, as NCCL
        remote = nvs;
      }
      connect(sys, g.node, remote, LinkType::NVL, bw);
      connect(sys, remote, g.node, LinkType::NVL, bw);
    } else {
      return bad(n, "tclass=0x%06llx: expected a GPU (0x03xxxx), the NVSwitch (0x068000) or the CPU (0x068001)",
                 tclass);
    }
  }
  return ncclSuccess;
}

// <c2c>: a Grace-Hopper style chip-to-chip link to the GPU's own CPU; bw is MB/s per link.
ncclResult_t Builder::c2cs(const GpuElement& g) {
  for (const auto& ch : g.el->children) {
    if (ch->name != "c2c") continue;
    long long count, bw;
    BATON_CHECK(intAttr(*ch, "count", true, 1, 64, 0, &count));
    BATON_CHECK(intAttr(*ch, "bw", true, 1, 10'000'000, 0, &bw));
    connect(sys, g.node, g.cpu, LinkType::C2C, bw * count / 1000.0);
    connect(sys, g.cpu, g.node, LinkType::C2C, bw * count / 1000.0);
  }
  return ncclSuccess;
}

}  // namespace

ncclResult_t topoFromXml(const XmlNode& root, int nHosts, TopoSystem* out) {
  if (nHosts < 1 || nHosts > 256)
    return batonError(ncclInvalidArgument, "topoFromXml: nHosts %d is not in 1..256", nHosts);
  if (root.name != "system") return bad(root, "the root element must be <system>");
  if (const std::string* v = root.attr("version"); v && *v != "1")
    return bad(root, "version=\"%s\": only NCCL's topology XML version 1 is known", v->c_str());
  TopoSystem sys;
  Builder b;
  b.sys = &sys;
  for (const auto& ch : root.children) {
    if (ch->name != "cpu") return bad(*ch, "unexpected element inside <system> (expected <cpu>)");
    BATON_CHECK(b.cpu(*ch));
  }
  for (const GpuElement& g : b.gpus) BATON_CHECK(b.nvlinks(g));
  for (const GpuElement& g : b.gpus)  // a one-sided nvlink would be a path in one direction only
    for (const TopoLink& l : sys.nodes[g.node].links) {
      const TopoNode& peer = sys.nodes[l.remote];
      if (l.type == LinkType::NVL && peer.type == NodeType::GPU &&
          std::none_of(peer.links.begin(), peer.links.end(),
                       [&](const TopoLink& r) { return r.remote == g.node && r.type == LinkType::NVL; }))
        return bad(*g.el, "GPU %s has an nvlink to %s, which has none back", sys.nodes[g.node].busId.c_str(),
                   peer.busId.c_str());
    }
  for (const GpuElement& g : b.gpus) BATON_CHECK(b.c2cs(g));
  return finishSystem(std::move(sys), b.gpus, nHosts, out);
}

}  // namespace baton

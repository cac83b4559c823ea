// Building blocks of topoFromXml (topo_xml_common.h): errors that name the element, strict attribute
// parsing, NCCL's bandwidth tables and link insertion; and its last steps, once one host's nodes
// exist: SYS links between its CPUs (NCCL's inter-socket bandwidth per CPU model), NCCL's link
// order, rank numbering, and replication into `nHosts` identical hosts whose NET nodes are joined
// rail by rail (NET i of every host to NET i of every other host), the rail-optimized fabric NCCL's
// multi-node rings assume.
#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "misc/debug.h"
#include "topo/topo_xml_common.h"

namespace baton {
namespace topoxml {

ncclResult_t bad(const XmlNode& el, const char* fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return batonError(ncclInvalidArgument, "topology XML line %d: <%s>: %s", el.line, el.name.c_str(), msg);
}

ncclResult_t intAttr(const XmlNode& el, const char* key, bool required, long long lo, long long hi, long long dflt,
                     long long* out) {
  const std::string* v = el.attr(key);
  if (!v) {
    if (required) return bad(el, "missing required attribute %s", key);
    *out = dflt;
    return ncclSuccess;
  }
  const char* s = v->c_str();
  char* end = nullptr;
  errno = 0;
  bool hex = v->rfind("0x", 0) == 0 || v->rfind("0X", 0) == 0;
  long long x = hex ? static_cast<long long>(strtoull(s + 2, &end, 16)) : strtoll(s, &end, 10);
  if (v->empty() || end == s || *end || errno) return bad(el, "attribute %s=\"%s\" is not an integer", key, s);
  if (x < lo || x > hi) return bad(el, "attribute %s=%lld is out of range [%lld, %lld]", key, x, lo, hi);
  *out = x;
  return ncclSuccess;
}

ncclResult_t busIdToNum(const XmlNode& el, const char* key, const std::string& s, uint64_t* num) {
  // dddd:bb:dd.f (the domain may be shorter or longer, up to 8 hex digits), hex digits only.
  unsigned dom, bus, dev, fn;
  int n = -1;
  if (sscanf(s.c_str(), "%8x:%2x:%2x.%1x%n", &dom, &bus, &dev, &fn, &n) != 4 || n != (int)s.size() ||
      s.find_first_of(" +-xX") != std::string::npos)
    return bad(el, "%s=\"%s\" is not a PCI bus id (dddd:bb:dd.f)", key, s.c_str());
  *num = (uint64_t)dom << 20 | bus << 12 | dev << 4 | fn;  // NCCL's busIdToInt64, hex digits concatenated
  return ncclSuccess;
}

double nvlinkBwPerLink(int sm) {  // ncclTopoNVLinkBw; an unknown capability counts as sm80, as NCCL does
  if (sm >= 100) return 40.1;
  if (sm == 86) return 12.0;
  if (sm >= 90) return 20.6;
  if (sm >= 80) return 20.0;
  if (sm >= 70) return 20.0;
  if (sm >= 60) return 18.0;
  return 20.0;
}

const PciGen kPciGens[kNumPciGens] = {{"2.5", 15},   {"5.0", 30},   {"8.0", 60},
                                      {"16.0", 120}, {"32.0", 240}, {"64.0", 480}};

int connect(TopoSystem* sys, int a, int b, LinkType type, double bw) {
  // ncclTopoConnectNodes: a second link of the same type to the same node adds up; links stay
  // sorted by bandwidth, fastest first (stable), so traversal tries NVLink before PCIe.
  std::vector<TopoLink>& links = sys->nodes[a].links;
  size_t i = 0;
  while (i < links.size() && !(links[i].remote == b && links[i].type == type)) ++i;
  if (i == links.size()) links.push_back(TopoLink{type, 0, b});
  links[i].bw += bw;
  for (; i > 0 && links[i - 1].bw < links[i].bw; --i) std::swap(links[i - 1], links[i]);
  return (int)i;
}

namespace {

double interCpuBw(const TopoNode& c) {  // ncclTopoGetInterCpuBw, GB/s
  if (c.arch == "ppc64") return 32.0;   // POWER9
  if (c.arch == "arm64") return 6.0;
  if (c.vendor == "GenuineIntel") {
    if (c.familyId == 6 && c.modelId >= 0xCF) return 40.0;  // Emerald Rapids
    if (c.familyId == 6 && c.modelId >= 0x8F) return 22.0;  // Sapphire Rapids
    if (c.familyId == 6 && c.modelId >= 0x55) return 10.0;  // Skylake
    return 6.0;                                             // Broadwell QPI
  }
  if (c.vendor == "AuthenticAMD") return 16.0;
  if (c.vendor == "CentaurHauls" || c.vendor == "  Shanghai  ")  // Zhaoxin (Yongfeng: 9)
    return c.familyId == 7 && c.modelId == 0x5B ? 9.0 : 6.0;
  return kLocBw;  // an x86 CPU of unknown vendor: NCCL does not limit it
}

// ncclTopoSort: below a CPU, each node's link towards the CPU goes last, so that walks that follow
// links in order go down the PCI tree before going up.
void sortUplinks(TopoSystem* sys, int n, int up) {
  std::vector<TopoLink>& links = sys->nodes[n].links;
  if (up >= 0) {
    auto it = std::find_if(links.begin(), links.end(),
                           [&](const TopoLink& l) { return l.remote == up && l.type == LinkType::PCI; });
    if (it != links.end()) std::rotate(it, it + 1, links.end());
  }
  for (size_t l = 0; l < links.size(); ++l)
    if (links[l].type == LinkType::PCI && links[l].remote != up) sortUplinks(sys, links[l].remote, n);
}

// Host-local rank order: by the rank attribute where given (discovery writes -1 for "not yet
// known"), the others after them by CUDA device index.
ncclResult_t numberRanks(TopoSystem* sys, const std::vector<GpuElement>& gpus, std::vector<int>* order) {
  std::vector<GpuElement> sorted = gpus;
  auto key = [&](const GpuElement& g) {
    const TopoNode& n = sys->nodes[g.node];
    return std::make_pair(n.rank >= 0 ? n.rank : INT_MAX, n.dev);
  };
  std::stable_sort(sorted.begin(), sorted.end(),
                   [&](const GpuElement& a, const GpuElement& b) { return key(a) < key(b); });
  for (size_t i = 1; i < sorted.size(); ++i) {
    const TopoNode &p = sys->nodes[sorted[i - 1].node], &n = sys->nodes[sorted[i].node];
    if (n.rank >= 0 && n.rank == p.rank)
      return bad(*sorted[i].el, "rank %d is also the rank of GPU %s (dev %d)", n.rank, p.busId.c_str(), p.dev);
  }
  order->clear();
  for (size_t i = 0; i < sorted.size(); ++i) {
    sys->nodes[sorted[i].node].rank = (int)i;
    order->push_back(sorted[i].node);
  }
  return ncclSuccess;
}

}  // namespace

ncclResult_t finishSystem(TopoSystem&& h0, const std::vector<GpuElement>& gpus, int nHosts, TopoSystem* out) {
  std::vector<int> cpus;
  for (int i = 0; i < (int)h0.nodes.size(); ++i)
    if (h0.nodes[i].type == NodeType::CPU) cpus.push_back(i);
  for (int a : cpus)  // ncclTopoConnectCpus: every pair, at the bandwidth of the sending socket
    for (int b : cpus)
      if (a != b) connect(&h0, a, b, LinkType::SYS, interCpuBw(h0.nodes[a]));
  for (int c : cpus) sortUplinks(&h0, c, -1);
  std::vector<int> order;
  BATON_CHECK(numberRanks(&h0, gpus, &order));

  const int n0 = (int)h0.nodes.size(), g0 = (int)order.size();
  TopoSystem sys;
  sys.nHosts = nHosts;
  sys.nodes.reserve((size_t)n0 * nHosts);
  for (int h = 0; h < nHosts; ++h) {
    for (const TopoNode& src : h0.nodes) {
      TopoNode n = src;
      n.host = h;
      n.id |= (uint64_t)h << 56;
      if (n.rank >= 0) n.rank += h * g0;
      for (TopoLink& l : n.links) l.remote += h * n0;
      sys.nodes.push_back(std::move(n));
    }
    for (int g : order) sys.rankNode.push_back(h * n0 + g);
  }
  for (int i = 0; i < n0 && nHosts > 1; ++i) {
    if (h0.nodes[i].type != NodeType::NET) continue;
    double bw = 0;  // the port speed, carried by its NIC<->NET link
    for (const TopoLink& l : h0.nodes[i].links)
      if (l.type == LinkType::NET) bw = std::max(bw, l.bw);
    for (int h = 0; h < nHosts; ++h)
      for (int h2 = 0; h2 < nHosts; ++h2)
        if (h2 != h) connect(&sys, h * n0 + i, h2 * n0 + i, LinkType::NET, bw);
  }
  *out = std::move(sys);
  return ncclSuccess;
}

}  // namespace topoxml
}  // namespace baton

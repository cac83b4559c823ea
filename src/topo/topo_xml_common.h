// Internal to src/topo: what the XML reader (topo_from_xml.cc), the system finisher
// (topo_system.cc) and the writer (topo_to_xml.cc) share: error reporting that names the element
// and line, strict attribute parsing, NCCL's bandwidth tables, and NCCL's link insertion rule.
#pragma once

#include <cstdint>
#include <vector>

#include "topo/topo.h"

namespace baton {
namespace topoxml {

constexpr uint64_t kCpuNicIdBit = 1ull << 55;          // local id of a NIC hung off a CPU: no bus id reaches bit 55
constexpr long long kMaxNetMbps = 10'000'000;          // 10 Tb/s: more than that in a file is a typo
constexpr const char* kNvsTarget = "fffffff:ffff:ff";  // what NCCL writes as the target of NVSwitch links

// sysfs spells PCIe speeds "<gts> GT/s PCIe"; NCCL keeps a per-lane speed in 100 Mb/s units and
// computes a link's GB/s as width * speed / 80.
struct PciGen {
  const char* gts;
  int speed;
};
constexpr int kNumPciGens = 6;
extern const PciGen kPciGens[kNumPciGens];

// A <gpu> and where it sits, for the passes that run once every node exists.
struct GpuElement {
  int node;
  const XmlNode* el;
  int cpu;  // the CPU node it hangs under
};

// batonError(ncclInvalidArgument, "topology XML line L: <name>: ...").
ncclResult_t bad(const XmlNode& el, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
// Integer attribute (decimal, or hex with 0x) within [lo, hi]; `dflt` when absent and not required.
ncclResult_t intAttr(const XmlNode& el, const char* key, bool required, long long lo, long long hi, long long dflt,
                     long long* out);
// "dddd:bb:dd.f" -> NCCL's numeric bus id (the hex digits concatenated).
ncclResult_t busIdToNum(const XmlNode& el, const char* key, const std::string& s, uint64_t* num);
double nvlinkBwPerLink(int sm);  // GB/s per NVLink, NCCL's table by compute capability
// ncclTopoConnectNodes: adds bw to a's link of that type to b (creating it), keeps a's links sorted
// by bandwidth, fastest first. Returns the link's index.
int connect(TopoSystem* sys, int a, int b, LinkType type, double bw);

// topo_system.cc: joins CPUs by SYS links, orders PCI links as NCCL does, numbers the ranks,
// replicates host 0 `nHosts` times and joins the hosts' NET nodes rail by rail.
ncclResult_t finishSystem(TopoSystem&& host0, const std::vector<GpuElement>& gpus, int nHosts, TopoSystem* out);

}  // namespace topoxml
}  // namespace baton

// Topology discovery, hwloc part: one <cpu> per NUMA node and, under each, the PCI branches that
// lead to a GPU or a NIC, the way NCCL's sysfs walk lays them out (src/graph/xml.cc). hwloc is used
// instead of walking sysfs by hand because it already knows which NUMA node a host bridge hangs
// from, which PCI functions are bridges, and which network interfaces sit on which function.
#include <hwloc.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "misc/debug.h"
#include "topo/discover_detail.h"

namespace baton {
namespace discover {
namespace {

using PciAttr = hwloc_obj_attr_u::hwloc_pcidev_attr_s;

std::string busIdOf(const PciAttr& p) {
  char b[32];
  snprintf(b, sizeof b, "%04x:%02x:%02x.%01x", p.domain, p.bus, p.dev, p.func);
  return b;
}

const PciAttr* pciAttr(hwloc_obj_t o) {
  if (o->type == HWLOC_OBJ_PCI_DEVICE) return &o->attr->pcidev;
  if (o->type == HWLOC_OBJ_BRIDGE && o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI)
    return &o->attr->bridge.upstream.pci;
  return nullptr;  // a host bridge: hwloc's stand-in for the root complex, not a PCI function
}

bool isNvidiaGpu(hwloc_obj_t o) {
  return o->type == HWLOC_OBJ_PCI_DEVICE && (o->attr->pcidev.class_id >> 8) == 0x03 &&
         o->attr->pcidev.vendor_id == 0x10de;
}

// "00000003" or "ffffffff,ffffffff": 32-bit words, most significant first, as sysfs cpumap (and
// therefore NCCL's affinity attribute) prints them. `words` keeps all nodes the same width.
std::string cpumask(hwloc_const_bitmap_t set, int words) {
  std::string s;
  for (int w = words - 1; w >= 0; --w) {
    unsigned long v = hwloc_bitmap_to_ith_ulong(set, w / (sizeof(unsigned long) / 4));
    if (sizeof(unsigned long) == 8) v = (w & 1) ? v >> 32 : v & 0xffffffffUL;
    char b[24];
    snprintf(b, sizeof b, "%s%08lx", s.empty() ? "" : ",", v);
    s += b;
  }
  return s;
}

class Builder {
 public:
  Builder(hwloc_topology_t t, const std::vector<NetDevice>& rdma, LocalMachine* m) : topo_(t), rdma_(rdma), m_(m) {}
  ncclResult_t run();

 private:
  void addCpus();
  void numberDevices();
  void walkNormal(hwloc_obj_t o);
  XmlNode* cpuFor(hwloc_obj_t normal, hwloc_obj_t hostBridge);
  bool relevant(hwloc_obj_t o);
  void emit(hwloc_obj_t o, XmlNode* parent);
  void addNets(hwloc_obj_t pci, const std::string& busId, XmlNode* pciNode);

  hwloc_topology_t topo_;
  const std::vector<NetDevice>& rdma_;
  LocalMachine* m_;
  std::map<int, XmlNode*> cpuByNuma_;
  std::map<std::string, GpuInfo> nvml_, gpus_;  // NVML's view; the index and sm each GPU gets
  std::map<std::string, NetDevice> sockets_;    // interface name -> socket net
  std::set<std::string> placedRdma_;            // bus ids whose RDMA ports found their PCI node
  int pciSeen_ = 0, pciKept_ = 0;
};

void Builder::addCpus() {
  XmlNode* sys = m_->system.get();
  hwloc_obj_t root = hwloc_get_root_obj(topo_);
  const char* arch = topoArchName(hwloc_obj_get_info_by_name(root, "Architecture"));
  int last = std::max(0, hwloc_bitmap_last(root->complete_cpuset));
  int words = last / 32 + 1;
  m_->numaOfCpu.assign(last + 1, -1);
  std::vector<hwloc_obj_t> numas;
  for (hwloc_obj_t n = nullptr; (n = hwloc_get_next_obj_by_type(topo_, HWLOC_OBJ_NUMANODE, n));) numas.push_back(n);
  std::sort(numas.begin(), numas.end(), [](hwloc_obj_t a, hwloc_obj_t b) { return a->os_index < b->os_index; });
  if (numas.empty()) addNote(&m_->notes, "hwloc: no NUMA node reported: one cpu numaid 0 for the whole machine");
  for (size_t i = 0; i < std::max<size_t>(1, numas.size()); ++i) {
    hwloc_obj_t numa = numas.empty() ? nullptr : numas[i];
    hwloc_const_bitmap_t cpus = numa ? numa->complete_cpuset : root->complete_cpuset;
    int numaId = numa ? static_cast<int>(numa->os_index) : 0;
    // Vendor and model are per package; a NUMA node without CPUs (HBM, CXL memory) takes package 0's.
    hwloc_obj_t pkg = nullptr;
    int first = hwloc_bitmap_first(cpus);
    if (hwloc_obj_t pu = first >= 0 ? hwloc_get_pu_obj_by_os_index(topo_, first) : nullptr)
      pkg = hwloc_get_ancestor_obj_by_type(topo_, HWLOC_OBJ_PACKAGE, pu);
    if (!pkg) pkg = hwloc_get_obj_by_type(topo_, HWLOC_OBJ_PACKAGE, 0);
    XmlNode* cpu = sys->add("cpu");
    cpu->set("numaid", std::to_string(numaId));
    cpu->set("affinity", cpumask(cpus, words));
    cpu->set("arch", arch);
    const char* vendor = pkg ? hwloc_obj_get_info_by_name(pkg, "CPUVendor") : nullptr;
    const char* family = pkg ? hwloc_obj_get_info_by_name(pkg, "CPUFamilyNumber") : nullptr;
    const char* model = pkg ? hwloc_obj_get_info_by_name(pkg, "CPUModelNumber") : nullptr;
    if (vendor) cpu->set("vendor", vendor);
    if (family) cpu->set("familyid", family);
    if (model) cpu->set("modelid", model);
    cpu->set("host_hash", hexAttr(hostHash()));
    cpuByNuma_[numaId] = cpu;
    char list[256];
    hwloc_bitmap_list_snprintf(list, sizeof list, cpus);
    const char* name = pkg ? hwloc_obj_get_info_by_name(pkg, "CPUModel") : nullptr;
    addNote(&m_->notes, "cpu numaid " + std::to_string(numaId) + ": CPUs " + (list[0] ? list : "none") + ", " +
                            (vendor ? vendor : "unknown vendor") + (family ? std::string(" family ") + family : "") +
                            (model ? std::string(" model ") + model : "") +
                            (name ? std::string(" (") + name + ")" : ""));
    for (int c = hwloc_bitmap_first(cpus); c >= 0; c = hwloc_bitmap_next(cpus, c))
      if (c <= last) m_->numaOfCpu[c] = numaId;
  }
}

// GPU indices follow NVML (CUDA's PCI order) when it answered, else bus order; socket nets are
// numbered after the RDMA ports so every net of the system has its own dev.
void Builder::numberDevices() {
  std::vector<std::string> gpus;
  for (hwloc_obj_t o = nullptr; (o = hwloc_get_next_pcidev(topo_, o));) {
    ++pciSeen_;
    if (isNvidiaGpu(o)) gpus.push_back(busIdOf(o->attr->pcidev));
  }
  for (hwloc_obj_t o = nullptr; (o = hwloc_get_next_bridge(topo_, o));) pciSeen_ += pciAttr(o) != nullptr;
  std::sort(gpus.begin(), gpus.end());
  addNote(&m_->notes, "GPUs: " + std::to_string(gpus.size()) + " NVIDIA (PCI class 0x03, vendor 0x10de)");
  probeNvml(!gpus.empty(), &nvml_, &m_->notes);
  for (size_t i = 0; i < gpus.size(); ++i) {
    auto it = nvml_.find(gpus[i]);
    gpus_[gpus[i]] = it != nvml_.end() ? it->second : GpuInfo{static_cast<int>(i), 0};
    if (it == nvml_.end())
      addNote(&m_->notes, "GPU " + gpus[i] + ": dev " + std::to_string(i) + " by bus order, sm=\"0\" (no NVML)");
  }
  int dev = static_cast<int>(rdma_.size());
  for (hwloc_obj_t o = nullptr; (o = hwloc_get_next_osdev(topo_, o));) {
    if (o->attr->osdev.type != HWLOC_OBJ_OSDEV_NETWORK || !o->name) continue;
    NetDevice d;
    d.name = o->name;
    d.dev = dev++;
    d.guid = static_cast<uint64_t>(d.dev);  // NCCL's socket plugin reports its device index as guid
    std::string speed = readSysFile("/sys/class/net/" + d.name + "/speed");
    int mbps = speed.empty() ? -1 : atoi(speed.c_str());
    if (mbps > 0) d.speedMbps = mbps;
    addNote(&m_->notes,
            "socket net " + d.name + ": " + std::to_string(d.speedMbps) + " Mb/s" +
                (mbps > 0 ? "" : " (speed unknown: '" + speed + "' in /sys/class/net/" + d.name + "/speed)"));
    sockets_[d.name] = d;
  }
}

XmlNode* Builder::cpuFor(hwloc_obj_t normal, hwloc_obj_t hostBridge) {
  hwloc_const_bitmap_t ns = normal->nodeset;
  int first = ns ? hwloc_bitmap_first(ns) : -1;
  auto it = cpuByNuma_.find(first);
  if (it == cpuByNuma_.end()) it = cpuByNuma_.begin();
  if (ns && hwloc_bitmap_weight(ns) > 1) {
    char b[64] = "";
    if (const PciAttr* p = hostBridge->io_first_child ? pciAttr(hostBridge->io_first_child) : nullptr)
      snprintf(b, sizeof b, " (first device %s)", busIdOf(*p).c_str());
    addNote(&m_->notes, std::string("PCI host bridge") + b + " spans several NUMA nodes: attached to numaid " +
                            std::to_string(it->first));
  }
  return it->second;
}

bool Builder::relevant(hwloc_obj_t o) {
  if (o->type == HWLOC_OBJ_OS_DEVICE) return o->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK;
  if (isNvidiaGpu(o)) return true;
  if (const PciAttr* p = pciAttr(o))
    for (const NetDevice& d : rdma_)
      if (d.busId == busIdOf(*p)) return true;
  for (hwloc_obj_t c = o->io_first_child; c; c = c->next_sibling)
    if (relevant(c)) return true;
  return false;
}

void Builder::addNets(hwloc_obj_t pci, const std::string& busId, XmlNode* pciNode) {
  XmlNode* nic = nullptr;
  for (const NetDevice& d : rdma_)
    if (d.busId == busId) {
      if (!nic) nic = pciNode->add("nic");
      appendNet(nic, d);
      placedRdma_.insert(busId);
    }
  for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling) {
    if (c->type != HWLOC_OBJ_OS_DEVICE || c->attr->osdev.type != HWLOC_OBJ_OSDEV_NETWORK || !c->name) continue;
    if (!nic) nic = pciNode->add("nic");
    appendNet(nic, sockets_[c->name]);
  }
}

void Builder::emit(hwloc_obj_t o, XmlNode* parent) {
  if (o->type == HWLOC_OBJ_OS_DEVICE || !relevant(o)) return;
  const PciAttr* p = pciAttr(o);
  if (!p) {  // host bridge: its children hang directly from the cpu, as in NCCL's files
    for (hwloc_obj_t c = o->io_first_child; c; c = c->next_sibling) emit(c, parent);
    return;
  }
  ++pciKept_;
  std::string busId = busIdOf(*p);
  XmlNode* pci = parent->add("pci");
  pci->set("busid", busId);
  std::string cls = readSysFile("/sys/bus/pci/devices/" + busId + "/class");  // with the prog-if byte
  pci->set("class", cls.empty() ? hexAttr(static_cast<uint64_t>(p->class_id) << 8, 6) : cls);
  pci->set("vendor", hexAttr(p->vendor_id, 4));
  pci->set("device", hexAttr(p->device_id, 4));
  pci->set("subsystem_vendor", hexAttr(p->subvendor_id, 4));
  pci->set("subsystem_device", hexAttr(p->subdevice_id, 4));
  setPciLink(pci, busId);
  if (isNvidiaGpu(o)) {
    const GpuInfo& g = gpus_[busId];
    XmlNode* gpu = pci->add("gpu");
    gpu->set("dev", std::to_string(g.index));
    gpu->set("sm", std::to_string(g.sm));
    gpu->set("rank", "-1");  // filled in by the communicator that owns the GPU
    gpu->set("gdr", "0");
  }
  addNets(o, busId, pci);
  for (hwloc_obj_t c = o->io_first_child; c; c = c->next_sibling) emit(c, pci);
}

// I/O trees hang from normal objects (machine, package, group); find every one of them.
void Builder::walkNormal(hwloc_obj_t o) {
  for (hwloc_obj_t io = o->io_first_child; io; io = io->next_sibling)
    if (relevant(io)) emit(io, cpuFor(o, io));
  for (hwloc_obj_t c = o->first_child; c; c = c->next_sibling) walkNormal(c);
}

ncclResult_t Builder::run() {
  m_->system = std::make_unique<XmlNode>();
  m_->system->name = "system";
  m_->system->set("version", "1");
  hwloc_obj_t root = hwloc_get_root_obj(topo_);
  const char* ver = hwloc_obj_get_info_by_name(root, "hwlocVersion");
  int nNuma = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_NUMANODE);
  int nPkg = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_PACKAGE);
  int nCore = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_CORE);
  int nPu = hwloc_get_nbobjs_by_type(topo_, HWLOC_OBJ_PU);
  auto plural = [](int n, const char* w) { return std::to_string(n) + " " + w + (n == 1 ? "" : "s"); };
  addNote(&m_->notes, std::string("hwloc ") + (ver ? ver : HWLOC_VERSION) + ": " + plural(nNuma, "NUMA node") + ", " +
                          plural(nPkg, "package") + ", " + plural(nCore, "core") + ", " + plural(nPu, "PU"));
  addCpus();
  numberDevices();
  walkNormal(root);
  // An RDMA port whose PCI function hwloc did not show (filtered, or a soft device): NCCL's rule
  // for a network path it cannot place is to attach it to the first CPU.
  XmlNode* orphanNic = nullptr;
  for (const NetDevice& d : rdma_) {
    if (placedRdma_.count(d.busId)) continue;
    if (!orphanNic) orphanNic = cpuByNuma_.begin()->second->add("nic");
    appendNet(orphanNic, d);
    addNote(&m_->notes, "libibverbs: " + d.name + " not on a PCI device hwloc shows: attached to the first cpu");
  }
  addNote(&m_->notes, "PCI: " + std::to_string(pciKept_) + " of " + std::to_string(pciSeen_) +
                          " functions kept (GPU and NIC branches; hwloc lists only GPUs, NICs, storage and bridges)");
  addNote(&m_->notes, "socket nets: interfaces on PCI only (lo, bridges, tunnels are not devices)");
  return ncclSuccess;
}

}  // namespace

ncclResult_t buildFromHwloc(const std::vector<NetDevice>& rdma, LocalMachine* machine) {
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0)
    return batonError(ncclSystemError, "topology discovery: hwloc_topology_init failed");
  // "Important" I/O objects: bridges leading somewhere, GPUs, NICs, storage; enough and cheaper.
  hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  // hwloc's Linux backend reads the PCI tree from sysfs by itself. The libpciaccess plugin ("pci")
  // would only repeat that, and leaks (LeakSanitizer fails sanitizer test runs on it); the OpenCL and
  // GL plugins would initialise drivers or open an X display. None of them adds a GPU or NIC.
  for (const char* plugin : {"pci", "opencl", "gl"})
    hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, plugin);
  if (hwloc_topology_load(topo) != 0) {
    hwloc_topology_destroy(topo);
    return batonError(ncclSystemError, "topology discovery: hwloc_topology_load failed");
  }
  Builder b(topo, rdma, machine);
  ncclResult_t r = b.run();
  hwloc_topology_destroy(topo);
  return r;
}

}  // namespace discover
}  // namespace baton

// Topology discovery entry points: the process-wide cache of this machine's <system> tree, the
// fallback when hwloc cannot load a topology, the NUMA node of the calling thread, and the small
// sysfs/format helpers the discovery files share.
#include "topo/discover.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "misc/debug.h"
#include "misc/param.h"
#include "topo/discover_detail.h"

namespace baton {
namespace discover {

std::string readSysFile(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  if (!f || !std::getline(f, line)) return "";
  while (!line.empty() && isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  return line;
}

std::string normalizeBusId(const std::string& busId) {
  unsigned d = 0, b, s, f;
  char out[32];
  if (sscanf(busId.c_str(), "%x:%x:%x.%x", &d, &b, &s, &f) == 4 ||
      (d = 0, sscanf(busId.c_str(), "%x:%x.%x", &b, &s, &f) == 3)) {
    snprintf(out, sizeof out, "%04x:%02x:%02x.%x", d & 0xffff, b & 0xff, s & 0x1f, f & 0x7);
    return out;
  }
  return busId;
}

std::string hexAttr(uint64_t v, int width) {
  char b[32];
  snprintf(b, sizeof b, "0x%0*llx", width, static_cast<unsigned long long>(v));
  return b;
}

// The same identity init.cc hashes for PeerInfo::hostHash (FNV-1a of NCCL_HOSTID, else of the host
// name and the boot id), so cpu host_hash attributes and peer records agree.
// NCCL's link_speed/link_width: the lower of the device's and its upstream port's maximum, read
// from sysfs (hwloc only has the current, negotiated speed). Absent on emulated devices (virtio).
void setPciLink(XmlNode* pci, const std::string& busId) {
  std::string dev = "/sys/bus/pci/devices/" + busId;
  std::string speed = readSysFile(dev + "/max_link_speed"), upSpeed = readSysFile(dev + "/../max_link_speed");
  std::string width = readSysFile(dev + "/max_link_width"), upWidth = readSysFile(dev + "/../max_link_width");
  if (!upSpeed.empty() && (speed.empty() || atof(upSpeed.c_str()) < atof(speed.c_str()))) speed = upSpeed;
  if (!upWidth.empty() && (width.empty() || atoi(upWidth.c_str()) < atoi(width.c_str()))) width = upWidth;
  if (!speed.empty()) pci->set("link_speed", speed);
  if (atoi(width.c_str()) > 0) pci->set("link_width", width);  // some devices report 0: unknown
}

const char* topoArchName(const char* hw) {
  std::string a = hw ? hw : "";
  if (a == "aarch64" || a == "arm64") return "arm64";
  if (a.rfind("ppc64", 0) == 0) return "ppc64";
  if (a == "x86_64") return "x86_64";
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "arm64";
#else
  return "ppc64";
#endif
}

void appendNet(XmlNode* nic, const NetDevice& d) {
  XmlNode* net = nic->add("net");
  net->set("name", d.name);
  net->set("dev", std::to_string(d.dev));
  net->set("speed", std::to_string(d.speedMbps));
  net->set("port", std::to_string(d.port));
  net->set("guid", hexAttr(d.guid));
  net->set("latency", "0");
  net->set("gdr", "0");  // host-memory transports: no GPUDirect RDMA
  net->set("maxconn", std::to_string(d.maxConn));
}

void addNote(std::string* notes, const std::string& line) {
  if (!notes) return;
  notes->append(line);
  notes->push_back('\n');
}

// Without hwloc's view: one cpu holding every configured CPU, RDMA ports attached to it.
void buildFallback(const std::vector<NetDevice>& rdma, LocalMachine* m) {
  m->system = std::make_unique<XmlNode>();
  m->system->name = "system";
  m->system->set("version", "1");
  long n = std::max(1L, sysconf(_SC_NPROCESSORS_CONF));
  std::string mask;
  for (long w = (n - 1) / 32; w >= 0; --w) {
    long bits = std::min(32L, n - 32 * w);
    char b[24];
    unsigned word = bits == 32 ? 0xffffffffu : (1u << bits) - 1;
    snprintf(b, sizeof b, "%s%08x", mask.empty() ? "" : ",", word);
    mask += b;
  }
  XmlNode* cpu = m->system->add("cpu");
  cpu->set("numaid", "0");
  cpu->set("affinity", mask);
  cpu->set("arch", topoArchName(nullptr));
  cpu->set("host_hash", hexAttr(hostHash()));
  m->numaOfCpu.assign(n, 0);
  if (!rdma.empty()) {
    XmlNode* nic = cpu->add("nic");
    for (const NetDevice& d : rdma) appendNet(nic, d);
  }
  addNote(&m->notes, "hwloc: topology unavailable (" + std::string(lastError()) + "): one cpu numaid 0 with " +
                         std::to_string(n) + " CPUs, no PCI tree");
}

namespace {

LocalMachine discoverOnce() {
  LocalMachine m;
  std::vector<NetDevice> rdma;
  std::string ibNotes;
  probeIbverbs(&rdma, &ibNotes);
  if (buildFromHwloc(rdma, &m) != ncclSuccess) {
    m = LocalMachine{};
    buildFallback(rdma, &m);
  }
  m.notes += ibNotes;
  // One INFO line per note, each with the prefix every other line has (a block of bare lines reads
  // as output of some other program).
  for (size_t at = 0; at < m.notes.size();) {
    const size_t end = std::min(m.notes.find('\n', at), m.notes.size());
    if (end > at) BATON_INFO(kSubGraph | kSubInit, "topology discovery: %.*s", (int)(end - at), m.notes.c_str() + at);
    at = end + 1;
  }
  return m;
}

// Built on first use; C++ guarantees one initialisation even when threads race to it.
const LocalMachine& localMachine() {
  static const LocalMachine m = discoverOnce();
  return m;
}

}  // namespace
}  // namespace discover

ncclResult_t topoDiscoverLocal(std::unique_ptr<XmlNode>* system, std::string* notes) {
  if (!system) return batonError(ncclInvalidArgument, "topoDiscoverLocal: system is null");
  const discover::LocalMachine& m = discover::localMachine();
  *system = topoXmlClone(*m.system);
  if (notes) *notes = m.notes;
  return ncclSuccess;
}

int topoLocalNumaOfThisThread() {
  const std::vector<int>& numaOf = discover::localMachine().numaOfCpu;
  auto lookup = [&](int cpu) { return cpu >= 0 && cpu < static_cast<int>(numaOf.size()) ? numaOf[cpu] : -1; };
  // A thread pinned inside one NUMA node stays there; its current CPU would only be a snapshot.
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int numa = -2;
    for (int c = 0; c < CPU_SETSIZE && numa != -1; ++c)
      if (CPU_ISSET(c, &set)) {
        int n = lookup(c);
        numa = (numa == -2 || numa == n) ? n : -1;
      }
    if (numa >= 0) return numa;
  }
  int n = lookup(sched_getcpu());
  return n >= 0 ? n : 0;
}

}  // namespace baton

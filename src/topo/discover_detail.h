// Internal pieces of topology discovery (discover*.cc), shared between the hwloc walk, the
// ibverbs and NVML probes and the process-wide cache. Not part of the topology API.
#pragma once

#include "bootstrap/host_identity.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "nccl.h"
#include "xml.h"

namespace baton {
namespace discover {

// One network device as NCCL's net plugins would report it: an RDMA port (libibverbs) or an
// Ethernet interface that the socket transport would use.
struct NetDevice {
  std::string name;   // "mlx5_0" or "eth0"
  std::string busId;  // "0000:17:00.0", empty when not on PCI
  int dev = 0;        // index among the nets of the system: RDMA ports first, then interfaces
  int port = 0;       // RDMA port number (1-based); 0 for an interface
  uint64_t guid = 0;
  int speedMbps = 10000;
  int maxConn = 65536;
  bool rdma = false;
};

// What NVML says about one GPU, keyed by bus id.
struct GpuInfo {
  int index = -1;  // NVML's (= CUDA's PCI-order) device index
  int sm = 0;      // compute capability major*10 + minor
};

// Everything the cache keeps about the machine.
struct LocalMachine {
  std::unique_ptr<XmlNode> system;
  std::string notes;
  std::vector<int> numaOfCpu;  // OS CPU index -> numaid (-1: unknown)
};

// RDMA ports in ACTIVE state, numbered from 0 in device-list order. Appends notes.
void probeIbverbs(std::vector<NetDevice>* out, std::string* notes);
// NVML via dlopen; leaves `out` empty (and says why) when the library is absent. With `anyGpu`
// false (no NVIDIA GPU on PCI) it only says whether the library exists.
void probeNvml(bool anyGpu, std::map<std::string, GpuInfo>* out, std::string* notes);
// hwloc topology -> <system> tree (cpu nodes, trimmed PCI tree, GPUs, NICs), using the RDMA ports
// found before. Fills machine->system, numaOfCpu and appends to notes.
ncclResult_t buildFromHwloc(const std::vector<NetDevice>& rdma, LocalMachine* machine);
// When hwloc cannot load a topology: one cpu numaid 0 holding every configured CPU, the RDMA
// ports attached to it, no PCI tree.
void buildFallback(const std::vector<NetDevice>& rdma, LocalMachine* machine);

// Shared helpers.
std::string readSysFile(const std::string& path);      // first line, trailing space trimmed; "" if none
std::string normalizeBusId(const std::string& busId);  // "00000000:17:00.0" -> "0000:17:00.0"
std::string hexAttr(uint64_t v, int width = 0);        // "0x10de"
// link_speed / link_width attributes of a PCI element, from sysfs; left out when sysfs has none.
void setPciLink(XmlNode* pci, const std::string& busId);
// <net name dev speed port guid latency gdr maxconn/> under `nic`, NCCL's attribute set.
void appendNet(XmlNode* nic, const NetDevice& d);
// NCCL's arch names (x86_64, arm64, ppc64) from hwloc's Architecture, else the build target.
const char* topoArchName(const char* hwlocArch);
void addNote(std::string* notes, const std::string& line);

}  // namespace discover
}  // namespace baton

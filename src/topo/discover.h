// Topology discovery of the local machine into NCCL's topology XML (as NCCL's
// src/graph/xml.cc writes it), and the fusion of several ranks' views of one host.
//
// Sources: hwloc (NUMA nodes, CPU vendor/model, the PCI tree and the network interfaces it sees),
// libibverbs (RDMA devices and their active ports) and, when the driver is installed, NVML through
// dlopen (GPU index and compute capability). A missing source is skipped and said so in `notes`;
// discovery itself only fails on a broken tree, never because the machine lacks a device.
//
// The result looks like:
//   <system version="1">
//     <cpu numaid="0" affinity="00000003" arch="x86_64" vendor="AuthenticAMD" familyid="26"
//          modelid="2" host_hash="0x...">
//       <pci busid="0000:00:03.0" class="0x020000" vendor="0x1af4" device="0x1041" ...>
//         <nic><net name="eth0" dev="0" speed="10000" port="0" .../></nic>
//       </pci>
//     </cpu>
//   </system>
// Only PCI branches that lead to a GPU or a NIC are kept (as NCCL trims), every NUMA node is kept.
#pragma once

#include <memory>
#include <string>

#include "nccl.h"
#include "xml.h"

namespace baton {

// A fresh copy of this machine's <system> tree. Discovery runs once per process (it costs tens of
// milliseconds and communicators are created often); every call returns its own copy, which the
// caller may edit (gpu rank attributes) and fuse. `notes` (may be null) gets one human-readable
// line per finding or skipped source, e.g. "libibverbs: 0 RDMA devices". Thread-safe.
ncclResult_t topoDiscoverLocal(std::unique_ptr<XmlNode>* system, std::string* notes);

// The NUMA node (hwloc's OS index, as in the cpu numaid attribute) the calling thread runs on: the
// node holding all the CPUs it may run on, else the node of the CPU it is on right now; 0 when
// unknown. This is where a CPU rank's buffers live.
int topoLocalNumaOfThisThread();

// Merges `other` into `into`, both <system> trees of one host, as NCCL's ncclTopoFuseXml: a child
// matching one of `into` (cpu by numaid and host_hash, pci by busid, gpu/nic by element, net by
// name and port, nvlink by target, anything else by all attributes) is merged recursively, others
// are copied in. Attributes missing in `into` are taken from `other`; a gpu's rank="-1" takes the
// other's rank, and two different ranks on one GPU (baton allows several ranks per device) keep the
// lowest in rank and list all in ranks="1,3".
ncclResult_t topoFuseXml(XmlNode* into, const XmlNode& other);

// A deep copy of a tree (XmlNode owns its children through unique_ptr, so it has no copy).
std::unique_ptr<XmlNode> topoXmlClone(const XmlNode& node);

}  // namespace baton

// Topology discovery on machines the tests cannot run on, and the fusion of ranks' views: the tree
// builder fed a two-socket hwloc XML (HWLOC_XMLFILE) with GPUs, a PCIe switch, a ConnectX NIC and
// fake RDMA ports; topoFuseXml merging cpus by numaid, PCI by busid, and combining GPU ranks.
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "misc/debug.h"
#include "topo/discover.h"
#include "topo/discover_detail.h"
#include "unit/unit_helpers.h"
#include "unit/xml_helpers.h"

namespace {

using baton::XmlNode;

using bt::all;

// A two-socket machine as hwloc XML (read through HWLOC_XMLFILE), 20 CPUs per socket so affinity
// masks span two words: socket 0 has a PCIe switch with a GPU and a ConnectX NIC, and an NVMe drive
// (to be trimmed); socket 1 has a GPU on its root port. Domain 00fe so no real sysfs entry matches.
std::string twoSocketHwlocXml() {
  auto set = [](int lo, int hi) {
    unsigned w[2] = {0, 0};
    for (int c = lo; c <= hi; ++c) w[c / 32] |= 1u << (c % 32);
    char b[32];
    snprintf(b, sizeof b, "0x%08x,0x%08x", w[1], w[0]);
    return std::string(b);
  };
  auto obj = [](const std::string& type, int os, const std::string& cpus, const std::string& nodes) {
    return "<object type=\"" + type + "\" os_index=\"" + std::to_string(os) + "\" cpuset=\"" + cpus +
           "\" complete_cpuset=\"" + cpus + "\" nodeset=\"" + nodes + "\" complete_nodeset=\"" + nodes + "\"";
  };
  std::string x =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
      "<topology version=\"2.0\">\n" +
      obj("Machine", 0, set(0, 39), "0x3") + " allowed_cpuset=\"" + set(0, 39) +
      "\" allowed_nodeset=\"0x3\">\n"
      "<info name=\"Architecture\" value=\"x86_64\"/>\n";
  for (int p = 0; p < 2; ++p) {
    std::string ns = p == 0 ? "0x1" : "0x2";
    x += obj("Package", p, set(20 * p, 20 * p + 19), ns) +
         ">\n<info name=\"CPUVendor\" value=\"GenuineIntel\"/>"
         "<info name=\"CPUFamilyNumber\" value=\"6\"/><info name=\"CPUModelNumber\" value=\"143\"/>\n";
    x += obj("NUMANode", p, set(20 * p, 20 * p + 19), ns) + " local_memory=\"1073741824\"/>\n";
    for (int c = 20 * p; c < 20 * p + 20; ++c)
      x += obj("Core", c, set(c, c), ns) + ">" + obj("PU", c, set(c, c), ns) + "/></object>\n";
    if (p == 0)
      x += "<object type=\"Bridge\" bridge_type=\"0-1\" depth=\"0\" bridge_pci=\"00fe:[17-20]\">\n"
           " <object type=\"Bridge\" pci_busid=\"00fe:17:00.0\" pci_type=\"0604 [1000:c030] [1000:a064] b0\""
           " bridge_type=\"1-1\" depth=\"1\" bridge_pci=\"00fe:[18-19]\">\n"
           "  <object type=\"PCIDev\" pci_busid=\"00fe:18:00.0\" pci_type=\"0302 [10de:2330] [10de:16c1] a1\"/>\n"
           "  <object type=\"PCIDev\" pci_busid=\"00fe:19:00.0\" pci_type=\"0207 [15b3:1021] [15b3:0041] 00\">"
           "<object type=\"OSDev\" name=\"fakenet0\" osdev_type=\"2\"/></object>\n"
           " </object>\n"
           " <object type=\"PCIDev\" pci_busid=\"00fe:20:00.0\" pci_type=\"0108 [144d:a80a] [144d:a801] 00\"/>\n"
           "</object>\n";
    else
      x += "<object type=\"Bridge\" bridge_type=\"0-1\" depth=\"0\" bridge_pci=\"00fe:[91-91]\">\n"
           " <object type=\"PCIDev\" pci_busid=\"00fe:91:00.0\" pci_type=\"0302 [10de:2330] [10de:16c1] a1\"/>\n"
           "</object>\n";
    x += "</object>\n";
  }
  return x + "</object>\n</topology>\n";
}

const XmlNode* pciAt(const XmlNode& sys, const std::string& bus) {
  for (const XmlNode* p : all(sys, "pci"))
    if (p->attrOr("busid", "") == bus) return p;
  return nullptr;
}

// The tree builder on a machine this test cannot have: NUMA nodes, nesting, GPUs, RDMA placement,
// trimming and net numbering. Calls the builder directly, around the process-wide cache.
TEST(TopoDiscoverFixture, TwoSocketMachine) {
  char path[] = "/tmp/baton_topo_fixture_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << twoSocketHwlocXml();
  baton::discover::LocalMachine m;
  std::vector<baton::discover::NetDevice> rdma(2);
  rdma[0].name = "mlx5_0", rdma[0].busId = "00fe:19:00.0", rdma[0].dev = 0, rdma[0].port = 1;
  rdma[1].name = "mlx5_9", rdma[1].busId = "00fe:aa:00.0", rdma[1].dev = 1, rdma[1].port = 1;  // hwloc never saw it
  for (auto& d : rdma) d.rdma = true, d.maxConn = 131072, d.speedMbps = 200000, d.guid = 0x1234;
  ncclResult_t r;
  {
    bt::ScopedEnv xml("HWLOC_XMLFILE", path);
    r = baton::discover::buildFromHwloc(rdma, &m);
  }
  unlink(path);
  ASSERT_EQ(r, ncclSuccess);
  const XmlNode& sys = *m.system;
  SCOPED_TRACE(baton::xmlWrite(sys) + m.notes);
  auto cpus = all(sys, "cpu");
  ASSERT_EQ(cpus.size(), 2u);
  EXPECT_EQ(cpus[0]->attrOr("numaid", ""), "0");
  EXPECT_EQ(cpus[0]->attrOr("affinity", ""), "00000000,000fffff");
  EXPECT_EQ(cpus[1]->attrOr("affinity", ""), "000000ff,fff00000");
  EXPECT_EQ(cpus[1]->attrOr("vendor", ""), "GenuineIntel");
  EXPECT_EQ(cpus[1]->attrOr("modelid", ""), "143");
  ASSERT_GE(m.numaOfCpu.size(), 40u);
  EXPECT_EQ(m.numaOfCpu[5], 0);
  EXPECT_EQ(m.numaOfCpu[25], 1);
  // Socket 0: switch > {GPU, NIC}; the host bridge itself is not an element; NVMe trimmed.
  const XmlNode* sw = pciAt(sys, "00fe:17:00.0");
  ASSERT_TRUE(sw);
  EXPECT_EQ(sw->parent, cpus[0]);
  EXPECT_EQ(sw->attrOr("class", ""), "0x060400");
  const XmlNode* gpu0 = pciAt(sys, "00fe:18:00.0");
  ASSERT_TRUE(gpu0 && gpu0->child("gpu"));
  EXPECT_EQ(gpu0->parent, sw);
  EXPECT_EQ(gpu0->attrOr("class", ""), "0x030200");
  EXPECT_EQ(gpu0->child("gpu")->attrOr("dev", ""), "0");
  EXPECT_EQ(pciAt(sys, "00fe:20:00.0"), nullptr) << "storage branch kept";
  const XmlNode* nicPci = pciAt(sys, "00fe:19:00.0");
  ASSERT_TRUE(nicPci && nicPci->child("nic"));
  const XmlNode* nic = nicPci->child("nic");
  ASSERT_EQ(nic->children.size(), 2u);
  EXPECT_EQ(nic->children[0]->attrOr("name", ""), "mlx5_0");
  EXPECT_EQ(nic->children[0]->attrOr("port", ""), "1");
  EXPECT_EQ(nic->children[0]->attrOr("speed", ""), "200000");
  EXPECT_EQ(nic->children[1]->attrOr("name", ""), "fakenet0");
  EXPECT_EQ(nic->children[1]->attrOr("dev", ""), "2") << "socket nets are numbered after RDMA ports";
  // Socket 1: its GPU directly under its cpu, second in bus order.
  const XmlNode* gpu1 = pciAt(sys, "00fe:91:00.0");
  ASSERT_TRUE(gpu1 && gpu1->child("gpu"));
  EXPECT_EQ(gpu1->parent, cpus[1]);
  EXPECT_EQ(gpu1->child("gpu")->attrOr("dev", ""), "1");
  // The RDMA port hwloc did not show hangs from the first cpu, as NCCL attaches unplaceable nets.
  const XmlNode* orphan = cpus[0]->child("nic");
  ASSERT_TRUE(orphan && orphan->child("net"));
  EXPECT_EQ(orphan->child("net")->attrOr("name", ""), "mlx5_9");
  EXPECT_TRUE(bt::messageHas(m.notes, {"2 NUMA nodes", "GPUs: 2", "mlx5_9", "4 of 5"}));
}

// Without hwloc: one cpu that covers this process's CPUs, the RDMA ports hanging from it.
TEST(TopoDiscoverFixture, FallbackWithoutHwloc) {
  baton::discover::LocalMachine m;
  std::vector<baton::discover::NetDevice> rdma(1);
  rdma[0].name = "mlx5_0", rdma[0].port = 1, rdma[0].rdma = true;
  baton::discover::buildFallback(rdma, &m);
  ASSERT_TRUE(m.system);
  SCOPED_TRACE(baton::xmlWrite(*m.system) + m.notes);
  auto cpus = all(*m.system, "cpu");
  ASSERT_EQ(cpus.size(), 1u);
  EXPECT_EQ(cpus[0]->attrOr("numaid", ""), "0");
  std::string mask = cpus[0]->attrOr("affinity", "");
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    size_t word = cpu / 32, words = (mask.size() + 1) / 9;  // "xxxxxxxx" words joined by ','
    ASSERT_LT(word, words) << "CPU " << cpu;
    unsigned long v = strtoul(mask.substr(9 * (words - 1 - word), 8).c_str(), nullptr, 16);
    EXPECT_TRUE(v >> (cpu % 32) & 1) << "CPU " << cpu << " not in " << mask;
    EXPECT_EQ(m.numaOfCpu.at(cpu), 0);
  }
  ASSERT_TRUE(cpus[0]->child("nic") && cpus[0]->child("nic")->child("net"));
  EXPECT_EQ(cpus[0]->child("nic")->child("net")->attrOr("name", ""), "mlx5_0");
  EXPECT_TRUE(bt::messageHas(m.notes, {"hwloc: topology unavailable"}));
}

// Two ranks of one host, each with its own GPU under a shared switch, plus one GPU both see.
std::unique_ptr<XmlNode> rankView(const char* gpuBus, int dev, int rank, const char* sm) {
  auto sys = std::make_unique<XmlNode>();
  sys->name = "system";
  sys->set("version", "1");
  XmlNode* cpu = sys->add("cpu");
  cpu->set("numaid", "0");
  cpu->set("affinity", "0000ffff");
  XmlNode* sw = cpu->add("pci");
  sw->set("busid", "0000:10:00.0");
  sw->set("class", "0x060400");
  XmlNode* pci = sw->add("pci");
  pci->set("busid", gpuBus);
  pci->set("class", "0x030200");
  XmlNode* gpu = pci->add("gpu");
  gpu->set("dev", std::to_string(dev));
  gpu->set("sm", sm);
  gpu->set("rank", std::to_string(rank));
  gpu->set("gdr", "0");
  XmlNode* nic = cpu->add("nic");
  XmlNode* net = nic->add("net");
  net->set("name", "eth0");
  net->set("dev", "0");
  net->set("port", "0");
  return sys;
}

const XmlNode* gpuAt(const XmlNode& sys, const std::string& bus) {
  for (const XmlNode* p : all(sys, "pci"))
    if (p->attrOr("busid", "") == bus) return p->child("gpu");
  return nullptr;
}

TEST(TopoFuse, KeepsBothRanksGpus) {
  auto into = rankView("0000:11:00.0", 0, 0, "90");
  auto other = rankView("0000:12:00.0", 1, 1, "90");
  ASSERT_EQ(baton::topoFuseXml(into.get(), *other), ncclSuccess);
  EXPECT_EQ(all(*into, "cpu").size(), 1u) << baton::xmlWrite(*into);
  EXPECT_EQ(all(*into, "pci").size(), 3u) << "one switch, two GPUs\n" << baton::xmlWrite(*into);
  EXPECT_EQ(all(*into, "net").size(), 1u) << "eth0 seen by both ranks is one net";
  ASSERT_TRUE(gpuAt(*into, "0000:11:00.0") && gpuAt(*into, "0000:12:00.0"));
  EXPECT_EQ(gpuAt(*into, "0000:11:00.0")->attrOr("rank", ""), "0");
  EXPECT_EQ(gpuAt(*into, "0000:12:00.0")->attrOr("rank", ""), "1");
  for (const XmlNode* p : all(*into, "pci"))
    for (const auto& c : p->children) EXPECT_EQ(c->parent, p);
}

TEST(TopoFuse, CombinesRanksOfOneGpu) {
  auto into = rankView("0000:11:00.0", 0, -1, "0");  // a view without NVML and without a rank
  ASSERT_EQ(baton::topoFuseXml(into.get(), *rankView("0000:11:00.0", 0, 3, "90")), ncclSuccess);
  const XmlNode* g = gpuAt(*into, "0000:11:00.0");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->attrOr("rank", ""), "3");
  EXPECT_EQ(g->attrOr("sm", ""), "90");
  EXPECT_EQ(g->attr("ranks"), nullptr);
  // baton allows several ranks per GPU: the lowest is rank, all are listed.
  ASSERT_EQ(baton::topoFuseXml(into.get(), *rankView("0000:11:00.0", 0, 1, "90")), ncclSuccess);
  EXPECT_EQ(g->attrOr("rank", ""), "1");
  EXPECT_EQ(g->attrOr("ranks", ""), "1,3");
  EXPECT_EQ(all(*into, "gpu").size(), 1u);
}

TEST(TopoFuse, KeepsDistinctNumaNodesAndRejectsNonSystem) {
  auto into = rankView("0000:11:00.0", 0, 0, "90");
  auto other = rankView("0000:91:00.0", 1, 1, "90");
  other->children[0]->set("numaid", "1");
  ASSERT_EQ(baton::topoFuseXml(into.get(), *other), ncclSuccess);
  EXPECT_EQ(all(*into, "cpu").size(), 2u);
  XmlNode notSystem;
  notSystem.name = "cpu";
  EXPECT_EQ(baton::topoFuseXml(into.get(), notSystem), ncclInvalidArgument);
  EXPECT_TRUE(bt::messageHas(baton::lastError(), {"<system>", "<cpu>"}));
}

}  // namespace

// Paths (src/topo/topo_paths.cc) on the fixtures in tests/topo/fixtures: NCCL's path types between
// GPUs and from GPUs to NICs (PIX, PXB, PHB, SYS, NVL through the NVSwitch, NVB through one GPU,
// NET between hosts), bottleneck bandwidths, hop lists that really connect the two ends, the
// maxBw/totalBw the search starts from, CPU ranks, and the type names.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "misc/debug.h"
#include "topo/topo.h"
#include "topo/xml.h"

namespace {

using namespace baton;

TopoSystem loadFixture(const char* name, int nHosts = 1) {
  std::unique_ptr<XmlNode> root;
  TopoSystem sys;
  EXPECT_EQ(xmlLoadFile(std::string("tests/topo/fixtures/") + name + ".xml", &root), ncclSuccess) << lastError();
  if (root) {
    EXPECT_EQ(topoFromXml(*root, nHosts, &sys), ncclSuccess) << lastError();
  }
  topoComputePaths(&sys);
  return sys;
}

TopoSystem loadText(const std::string& text, int nHosts = 1) {
  std::unique_ptr<XmlNode> root;
  TopoSystem sys;
  EXPECT_EQ(xmlParse(text, "t.xml", &root), ncclSuccess) << lastError();
  if (root) {
    EXPECT_EQ(topoFromXml(*root, nHosts, &sys), ncclSuccess) << lastError();
  }
  topoComputePaths(&sys);
  return sys;
}

// The index of the node of `type` on `host` whose busId (or, for NET, name) is `key`.
int find(const TopoSystem& sys, NodeType type, const std::string& key, int host = 0) {
  for (int i = 0; i < (int)sys.nodes.size(); ++i) {
    const TopoNode& n = sys.nodes[i];
    if (n.type == type && n.host == host && (n.busId == key || n.name == key)) return i;
  }
  ADD_FAILURE() << "no " << nodeTypeName(type) << " " << key << " on host " << host;
  return 0;
}

#define EXPECT_PATH(sys, a, b, ptype, pbw)                                                       \
  do {                                                                                           \
    const TopoPath& p_ = (sys).path((a), (b));                                                   \
    EXPECT_STREQ(pathTypeName(p_.type), pathTypeName(ptype)) << "path " << (a) << " -> " << (b); \
    EXPECT_NEAR(p_.bw, (pbw), 1e-9) << "path " << (a) << " -> " << (b);                          \
  } while (0)

// Every path: LOC to itself; otherwise hops that start at a, follow real links and end at b, a
// bandwidth equal to the narrowest link crossed and a type no better than any link crossed
// (a NET link within a host counts as nothing, as in NCCL).
void expectWellFormed(const TopoSystem& sys, bool allConnectedWithinHost) {
  const int n = (int)sys.nodes.size();
  ASSERT_EQ((int)sys.paths.size(), n);
  for (int a = 0; a < n; ++a) {
    ASSERT_EQ((int)sys.paths[a].size(), n);
    for (int b = 0; b < n; ++b) {
      const TopoPath& p = sys.path(a, b);
      SCOPED_TRACE(std::to_string(a) + " -> " + std::to_string(b));
      if (a == b) {
        EXPECT_EQ(p.type, PathType::LOC);
        EXPECT_EQ(p.bw, kLocBw);
        EXPECT_TRUE(p.hops.empty());
        continue;
      }
      if (p.type == PathType::DIS) {
        EXPECT_TRUE(p.hops.empty());
        EXPECT_EQ(p.bw, 0);
        // NCCL's one exception: a GPU relays only NVLink to a GPU, so an NVSwitch reaches nothing
        // but GPUs, and nothing but GPUs reaches it.
        const bool nvs = sys.nodes[a].type == NodeType::NVS || sys.nodes[b].type == NodeType::NVS;
        EXPECT_FALSE(allConnectedWithinHost && !nvs && sys.nodes[a].host == sys.nodes[b].host);
        continue;
      }
      ASSERT_FALSE(p.hops.empty());
      EXPECT_EQ(p.hops.front().node, a);
      double bw = kLocBw;
      int worst = 0, at = a;
      for (const TopoPath::Hop& h : p.hops) {
        ASSERT_EQ(h.node, at);
        ASSERT_GE(h.link, 0);
        ASSERT_LT(h.link, (int)sys.nodes[at].links.size());
        const TopoLink& l = sys.nodes[at].links[h.link];
        bw = std::min(bw, l.bw);
        bool localNet = l.type == LinkType::NET && sys.nodes[l.remote].host == sys.nodes[at].host;
        if (!localNet) worst = std::max(worst, static_cast<int>(l.type));
        at = l.remote;
      }
      EXPECT_EQ(at, b);
      EXPECT_EQ(p.bw, bw);
      EXPECT_GE(static_cast<int>(p.type), worst);
      EXPECT_EQ(p.type == PathType::NET, sys.nodes[a].host != sys.nodes[b].host);
    }
  }
}

TEST(TopoPaths, TypeNames) {
  const char* nodes[] = {"GPU", "PCI", "NVS", "CPU", "NIC", "NET"};
  for (int i = 0; i < 6; ++i) EXPECT_STREQ(nodeTypeName(static_cast<NodeType>(i)), nodes[i]);
  const char* paths[] = {"LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS", "NET", "DIS"};
  for (int i = 0; i < 12; ++i) EXPECT_STREQ(pathTypeName(static_cast<PathType>(i)), paths[i]);
  EXPECT_STREQ(linkTypeName(LinkType::LOC), "LOC");
  EXPECT_STREQ(linkTypeName(LinkType::NVL), "NVL");
  EXPECT_STREQ(linkTypeName(LinkType::C2C), "C2C");
  EXPECT_STREQ(linkTypeName(LinkType::PCI), "PCI");
  EXPECT_STREQ(linkTypeName(LinkType::SYS), "SYS");
  EXPECT_STREQ(linkTypeName(LinkType::NET), "NET");
}

TEST(TopoPaths, LaptopOneGpu) {
  TopoSystem sys = loadFixture("laptop");
  expectWellFormed(sys, true);
  ASSERT_EQ(sys.rankNode.size(), 1u);
  const int gpu = sys.rankNode[0], cpu = find(sys, NodeType::CPU, "");
  EXPECT_PATH(sys, gpu, cpu, PathType::PHB, 12.0);  // Gen4 x8, through the host bridge
  EXPECT_PATH(sys, gpu, gpu, PathType::LOC, kLocBw);
  EXPECT_EQ(sys.maxBw, kLocBw);  // NCCL: a lone GPU
  EXPECT_EQ(sys.totalBw, kLocBw);
}

TEST(TopoPaths, TwoSocketPcieSwitches) {
  TopoSystem sys = loadFixture("two-socket");
  expectWellFormed(sys, true);
  auto gpu = [&](int r) { return sys.rankNode[r]; };
  EXPECT_PATH(sys, gpu(0), gpu(1), PathType::PIX, 12.0);  // one switch
  EXPECT_EQ(sys.path(gpu(0), gpu(1)).hops.size(), 2u);
  EXPECT_PATH(sys, gpu(6), gpu(7), PathType::PIX, 12.0);
  EXPECT_PATH(sys, gpu(0), gpu(2), PathType::PXB, 12.0);  // two switches under a common one
  EXPECT_EQ(sys.path(gpu(0), gpu(2)).hops.size(), 4u);
  EXPECT_PATH(sys, gpu(3), gpu(1), PathType::PXB, 12.0);
  EXPECT_PATH(sys, gpu(4), gpu(6), PathType::PHB, 12.0);  // two switches, joined at the CPU
  EXPECT_PATH(sys, gpu(7), gpu(5), PathType::PHB, 12.0);
  for (int a = 0; a < 4; ++a)  // across the sockets: SYS, Skylake UPI 10 GB/s
    for (int b = 4; b < 8; ++b) {
      EXPECT_PATH(sys, gpu(a), gpu(b), PathType::SYS, 10.0);
      EXPECT_PATH(sys, gpu(b), gpu(a), PathType::SYS, 10.0);
    }
  const int net0 = find(sys, NodeType::NET, "mlx5_0"), net1 = find(sys, NodeType::NET, "mlx5_1");
  EXPECT_PATH(sys, gpu(0), net0, PathType::PXB, 12.0);
  EXPECT_PATH(sys, gpu(2), find(sys, NodeType::NIC, "0000:19:00.0"), PathType::PXB, 12.0);
  EXPECT_PATH(sys, gpu(4), net1, PathType::PHB, 12.0);
  EXPECT_PATH(sys, gpu(0), net1, PathType::SYS, 10.0);
  EXPECT_PATH(sys, net0, gpu(0), PathType::PXB, 12.0);
  EXPECT_EQ(sys.maxBw, 12.0);
  EXPECT_EQ(sys.totalBw, 12.0);
}

TEST(TopoPaths, DgxH100NvSwitch) {
  TopoSystem sys = loadFixture("dgx-h100");
  expectWellFormed(sys, true);
  ASSERT_EQ(sys.rankNode.size(), 8u);
  const int nvs = find(sys, NodeType::NVS, "");
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b) {
      if (a == b) continue;
      const TopoPath& p = sys.rankPath(a, b);
      EXPECT_EQ(p.type, PathType::NVL) << a << " -> " << b;  // GPU-NVS-GPU is NVL for NCCL
      EXPECT_NEAR(p.bw, 18 * 20.6, 1e-9);
      ASSERT_EQ(p.hops.size(), 2u);
      EXPECT_EQ(p.hops[1].node, nvs);
    }
  for (int r = 0; r < 8; ++r) {  // each GPU shares its Gen5 switch with its NIC
    const std::string name = "mlx5_" + std::to_string(r);
    const int net = find(sys, NodeType::NET, name);
    EXPECT_PATH(sys, sys.rankNode[r], net, PathType::PIX, 48.0);
    EXPECT_PATH(sys, net, sys.rankNode[r], PathType::PIX, 48.0);
    EXPECT_EQ(sys.path(sys.rankNode[r], net).hops.size(), 3u);
  }
  EXPECT_PATH(sys, sys.rankNode[0], find(sys, NodeType::NET, "mlx5_1"), PathType::PHB, 48.0);
  EXPECT_PATH(sys, sys.rankNode[0], find(sys, NodeType::NET, "mlx5_4"), PathType::SYS, 22.0);  // Sapphire Rapids UPI
  EXPECT_NEAR(sys.maxBw, 370.8, 1e-9);
  EXPECT_NEAR(sys.totalBw, 370.8, 1e-9);
}

TEST(TopoPaths, ClusterOfTwoHostsGoesThroughTheNetwork) {
  TopoSystem sys = loadFixture("cluster-node", 2);
  expectWellFormed(sys, true);
  ASSERT_EQ(sys.rankNode.size(), 8u);
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b) {
      if (a == b) continue;
      SCOPED_TRACE(std::to_string(a) + " -> " + std::to_string(b));
      const TopoPath& p = sys.rankPath(a, b);
      if (a / 4 == b / 4) {
        EXPECT_EQ(p.type, PathType::NVL);  // NVLink all-to-all, 4 links of 20 GB/s
        EXPECT_NEAR(p.bw, 80.0, 1e-9);
        EXPECT_EQ(p.hops.size(), 1u);
      } else {
        EXPECT_EQ(p.type, PathType::NET);
        EXPECT_NEAR(p.bw, 100000 / 8000.0, 1e-9);  // the HDR100 port, narrower than PCIe Gen4 x16
      }
    }
  // Same rail: GPU, switch, NIC, NET, remote NET, NIC, switch, GPU.
  const TopoPath& rail = sys.rankPath(1, 5);
  ASSERT_EQ(rail.hops.size(), 7u);
  EXPECT_EQ(sys.nodes[rail.hops[3].node].name, "mlx5_1");
  EXPECT_EQ(sys.nodes[rail.hops[3].node].host, 0);
  EXPECT_EQ(sys.nodes[rail.hops[4].node].name, "mlx5_1");
  EXPECT_EQ(sys.nodes[rail.hops[4].node].host, 1);
  // Rails: NET i of host 0 is linked to NET i of host 1 only.
  for (int i = 0; i < 4; ++i) {
    const std::string name = "mlx5_" + std::to_string(i);
    const int n0 = find(sys, NodeType::NET, name, 0), n1 = find(sys, NodeType::NET, name, 1);
    EXPECT_EQ(sys.nodes[n1].id, (1ull << 56) | (uint64_t)i);
    int toRemote = 0;
    for (const TopoLink& l : sys.nodes[n0].links)
      if (sys.nodes[l.remote].host == 1) {
        ++toRemote;
        EXPECT_EQ(l.remote, n1);
        EXPECT_EQ(l.type, LinkType::NET);
        EXPECT_DOUBLE_EQ(l.bw, 12.5);
      }
    EXPECT_EQ(toRemote, 1);
    EXPECT_PATH(sys, n0, n1, PathType::NET, 12.5);
  }
  EXPECT_DOUBLE_EQ(sys.maxBw, 12.5);   // several hosts: rings cross the network
  EXPECT_DOUBLE_EQ(sys.totalBw, 240);  // three peers x 80 GB/s of NVLink
  TopoSystem one = loadFixture("cluster-node", 1);
  EXPECT_PATH(one, one.rankNode[2], find(one, NodeType::NET, "mlx5_2"), PathType::PIX, 12.5);
  EXPECT_DOUBLE_EQ(one.maxBw, 80.0);
}

TEST(TopoPaths, NvLinkThroughOneGpuIsNvbNotThroughTwo) {
  // Four GPUs in an NVLink chain A-B-C-D (2 links each, sm80: 40 GB/s), each under its own switch.
  std::string text =
      "<system version=\"1\"><cpu numaid=\"0\" arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" "
      "modelid=\"85\">\n";
  const char* bus[] = {"0000:11:00.0", "0000:21:00.0", "0000:31:00.0", "0000:41:00.0"};
  for (int g = 0; g < 4; ++g) {
    text += "<pci busid=\"0000:" + std::to_string(g + 1) + "0:00.0\" class=\"0x060400\"><pci busid=\"" + bus[g] +
            "\" class=\"0x030200\" link_speed=\"16.0 GT/s PCIe\" link_width=\"16\"><gpu dev=\"" + std::to_string(g) +
            "\" sm=\"80\">";
    for (int p : {g - 1, g + 1})
      if (p >= 0 && p < 4) text += "<nvlink target=\"" + std::string(bus[p]) + "\" count=\"2\" tclass=\"0x030200\"/>";
    text += "</gpu></pci></pci>\n";
  }
  text += "</cpu></system>\n";
  TopoSystem sys = loadText(text);
  expectWellFormed(sys, true);
  auto gpu = [&](int r) { return sys.rankNode[r]; };
  EXPECT_PATH(sys, gpu(0), gpu(1), PathType::NVL, 40.0);
  EXPECT_PATH(sys, gpu(0), gpu(2), PathType::NVB, 40.0);
  EXPECT_PATH(sys, gpu(3), gpu(1), PathType::NVB, 40.0);
  EXPECT_EQ(sys.path(gpu(0), gpu(2)).hops[1].node, gpu(1));
  EXPECT_PATH(sys, gpu(0), gpu(3), PathType::PHB, 12.0);  // two GPUs deep: PCIe through the CPU instead
  EXPECT_EQ(sys.path(gpu(0), gpu(3)).hops.size(), 4u);    // GPU, switch, CPU, switch
}

TEST(TopoPaths, CpuRanksAndDisconnectedHosts) {
  // No GPUs: no ranks until the caller places CPU ranks, then paths between those CPU nodes.
  TopoSystem sys = loadText(
      "<system version=\"1\"><cpu numaid=\"0\" arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"85\">"
      "<nic><net name=\"eth0\" dev=\"0\" speed=\"25000\"/></nic></cpu>"
      "<cpu numaid=\"1\" arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"85\"/></system>");
  expectWellFormed(sys, true);
  EXPECT_TRUE(sys.rankNode.empty());
  EXPECT_EQ(sys.maxBw, 0);
  EXPECT_EQ(sys.totalBw, 0);
  const int cpu0 = 0, eth0 = find(sys, NodeType::NET, "eth0");
  int c1 = -1;
  for (int i = 0; i < (int)sys.nodes.size(); ++i)
    if (sys.nodes[i].type == NodeType::CPU && sys.nodes[i].numaId == 1) c1 = i;
  ASSERT_GE(c1, 0);
  EXPECT_PATH(sys, cpu0, eth0, PathType::PHB, 25000 / 8000.0);  // NIC hung off the CPU at LOC bandwidth
  EXPECT_PATH(sys, c1, eth0, PathType::SYS, 25000 / 8000.0);
  sys.rankNode = {cpu0, cpu0, c1};
  topoComputePaths(&sys);
  EXPECT_PATH(sys, sys.rankNode[0], sys.rankNode[1], PathType::LOC, kLocBw);
  EXPECT_EQ(sys.rankPath(0, 2).type, PathType::SYS);
  EXPECT_DOUBLE_EQ(sys.rankPath(0, 2).bw, 10.0);
  EXPECT_EQ(sys.maxBw, kLocBw);  // two ranks share a NUMA node
  EXPECT_EQ(sys.totalBw, kLocBw);

  // Two hosts without any network device: nothing joins them.
  TopoSystem two = loadFixture("laptop", 2);
  expectWellFormed(two, true);
  ASSERT_EQ(two.rankNode.size(), 2u);
  EXPECT_EQ(two.rankPath(0, 1).type, PathType::DIS);
  EXPECT_EQ(two.maxBw, 0);
}

}  // namespace

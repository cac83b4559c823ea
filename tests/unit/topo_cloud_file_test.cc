// A cloud provider's style of topology file loads unchanged: GPUs and HCAs as bare PCI devices
// (class 0x03 / 0x02, no <gpu>/<nic> inside), as in Azure's published ndv4-topo.xml. They become
// GPUs numbered in file order with unknown sm and NICs with one port of unknown speed, and the rings
// keep each PCIe switch's GPUs together.
#include <gtest/gtest.h>

#include "misc/debug.h"
#include "topo/graph.h"
#include "topo/topo.h"

namespace {

using namespace baton;

TEST(TopoCloudFile, BarePciDevicesBecomeGpusAndNics) {
  std::unique_ptr<XmlNode> xml;
  ASSERT_EQ(xmlLoadFile("tests/topo/fixtures/cloud-ndv4-style.xml", &xml), ncclSuccess) << lastError();
  TopoSystem sys;
  ASSERT_EQ(topoFromXml(*xml, 1, &sys), ncclSuccess) << lastError();
  int count[6] = {};
  for (const TopoNode& n : sys.nodes) count[(int)n.type]++;
  EXPECT_EQ(count[(int)NodeType::GPU], 8);
  EXPECT_EQ(count[(int)NodeType::NIC], 8);
  EXPECT_EQ(count[(int)NodeType::NET], 8);
  EXPECT_EQ(count[(int)NodeType::CPU], 4);
  ASSERT_EQ(sys.rankNode.size(), 8u);
  topoComputePaths(&sys);
  EXPECT_EQ(sys.rankPath(0, 1).type, PathType::PIX);  // one PCIe switch (Gen4 x16: 24 GB/s)
  EXPECT_DOUBLE_EQ(sys.rankPath(0, 1).bw, 24.0);
  EXPECT_EQ(sys.rankPath(0, 2).type, PathType::SYS);  // another NUMA node (AMD: 16 GB/s)
  EXPECT_DOUBLE_EQ(sys.rankPath(0, 2).bw, 16.0);
  CommGraph g;
  ASSERT_EQ(searchGraph(sys, 1, 2, &g), ncclSuccess) << lastError();
  const std::vector<int>& ring = g.channels[0].ring;
  ASSERT_EQ(ring.size(), 8u);
  int crossings = 0;  // the ring leaves each NUMA node once: 4 SYS hops
  for (size_t i = 0; i < ring.size(); ++i)
    crossings += sys.rankPath(ring[i], ring[(i + 1) % ring.size()]).type == PathType::SYS;
  EXPECT_EQ(crossings, 4);
  // Written back, the completed devices read the same.
  std::unique_ptr<XmlNode> out, again;
  ASSERT_EQ(topoToXml(sys, &out), ncclSuccess) << lastError();
  ASSERT_EQ(xmlParse(xmlWrite(*out), "<written>", &again), ncclSuccess) << lastError();
  TopoSystem sys2;
  ASSERT_EQ(topoFromXml(*again, 1, &sys2), ncclSuccess) << lastError();
  EXPECT_EQ(sys2.nodes.size(), sys.nodes.size());
  EXPECT_EQ(sys2.rankNode.size(), 8u);
}

}  // namespace

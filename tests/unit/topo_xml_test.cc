// Topology XML (src/topo/xml.cc) and XML -> graph (topo_from_xml.cc, topo_system.cc,
// topo_to_xml.cc): the parser's accepted syntax and its errors (source, line, element), the
// fixtures' node counts, NCCL's validation rules with messages naming the element and attribute,
// and the round trip file -> graph -> XML -> graph that must give back the same graph and text.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "misc/debug.h"
#include "topo/topo.h"
#include "topo/xml.h"

namespace {

using namespace baton;

std::string fixture(const char* name) { return std::string("tests/topo/fixtures/") + name + ".xml"; }

::testing::AssertionResult hasAll(const std::string& msg, std::initializer_list<const char*> needles) {
  for (const char* n : needles)
    if (msg.find(n) == std::string::npos)
      return ::testing::AssertionFailure() << "message \"" << msg << "\" lacks \"" << n << "\"";
  return ::testing::AssertionSuccess();
}

// Parsing must fail with ncclInvalidArgument and a message holding every needle.
void expectParseError(const std::string& text, std::initializer_list<const char*> needles) {
  std::unique_ptr<XmlNode> root;
  EXPECT_EQ(xmlParse(text, "t.xml", &root), ncclInvalidArgument) << text;
  EXPECT_TRUE(hasAll(lastError(), needles)) << text;
}

// Wraps devices in a valid <system> with one Skylake CPU; the first line of `inner` is line 3.
std::string system1(const std::string& inner) {
  return "<system version=\"1\">\n"
         "<cpu numaid=\"0\" arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"85\">\n" +
         inner + "</cpu>\n</system>\n";
}

// topoFromXml must reject the (well-formed) text with a message holding every needle.
void expectTopoError(const std::string& text, std::initializer_list<const char*> needles) {
  std::unique_ptr<XmlNode> root;
  ASSERT_EQ(xmlParse(text, "t.xml", &root), ncclSuccess) << lastError();
  TopoSystem sys;
  EXPECT_EQ(topoFromXml(*root, 1, &sys), ncclInvalidArgument) << text;
  EXPECT_TRUE(hasAll(lastError(), needles)) << text;
}

TopoSystem topoFromText(const std::string& text, int nHosts = 1) {
  std::unique_ptr<XmlNode> root;
  TopoSystem sys;
  EXPECT_EQ(xmlParse(text, "t.xml", &root), ncclSuccess) << lastError();
  if (root) {
    EXPECT_EQ(topoFromXml(*root, nHosts, &sys), ncclSuccess) << lastError();
  }
  return sys;
}

std::map<NodeType, int> countTypes(const TopoSystem& sys, int host = 0) {
  std::map<NodeType, int> c;
  for (const TopoNode& n : sys.nodes)
    if (n.host == host) ++c[n.type];
  return c;
}

TEST(TopoXml, ParsesDeclarationCommentsQuotesAndEntities) {
  const std::string text =
      "\xEF\xBB\xBF<?xml version=\"1.0\"?>\n<!-- a comment <with> tags -->\n"
      "<system version='1'>\n  <!-- inside -->\n"
      "  <cpu numaid=\"0\" note='say \"hi\"' amp=\"a&amp;b&lt;c&gt;d&quot;e&apos;f\"/>\n"
      "  <cpu numaid = \"1\" ></cpu>\n</system>\n<!-- trailing -->\n";
  std::unique_ptr<XmlNode> root;
  ASSERT_EQ(xmlParse(text, "t.xml", &root), ncclSuccess) << lastError();
  EXPECT_EQ(root->name, "system");
  EXPECT_EQ(root->line, 3);
  ASSERT_EQ(root->children.size(), 2u);
  const XmlNode& cpu = *root->children[0];
  EXPECT_EQ(cpu.line, 5);
  EXPECT_EQ(cpu.parent, root.get());
  EXPECT_EQ(cpu.attrOr("note", ""), "say \"hi\"");
  EXPECT_EQ(cpu.attrOr("amp", ""), "a&b<c>d\"e'f");
  EXPECT_EQ(cpu.attrOr("missing", "dflt"), "dflt");
  EXPECT_EQ(cpu.attr("missing"), nullptr);
  EXPECT_EQ(*root->children[1]->attr("numaid"), "1");
  EXPECT_EQ(root->child("cpu"), &cpu);
  EXPECT_EQ(root->child("gpu"), nullptr);
}

TEST(TopoXml, WriterEscapesIndentsAndSelfCloses) {
  XmlNode root;
  root.name = "system";
  root.set("version", "1");
  XmlNode* cpu = root.add("cpu");
  cpu->set("numaid", "0");
  cpu->set("odd", "<&\"'>");
  cpu->set("numaid", "3");  // replaces in place
  cpu->add("nic");
  EXPECT_EQ(cpu->parent, &root);
  const std::string text = xmlWrite(root);
  EXPECT_EQ(
      text,
      "<system version=\"1\">\n  <cpu numaid=\"3\" odd=\"&lt;&amp;&quot;'&gt;\">\n    <nic/>\n  </cpu>\n</system>\n");
  std::unique_ptr<XmlNode> back;
  ASSERT_EQ(xmlParse(text, "w.xml", &back), ncclSuccess) << lastError();
  EXPECT_EQ(back->children[0]->attrOr("odd", ""), "<&\"'>");
  EXPECT_EQ(xmlWrite(*back), text);
}

TEST(TopoXml, MalformedTextIsRejectedWithLineAndElement) {
  expectParseError("<system>\n<cpu numaid=\"0\">\n</pci>\n</system>\n", {"t.xml:3:", "<cpu>", "</pci>", "line 2"});
  expectParseError("<system>\n<cpu numaid=\"0\">\n", {"t.xml:", "<cpu>", "never closed"});
  expectParseError("<system>\n  hello\n</system>\n", {"t.xml:2:", "<system>", "unexpected text \"hello\""});
  expectParseError("<system/>\n<system/>\n", {"t.xml:2:", "more than one root"});
  expectParseError("<system>\n<cpu>\n<gpu dev=\"0/>\n</cpu></system>\n",
                   {"t.xml:3:", "<gpu>", "unterminated attribute value"});
  expectParseError("<system a=\"1\" a=\"2\"/>", {"t.xml:1:", "<system>", "twice"});
  expectParseError("<system a=\"&nbsp;\"/>", {"<system>", "unknown entity &nbsp;"});
  expectParseError("<system a=1/>", {"<system>", "not quoted"});
  expectParseError("<system>\n<!-- open\n</system>", {"t.xml:2:", "unterminated comment"});
  expectParseError("  \n<!-- only a comment -->\n", {"no root element"});
  expectParseError("</system>", {"closing tag </system> without an open element"});
  expectParseError("<system><!DOCTYPE x></system>", {"DOCTYPE"});
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "<pci>";
  expectParseError(deep, {"t.xml:1:", "<pci>", "deeper than 64"});
}

TEST(TopoXml, LoadFileNamesPathOnErrors) {
  std::unique_ptr<XmlNode> root;
  EXPECT_NE(xmlLoadFile("tests/topo/fixtures/no-such-file.xml", &root), ncclSuccess);
  EXPECT_TRUE(hasAll(lastError(), {"no-such-file.xml"}));
  ASSERT_EQ(xmlLoadFile(fixture("laptop"), &root), ncclSuccess) << lastError();
  EXPECT_EQ(root->name, "system");
}

TEST(TopoXml, FixtureNodeCounts) {
  struct Case {
    const char* name;
    int nHosts, cpu, pci, gpu, nic, net, nvs;
  } cases[] = {
      {"laptop", 1, 1, 0, 1, 0, 0, 0},
      {"two-socket", 1, 2, 5, 8, 2, 2, 0},
      {"dgx-h100", 1, 2, 8, 8, 8, 8, 1},
      {"cluster-node", 2, 2, 4, 4, 4, 4, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::unique_ptr<XmlNode> root;
    ASSERT_EQ(xmlLoadFile(fixture(c.name), &root), ncclSuccess) << lastError();
    TopoSystem sys;
    ASSERT_EQ(topoFromXml(*root, c.nHosts, &sys), ncclSuccess) << lastError();
    EXPECT_EQ(sys.nHosts, c.nHosts);
    for (int h = 0; h < c.nHosts; ++h) {
      auto n = countTypes(sys, h);
      EXPECT_EQ(n[NodeType::CPU], c.cpu);
      EXPECT_EQ(n[NodeType::PCI], c.pci);
      EXPECT_EQ(n[NodeType::GPU], c.gpu);
      EXPECT_EQ(n[NodeType::NIC], c.nic);
      EXPECT_EQ(n[NodeType::NET], c.net);
      EXPECT_EQ(n[NodeType::NVS], c.nvs);
    }
    ASSERT_EQ((int)sys.rankNode.size(), c.gpu * c.nHosts);
    for (int r = 0; r < (int)sys.rankNode.size(); ++r) {  // host-major, by the rank attribute
      const TopoNode& g = sys.nodes[sys.rankNode[r]];
      EXPECT_EQ(g.type, NodeType::GPU);
      EXPECT_EQ(g.rank, r);
      EXPECT_EQ(g.host, r / c.gpu);
      EXPECT_EQ(g.dev, r % c.gpu);
      EXPECT_EQ(g.id >> 56, (uint64_t)g.host);
    }
  }
}

TEST(TopoXml, ConversionFollowsNccl) {
  std::unique_ptr<XmlNode> root;
  ASSERT_EQ(xmlLoadFile(fixture("dgx-h100"), &root), ncclSuccess) << lastError();
  TopoSystem sys;
  ASSERT_EQ(topoFromXml(*root, 1, &sys), ncclSuccess) << lastError();
  const TopoNode& cpu0 = sys.nodes[0];
  EXPECT_EQ(cpu0.type, NodeType::CPU);
  EXPECT_EQ(cpu0.vendor, "GenuineIntel");
  EXPECT_EQ(cpu0.modelId, 143);
  for (const TopoNode& n : sys.nodes) {
    if (n.type == NodeType::GPU) {
      EXPECT_EQ(n.sm, 90);
      EXPECT_TRUE(n.gdr);
      EXPECT_EQ(n.id,
                std::stoull(n.busId.substr(0, 4) + n.busId.substr(5, 2) + n.busId.substr(8, 2) + n.busId.substr(11, 1),
                            nullptr, 16));
      ASSERT_EQ(n.links.size(), 2u);  // NVSwitch first (fastest), PCIe uplink last
      EXPECT_EQ(n.links[0].type, LinkType::NVL);
      EXPECT_EQ(sys.nodes[n.links[0].remote].type, NodeType::NVS);
      EXPECT_NEAR(n.links[0].bw, 370.8, 1e-9);
      EXPECT_EQ(n.links[1].type, LinkType::PCI);
      EXPECT_DOUBLE_EQ(n.links[1].bw, 48.0);  // Gen5 x16
    }
    if (n.type == NodeType::NET) {
      EXPECT_EQ(n.name, "mlx5_" + std::to_string(n.dev));
      EXPECT_EQ(n.port, 1);
      ASSERT_EQ(n.links.size(), 1u);
      EXPECT_EQ(n.links[0].type, LinkType::NET);
      EXPECT_DOUBLE_EQ(n.links[0].bw, 50.0);  // 400000 Mb/s
      EXPECT_EQ(sys.nodes[n.links[0].remote].type, NodeType::NIC);
    }
    if (n.type == NodeType::CPU) {  // the other socket over UPI: Sapphire Rapids, 22 GB/s
      int sysLinks = 0;
      for (const TopoLink& l : n.links) {
        if (l.type != LinkType::SYS) continue;
        ++sysLinks;
        EXPECT_DOUBLE_EQ(l.bw, 22.0);
      }
      EXPECT_EQ(sysLinks, 1);
    }
  }
  // Inter-socket bandwidth by vendor and model; PCIe defaults; unknown net speed.
  TopoSystem two = topoFromText(
      "<system version=\"1\"><cpu numaid=\"0\" arch=\"x86_64\" vendor=\"AuthenticAMD\">"
      "<pci busid=\"0000:01:00.0\" class=\"0x060400\"><pci busid=\"0000:02:00.0\" class=\"0x020000\" link_speed=\"8 "
      "GT/s\" link_width=\"4\">"
      "<nic><net name=\"eth0\" dev=\"0\"/><net name=\"eth1\" dev=\"1\" speed=\"-1\"/></nic></pci></pci></cpu>"
      "<cpu numaid=\"1\" arch=\"x86_64\" vendor=\"AuthenticAMD\"/></system>");
  ASSERT_EQ(two.nodes.size(), 6u);                       // CPU, PCI, NIC, NET, NET, CPU
  EXPECT_EQ(two.nodes[0].links[0].type, LinkType::SYS);  // AMD sockets: 16 GB/s, faster than the Gen3 link
  EXPECT_DOUBLE_EQ(two.nodes[0].links[0].bw, 16.0);
  EXPECT_EQ(two.nodes[0].links[0].remote, 5);
  EXPECT_DOUBLE_EQ(two.nodes[1].links.back().bw, 12.0);  // no link_speed/width: Gen3 x16, as NCCL
  EXPECT_DOUBLE_EQ(two.nodes[2].links.back().bw, 3.0);   // Gen3 x4
  EXPECT_DOUBLE_EQ(two.nodes[3].links[0].bw, 1.25);      // no speed: 10 Gb/s
  EXPECT_DOUBLE_EQ(two.nodes[4].links[0].bw, 1.25);      // speed -1 (NCCL: unknown)
  EXPECT_TRUE(two.rankNode.empty());                     // no GPUs: the caller places CPU ranks
  // What NCCL's own dumps carry besides: keep/host_hash/coll attributes, Broadcom <pcilink>s.
  TopoSystem dump = topoFromText(
      system1("<pci busid=\"0000:01:00.0\" class=\"0x060400\" keep=\"1\"><pcilink target=\"0000:02:00.0\"/></pci>\n"
              "<pci busid=\"0000:02:00.0\" class=\"0x060400\"><pcilink target=\"0000:01:00.0\"/></pci>\n"
              "<nic><net name=\"ib0\" dev=\"0\" coll=\"1\" keep=\"1\"/></nic>\n"));
  EXPECT_EQ(dump.nodes.size(), 5u);  // CPU, two switches, NIC, NET
}

TEST(TopoXml, RanksFollowRankAttributeThenDev) {
  auto gpu = [](const char* bus, int dev, int rank) {
    return std::string("<pci busid=\"") + bus + "\" class=\"0x030200\"><gpu dev=\"" + std::to_string(dev) +
           "\" sm=\"80\" rank=\"" + std::to_string(rank) + "\"/></pci>\n";
  };
  // Discovery writes rank="-1" until a communicator owns the GPU: then device order.
  TopoSystem sys = topoFromText(system1(gpu("0000:01:00.0", 1, -1) + gpu("0000:02:00.0", 0, -1)), 2);
  ASSERT_EQ(sys.rankNode.size(), 4u);
  EXPECT_EQ(sys.nodes[sys.rankNode[0]].busId, "0000:02:00.0");
  EXPECT_EQ(sys.nodes[sys.rankNode[1]].busId, "0000:01:00.0");
  EXPECT_EQ(sys.hostOfRank(2), 1);
  EXPECT_EQ(sys.nodes[sys.rankNode[2]].busId, "0000:02:00.0");
  sys = topoFromText(system1(gpu("0000:01:00.0", 0, 9) + gpu("0000:02:00.0", 1, 8)));
  EXPECT_EQ(sys.nodes[sys.rankNode[0]].dev, 1);  // rank 8 before rank 9, renumbered from 0
  EXPECT_EQ(sys.nodes[sys.rankNode[0]].rank, 0);
  expectTopoError(system1(gpu("0000:01:00.0", 0, 3) + gpu("0000:02:00.0", 1, 3)), {"<gpu>", "rank 3"});
}

TEST(TopoXml, InvalidTopologiesNameTheElement) {
  const std::string gpuPci = "<pci busid=\"0000:01:00.0\" class=\"0x030200\">\n";
  expectTopoError(system1(gpuPci + "<gpu sm=\"80\"/></pci>\n"), {"line 4", "<gpu>", "dev"});
  expectTopoError(system1(gpuPci + "<gpu dev=\"0\"/></pci>\n"), {"<gpu>", "sm"});
  expectTopoError(system1("<pci class=\"0x060400\"/>\n"), {"line 3", "<pci>", "busid"});
  expectTopoError(system1("<pci busid=\"0000:zz:00.0\" class=\"0x060400\"/>\n"), {"<pci>", "busid", "0000:zz:00.0"});
  expectTopoError(system1("<pci busid=\"0000:01:00.0\"/>\n"), {"<pci>", "class"});
  expectTopoError(system1("<nic><net dev=\"0\" speed=\"100000\"/></nic>\n"), {"<net>", "name"});
  expectTopoError(system1("<nic><net name=\"ib0\" speed=\"100000\"/></nic>\n"), {"<net>", "dev"});
  // Unknown or misplaced elements.
  expectTopoError(system1("<pcie busid=\"0000:01:00.0\"/>\n"), {"line 3", "<pcie>", "<cpu>"});
  expectTopoError(system1(gpuPci + "<gpu dev=\"0\" sm=\"80\"><nvswitch/></gpu></pci>\n"), {"<nvswitch>", "<gpu>"});
  expectTopoError(system1(gpuPci + "<gpu dev=\"0\" sm=\"80\"/><nic/></pci>\n"), {"<nic>", "at most one"});
  expectTopoError(system1("<gpu dev=\"0\" sm=\"80\"/>\n"), {"<gpu>", "inside <cpu>"});
  expectTopoError("<system version=\"1\"><gpu dev=\"0\" sm=\"80\"/></system>", {"<gpu>", "inside <system>"});
  expectTopoError("<topology/>", {"<topology>", "<system>"});
  expectTopoError("<system version=\"2\"/>", {"<system>", "version"});
  // Not a tree: a link to itself, a bus id twice.
  expectTopoError(system1(gpuPci + "<gpu dev=\"0\" sm=\"80\">\n<nvlink target=\"0000:01:00.0\" count=\"4\" "
                                   "tclass=\"0x030200\"/>\n</gpu></pci>\n"),
                  {"line 5", "<nvlink>", "itself"});
  expectTopoError(system1("<pci busid=\"0000:01:00.0\" class=\"0x060400\">\n<pci busid=\"0000:01:00.0\" "
                          "class=\"0x060400\"/>\n</pci>\n"),
                  {"line 4", "<pci>", "0000:01:00.0", "line 3", "tree"});
  expectTopoError(
      system1(
          gpuPci +
          "<gpu dev=\"0\" sm=\"80\"><nvlink target=\"0000:07:00.0\" count=\"4\" tclass=\"0x030200\"/></gpu></pci>\n"),
      {"<nvlink>", "0000:07:00.0", "not a GPU"});
  expectTopoError(
      system1(gpuPci +
              "<gpu dev=\"0\" sm=\"80\"><nvlink target=\"0000:02:00.0\" count=\"4\" tclass=\"0x030200\"/></gpu></pci>\n"
              "<pci busid=\"0000:02:00.0\" class=\"0x030200\"><gpu dev=\"1\" sm=\"80\"/></pci>\n"),
      {"<gpu>", "none back"});
  expectTopoError(system1(gpuPci + "<gpu dev=\"0\" sm=\"80\"/></pci>\n<pci busid=\"0000:02:00.0\" "
                                   "class=\"0x030200\"><gpu dev=\"0\" sm=\"80\"/></pci>\n"),
                  {"<gpu>", "dev 0 appears twice"});
  // Absurd bandwidths.
  expectTopoError(system1("<pci busid=\"0000:01:00.0\" class=\"0x060400\" link_width=\"0\"/>\n"),
                  {"<pci>", "link_width"});
  expectTopoError(system1("<pci busid=\"0000:01:00.0\" class=\"0x060400\" link_width=\"64\"/>\n"),
                  {"<pci>", "link_width"});
  expectTopoError(system1("<pci busid=\"0000:01:00.0\" class=\"0x060400\" link_speed=\"-8.0 GT/s PCIe\"/>\n"),
                  {"<pci>", "link_speed"});
  expectTopoError(system1("<pci busid=\"0000:01:00.0\" class=\"0x060400\" link_speed=\"fast\"/>\n"),
                  {"<pci>", "link_speed"});
  expectTopoError(system1("<nic><net name=\"ib0\" dev=\"0\" speed=\"20000000\"/></nic>\n"), {"<net>", "speed", "ib0"});
  expectTopoError(system1("<nic><net name=\"ib0\" dev=\"0\" speed=\"-400\"/></nic>\n"), {"<net>", "speed"});
  expectTopoError(system1("<nic><net name=\"ib0\" dev=\"0\" latency=\"-1\"/></nic>\n"), {"<net>", "latency"});
  expectTopoError(system1(gpuPci + "<gpu dev=\"0\" sm=\"90\"><nvlink target=\"fffffff:ffff:ff\" count=\"0\" "
                                   "tclass=\"0x068000\"/></gpu></pci>\n"),
                  {"<nvlink>", "count"});
  expectTopoError(system1(gpuPci + "<gpu dev=\"0\" sm=\"90\"><nvlink target=\"fffffff:ffff:ff\" count=\"500\" "
                                   "tclass=\"0x068000\"/></gpu></pci>\n"),
                  {"<nvlink>", "count"});
  expectTopoError(
      system1(gpuPci + "<gpu dev=\"0\" sm=\"90\"><nvlink target=\"x\" count=\"2\" tclass=\"0x010802\"/></gpu></pci>\n"),
      {"<nvlink>", "tclass"});
  expectTopoError(system1(gpuPci + "<gpu dev=\"zero\" sm=\"90\"/></pci>\n"), {"<gpu>", "dev", "not an integer"});
  expectTopoError("<system version=\"1\"><cpu numaid=\"0\" arch=\"sparc\"/></system>", {"<cpu>", "arch"});
  expectTopoError(
      "<system version=\"1\"><cpu numaid=\"0\" arch=\"x86_64\"/><cpu numaid=\"0\" arch=\"x86_64\"/></system>",
      {"<cpu>", "numaid 0 appears twice"});
  std::unique_ptr<XmlNode> root;
  ASSERT_EQ(xmlParse("<system version=\"1\"/>", "t.xml", &root), ncclSuccess);
  TopoSystem sys;
  EXPECT_EQ(topoFromXml(*root, 0, &sys), ncclInvalidArgument);
  EXPECT_TRUE(hasAll(lastError(), {"nHosts"}));
}

void expectSameGraph(const TopoSystem& a, const TopoSystem& b) {
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  EXPECT_EQ(a.nHosts, b.nHosts);
  EXPECT_EQ(a.rankNode, b.rankNode);
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const TopoNode &x = a.nodes[i], &y = b.nodes[i];
    SCOPED_TRACE("node " + std::to_string(i));
    EXPECT_EQ(x.type, y.type);
    EXPECT_EQ(x.host, y.host);
    EXPECT_EQ(x.id, y.id);
    EXPECT_EQ(x.busId, y.busId);
    EXPECT_EQ(x.dev, y.dev);
    EXPECT_EQ(x.rank, y.rank);
    EXPECT_EQ(x.sm, y.sm);
    EXPECT_EQ(x.gdr, y.gdr);
    EXPECT_EQ(x.numaId, y.numaId);
    EXPECT_EQ(x.arch, y.arch);
    EXPECT_EQ(x.vendor, y.vendor);
    EXPECT_EQ(x.affinity, y.affinity);
    EXPECT_EQ(x.familyId, y.familyId);
    EXPECT_EQ(x.modelId, y.modelId);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.port, y.port);
    EXPECT_EQ(x.guid, y.guid);
    EXPECT_DOUBLE_EQ(x.latencyUs, y.latencyUs);
    ASSERT_EQ(x.links.size(), y.links.size());
    for (size_t l = 0; l < x.links.size(); ++l) {
      EXPECT_EQ(x.links[l].type, y.links[l].type);
      EXPECT_EQ(x.links[l].remote, y.links[l].remote);
      EXPECT_DOUBLE_EQ(x.links[l].bw, y.links[l].bw);
    }
  }
  ASSERT_EQ(a.paths.size(), b.paths.size());
  for (size_t i = 0; i < a.paths.size(); ++i)
    for (size_t j = 0; j < a.paths[i].size(); ++j) {
      const TopoPath &p = a.paths[i][j], &q = b.paths[i][j];
      EXPECT_EQ(p.type, q.type);
      EXPECT_DOUBLE_EQ(p.bw, q.bw);
      ASSERT_EQ(p.hops.size(), q.hops.size());
      for (size_t h = 0; h < p.hops.size(); ++h) {
        EXPECT_EQ(p.hops[h].node, q.hops[h].node);
        EXPECT_EQ(p.hops[h].link, q.hops[h].link);
      }
    }
  EXPECT_DOUBLE_EQ(a.maxBw, b.maxBw);
  EXPECT_DOUBLE_EQ(a.totalBw, b.totalBw);
}

// file -> graph -> XML text -> graph -> XML text: same graph, same text.
void roundTrip(const std::string& text, const std::string& source, int nHosts) {
  std::unique_ptr<XmlNode> root;
  ASSERT_EQ(xmlParse(text, source, &root), ncclSuccess) << lastError();
  TopoSystem first;
  ASSERT_EQ(topoFromXml(*root, nHosts, &first), ncclSuccess) << lastError();
  topoComputePaths(&first);
  std::unique_ptr<XmlNode> xml1;
  ASSERT_EQ(topoToXml(first, &xml1), ncclSuccess) << lastError();
  const std::string text1 = xmlWrite(*xml1);
  std::unique_ptr<XmlNode> reread;
  ASSERT_EQ(xmlParse(text1, "written", &reread), ncclSuccess) << lastError() << "\n" << text1;
  TopoSystem second;
  ASSERT_EQ(topoFromXml(*reread, nHosts, &second), ncclSuccess) << lastError() << "\n" << text1;
  topoComputePaths(&second);
  expectSameGraph(first, second);
  std::unique_ptr<XmlNode> xml2;
  ASSERT_EQ(topoToXml(second, &xml2), ncclSuccess) << lastError();
  EXPECT_EQ(xmlWrite(*xml2), text1);
}

TEST(TopoXml, RoundTripThroughGraphKeepsNodesLinksAndPaths) {
  for (auto [name, nHosts] :
       {std::pair{"laptop", 1}, {"two-socket", 1}, {"dgx-h100", 1}, {"cluster-node", 1}, {"cluster-node", 2}}) {
    SCOPED_TRACE(name);
    std::unique_ptr<XmlNode> root;
    ASSERT_EQ(xmlLoadFile(fixture(name), &root), ncclSuccess) << lastError();
    roundTrip(xmlWrite(*root), fixture(name), nHosts);
  }
  // A CPU-only machine as discovery writes it: network devices hung off the CPU, no PCI.
  SCOPED_TRACE("cpu-only");
  roundTrip(
      "<system version=\"1\"><cpu numaid=\"0\" affinity=\"0000000f\" arch=\"x86_64\" host_hash=\"0x1\">"
      "<nic><net name=\"eth0\" dev=\"0\" speed=\"25000\" port=\"0\" guid=\"0x0\" latency=\"0.5\" gdr=\"0\" "
      "maxconn=\"65536\"/>"
      "<net name=\"eth1\" dev=\"1\" speed=\"10000\"/></nic></cpu>"
      "<cpu numaid=\"1\" arch=\"arm64\"/></system>",
      "cpu-only", 1);
}

}  // namespace

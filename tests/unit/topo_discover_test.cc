// Topology discovery (src/topo/discover.h) on the machine the tests run on: the <system> tree has a
// cpu per NUMA node covering the CPUs this process may use, the notes name each source (hwloc's
// version, the RDMA device count), RDMA nets appear exactly when libibverbs has devices (skipped
// with the reason otherwise), Ethernet interfaces on PCI appear as socket nets, only GPU/NIC PCI
// branches are kept, discovery is cached, and the written XML parses back. Machines this one is not
// (two sockets, GPUs, RDMA) and fusion: topo_discover_fixture_test.cc.
#include <infiniband/verbs.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <dirent.h>
#include <chrono>
#include <functional>
#include <iostream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "misc/debug.h"
#include "topo/discover.h"
#include "unit/unit_helpers.h"
#include "unit/xml_helpers.h"

namespace {

using baton::XmlNode;

std::unique_ptr<XmlNode> discover(std::string* notes = nullptr) {
  std::unique_ptr<XmlNode> sys;
  std::string n;
  EXPECT_EQ(baton::topoDiscoverLocal(&sys, &n), ncclSuccess);
  if (notes) *notes = n;
  return sys;
}

using bt::all;

// "ffffffff,00000003" -> the CPU numbers whose bits are set.
std::set<int> cpusOfMask(const std::string& mask) {
  std::set<int> cpus;
  std::vector<std::string> words;
  size_t pos = 0;
  for (size_t comma; (comma = mask.find(',', pos)) != std::string::npos; pos = comma + 1)
    words.push_back(mask.substr(pos, comma - pos));
  words.push_back(mask.substr(pos));
  for (size_t w = 0; w < words.size(); ++w) {
    unsigned long v = strtoul(words[words.size() - 1 - w].c_str(), nullptr, 16);
    for (int b = 0; b < 32; ++b)
      if (v >> b & 1) cpus.insert(static_cast<int>(32 * w) + b);
  }
  return cpus;
}

bool sameTree(const XmlNode& a, const XmlNode& b) {
  if (a.name != b.name || a.attrs != b.attrs || a.children.size() != b.children.size()) return false;
  for (size_t i = 0; i < a.children.size(); ++i)
    if (!sameTree(*a.children[i], *b.children[i])) return false;
  return true;
}

int ibverbsDeviceCount() {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (!list) return 0;
  ibv_free_device_list(list);
  return n;
}

// Threads racing to the first discovery all see one and the same machine. Declared first so it is
// the first discovery of this suite (other suites of the binary may have run it already).
TEST(TopoDiscover, ConcurrentFirstCallsAgree) {
  std::vector<std::unique_ptr<XmlNode>> trees(4);
  std::vector<std::thread> threads;
  for (auto& t : trees) threads.emplace_back([&t] { baton::topoDiscoverLocal(&t, nullptr); });
  for (auto& th : threads) th.join();
  for (auto& t : trees) {
    ASSERT_TRUE(t);
    EXPECT_TRUE(sameTree(*trees[0], *t));
  }
}

TEST(TopoDiscover, CpuNodesCoverThisProcessAffinity) {
  auto sys = discover();
  ASSERT_TRUE(sys);
  EXPECT_EQ(sys->name, "system");
  EXPECT_EQ(sys->attrOr("version", ""), "1");
  auto cpus = all(*sys, "cpu");
  ASSERT_GE(cpus.size(), 1u);
  std::set<int> covered, numaIds;
  for (const XmlNode* c : cpus) {
    EXPECT_EQ(c->parent, sys.get()) << "cpu nodes are children of <system>";
    ASSERT_TRUE(c->attr("numaid") && c->attr("affinity") && c->attr("arch"));
    EXPECT_TRUE(numaIds.insert(atoi(c->attr("numaid")->c_str())).second) << "numaid repeated";
    for (int cpu : cpusOfMask(*c->attr("affinity"))) covered.insert(cpu);
#if defined(__x86_64__)
    EXPECT_EQ(*c->attr("arch"), "x86_64");
#endif
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) {
      EXPECT_TRUE(covered.count(cpu)) << "CPU " << cpu << " is in no cpu affinity";
    }
  // The thread's NUMA node is one of the discovered ones.
  EXPECT_TRUE(numaIds.count(baton::topoLocalNumaOfThisThread()));
}

TEST(TopoDiscover, NotesNameHwlocVersionAndIbverbsCount) {
  std::string notes;
  discover(&notes);
  std::cout << "discovery notes:\n" << notes;
  EXPECT_TRUE(bt::messageHas(notes, {"hwloc 2.", "NUMA node", "libibverbs: ", "RDMA device", "NVML: "}));
  int n = ibverbsDeviceCount();
  EXPECT_NE(notes.find("libibverbs: " + std::to_string(n) + " RDMA device"), std::string::npos);
}

// RDMA nets (port >= 1, maxconn 131072) exist exactly when libibverbs lists active ports.
TEST(TopoDiscover, RdmaNetsMatchIbverbs) {
  auto sys = discover();
  std::vector<const XmlNode*> rdmaNets;
  for (const XmlNode* n : all(*sys, "net"))
    if (atoi(n->attrOr("port", "0").c_str()) >= 1) rdmaNets.push_back(n);
  int devices = ibverbsDeviceCount();
  if (devices == 0) {
    EXPECT_TRUE(rdmaNets.empty()) << "a net of ibverbs kind without an RDMA device";
    GTEST_SKIP() << "no RDMA device on this machine (ibv_get_device_list: 0 devices): RDMA nets not checked";
  }
  for (const XmlNode* n : rdmaNets) {
    EXPECT_EQ(n->parent->name, "nic");
    EXPECT_GT(atoi(n->attrOr("speed", "0").c_str()), 0);
    EXPECT_EQ(n->attrOr("maxconn", ""), "131072");
  }
  std::cout << devices << " RDMA device(s), " << rdmaNets.size() << " active port(s) in the tree\n";
}

// Every network interface backed by a PCI function is a socket net with a positive speed.
TEST(TopoDiscover, PciEthernetInterfacesAreSocketNets) {
  auto sys = discover();
  std::set<std::string> nets;
  std::set<int> devs;
  for (const XmlNode* n : all(*sys, "net")) {
    nets.insert(n->attrOr("name", ""));
    EXPECT_TRUE(devs.insert(atoi(n->attrOr("dev", "-1").c_str())).second) << "net dev repeated";
    EXPECT_GT(atoi(n->attrOr("speed", "0").c_str()), 0);
  }
  DIR* d = opendir("/sys/class/net");
  ASSERT_NE(d, nullptr);
  int checked = 0;
  for (dirent* e; (e = readdir(d));) {
    std::string name = e->d_name, link = "/sys/class/net/" + name + "/device";
    char* real = realpath(link.c_str(), nullptr);
    if (!real) continue;  // virtual: lo, bridges, tunnels
    bool onPci = std::string(real).find("/pci") != std::string::npos;
    free(real);
    if (!onPci) continue;
    ++checked;
    EXPECT_TRUE(nets.count(name)) << "interface " << name << " is on PCI but not in the tree";
  }
  closedir(d);
  if (checked == 0) GTEST_SKIP() << "no network interface on PCI here";
}

// Trimming: every PCI element leads to a GPU or a NIC; GPUs carry NCCL's attributes.
TEST(TopoDiscover, PciBranchesLeadToGpuOrNic) {
  auto sys = discover();
  std::function<bool(const XmlNode&)> leads = [&](const XmlNode& n) {
    if (n.name == "gpu" || n.name == "nic") return true;
    for (const auto& c : n.children)
      if (leads(*c)) return true;
    return false;
  };
  for (const XmlNode* p : all(*sys, "pci")) {
    EXPECT_TRUE(p->attr("busid") && p->attr("class") && p->attr("vendor") && p->attr("device"));
    EXPECT_TRUE(leads(*p)) << "pci " << p->attrOr("busid", "?") << " leads to neither a GPU nor a NIC";
    bool nvidiaGpuClass = p->attrOr("class", "").rfind("0x03", 0) == 0 && p->attrOr("vendor", "") == "0x10de";
    EXPECT_EQ(nvidiaGpuClass, p->child("gpu") != nullptr) << p->attrOr("busid", "?");
  }
  for (const XmlNode* g : all(*sys, "gpu")) {
    EXPECT_EQ(g->attrOr("rank", ""), "-1");
    EXPECT_TRUE(g->attr("dev") && g->attr("sm") && g->attr("gdr"));
  }
}

TEST(TopoDiscover, CachedAcrossCalls) {
  std::string n1, n2;
  auto a = discover(&n1);
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 200; ++i) discover();
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  auto b = discover(&n2);
  EXPECT_NE(a.get(), b.get()) << "each call returns its own copy";
  EXPECT_TRUE(sameTree(*a, *b));
  EXPECT_EQ(n1, n2);
  // An uncached discovery loads a hwloc topology (tens of ms); 200 copies take well under that each.
  EXPECT_LT(ms, 1000.0) << "200 calls took " << ms << " ms: discovery does not look cached";
  // A caller's edits stay in its copy.
  a->add("scratch");
  EXPECT_TRUE(sameTree(*b, *discover()));
}

TEST(TopoDiscover, WrittenXmlParsesBack) {
  auto sys = discover();
  std::string text = baton::xmlWrite(*sys);
  std::unique_ptr<XmlNode> back;
  ASSERT_EQ(baton::xmlParse(text, "<discovered>", &back), ncclSuccess) << text;
  EXPECT_TRUE(sameTree(*sys, *back)) << text;
}

// The discovered tree fuses with itself into itself: nothing is duplicated.
TEST(TopoDiscover, FuseWithItselfIsIdentity) {
  auto a = discover();
  auto b = discover();
  ASSERT_EQ(baton::topoFuseXml(a.get(), *b), ncclSuccess);
  EXPECT_TRUE(sameTree(*a, *b));
}

}  // namespace

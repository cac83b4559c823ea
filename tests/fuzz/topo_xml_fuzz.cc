// Fuzz target: an NCCL topology file (NCCL_TOPO_FILE, baton-topo --topo) through everything the
// library does with one: XML parse, graph build, paths, the ring/tree search, and the writer.
//
// Input: one byte for the host count (1..4), then the file's text. A rejected file must come back
// as ncclInvalidArgument with a message; an accepted one must survive the whole pipeline and write
// back XML that parses again.
#include <cstdint>
#include <cstdlib>

#include "fuzz_input.h"
#include "misc/debug.h"
#include "topo/graph.h"
#include "topo/topo.h"
#include "topo/xml.h"

using namespace baton;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  baton_fuzz::Input in(data, size);
  const int nHosts = in.range(1, 4);
  const std::string text(in.all());
  std::unique_ptr<XmlNode> xml;
  if (baton_fuzz::rejectsWithMessage([&] { return xmlParse(text, "<fuzz>", &xml); }) != ncclSuccess) return 0;
  std::unique_ptr<XmlNode> again;
  if (xmlParse(xmlWrite(*xml), "<rewritten>", &again) != ncclSuccess) abort();  // the writer's output parses

  TopoSystem sys;
  if (baton_fuzz::rejectsWithMessage([&] { return topoFromXml(*xml, nHosts, &sys); }) != ncclSuccess) return 0;
  if (sys.nodes.size() > 512) return 0;  // keep the search's time per input small
  if (sys.rankNode.empty()) {            // CPU ranks, as baton-topo places them: two per host
    for (int h = 0; h < sys.nHosts; ++h)
      for (int i = 0, placed = 0; i < (int)sys.nodes.size() && placed < 2; ++i)
        if (sys.nodes[i].type == NodeType::CPU && sys.nodes[i].host == h) sys.rankNode.push_back(i), ++placed;
  }
  if (sys.rankNode.empty()) return 0;
  topoComputePaths(&sys);
  CommGraph graph;
  if (searchGraph(sys, 1, 4, &graph) == ncclSuccess) {
    for (const ChannelGraph& ch : graph.channels)
      for (int r : ch.ring)
        if (r < 0 || r >= (int)sys.rankNode.size()) abort();  // a ring names communicator ranks only
  }
  std::unique_ptr<XmlNode> out;
  if (topoToXml(sys, &out) == ncclSuccess) (void)xmlWrite(*out);
  return 0;
}

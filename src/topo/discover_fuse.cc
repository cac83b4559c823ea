// Fusing the <system> trees of the ranks of one host (NCCL's ncclTopoFuseXml): each rank probes its
// own devices, the trees are allgathered, and every rank merges them into one view of the host.
//
// NCCL matches a child only when all its attributes are equal; that splits one GPU in two as soon
// as two ranks disagree on a single attribute (rank="-1" against rank="3"). Here elements that name
// a device are matched by the attribute that identifies it, and their attributes are combined.
#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "misc/debug.h"
#include "topo/discover.h"

namespace baton {
namespace {

// The attributes that identify an element among its siblings; an empty list means "the element
// name alone" (one <gpu> per PCI function, one <nic> per parent), null means "all attributes".
const std::vector<const char*>* identity(const std::string& name) {
  static const std::map<std::string, std::vector<const char*>> kKeys = {
      {"cpu", {"numaid", "host_hash"}}, {"pci", {"busid"}},      {"gpu", {}}, {"nic", {}}, {"net", {"name", "port"}},
      {"nvlink", {"target"}},           {"pcilink", {"target"}}, {"c2c", {}},
  };
  auto it = kKeys.find(name);
  return it == kKeys.end() ? nullptr : &it->second;
}

bool sameAttrs(const XmlNode& a, const XmlNode& b) {
  if (a.attrs.size() != b.attrs.size()) return false;
  for (const auto& [k, v] : b.attrs) {
    const std::string* mine = a.attr(k);
    if (!mine || *mine != v) return false;
  }
  return true;
}

bool matches(const XmlNode& mine, const XmlNode& theirs) {
  if (mine.name != theirs.name) return false;
  const std::vector<const char*>* keys = identity(mine.name);
  if (!keys) return sameAttrs(mine, theirs);
  for (const char* k : *keys) {
    const std::string *a = mine.attr(k), *b = theirs.attr(k);
    // host_hash is optional (hand-written files omit it): only a present, different value splits.
    if (a && b && *a != *b) return false;
    if ((a == nullptr) != (b == nullptr) && std::string(k) != "host_hash") return false;
  }
  return true;
}

std::vector<int> rankList(const XmlNode& gpu) {
  std::vector<int> out;
  const std::string* list = gpu.attr("ranks");
  std::stringstream ss(list ? *list : gpu.attrOr("rank", "-1"));
  for (std::string tok; std::getline(ss, tok, ',');)
    if (int r = atoi(tok.c_str()); r >= 0) out.push_back(r);
  return out;
}

// A GPU seen by several ranks: rank="-1" gives way, different ranks are all kept.
void combineGpu(XmlNode* into, const XmlNode& other) {
  std::set<int> ranks;
  for (int r : rankList(*into)) ranks.insert(r);
  for (int r : rankList(other)) ranks.insert(r);
  if (!ranks.empty()) into->set("rank", std::to_string(*ranks.begin()));
  if (ranks.size() > 1) {
    std::string s;
    for (int r : ranks) s += (s.empty() ? "" : ",") + std::to_string(r);
    into->set("ranks", s);
  }
  // A rank without NVML wrote sm="0"; a rank that knows the capability wins.
  if (into->attrOr("sm", "0") == "0" && other.attr("sm")) into->set("sm", *other.attr("sm"));
  if (other.attrOr("gdr", "0") == "1") into->set("gdr", "1");
}

ncclResult_t fuseChildren(XmlNode* into, const XmlNode& other, int depth) {
  if (depth > 64)
    return batonError(ncclInvalidArgument, "topoFuseXml: tree deeper than 64 levels at <%s>", other.name.c_str());
  // The gpu first: its ranks must be read before other's attributes are copied in.
  if (into->name == "gpu") combineGpu(into, other);
  for (const auto& [k, v] : other.attrs)
    if (!into->attr(k)) into->set(k, v);
  // Children already present in `into` are matched against before `other`'s are added, so two
  // identical siblings inside `other` stay two.
  size_t original = into->children.size();
  for (const auto& child : other.children) {
    XmlNode* match = nullptr;
    for (size_t i = 0; i < original && !match; ++i)
      if (matches(*into->children[i], *child)) match = into->children[i].get();
    if (match) {
      BATON_CHECK(fuseChildren(match, *child, depth + 1));
    } else {
      std::unique_ptr<XmlNode> copy = topoXmlClone(*child);
      copy->parent = into;
      into->children.push_back(std::move(copy));
    }
  }
  return ncclSuccess;
}

}  // namespace

std::unique_ptr<XmlNode> topoXmlClone(const XmlNode& node) {
  auto out = std::make_unique<XmlNode>();
  out->name = node.name;
  out->attrs = node.attrs;
  out->line = node.line;
  for (const auto& c : node.children) {
    std::unique_ptr<XmlNode> child = topoXmlClone(*c);
    child->parent = out.get();
    out->children.push_back(std::move(child));
  }
  return out;
}

ncclResult_t topoFuseXml(XmlNode* into, const XmlNode& other) {
  if (!into) return batonError(ncclInvalidArgument, "topoFuseXml: destination is null");
  if (into->name != "system" || other.name != "system")
    return batonError(ncclInvalidArgument, "topoFuseXml: expected two <system> roots, got <%s> and <%s>",
                      into->name.c_str(), other.name.c_str());
  if (into->attrOr("version", "1") != other.attrOr("version", "1"))
    return batonError(ncclInvalidArgument, "topoFuseXml: <system version=\"%s\"> cannot fuse with version \"%s\"",
                      into->attrOr("version", "1").c_str(), other.attrOr("version", "1").c_str());
  return fuseChildren(into, other, 0);
}

}  // namespace baton

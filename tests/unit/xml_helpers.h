// Test helpers for topology XML trees (src/topo/xml.h): every element of a name, depth first.
#pragma once

#include <string>
#include <vector>

#include "topo/xml.h"

namespace bt {

inline void collectXml(const baton::XmlNode& n, const std::string& name, std::vector<const baton::XmlNode*>* out) {
  if (n.name == name) out->push_back(&n);
  for (const auto& c : n.children) collectXml(*c, name, out);
}

inline std::vector<const baton::XmlNode*> all(const baton::XmlNode& root, const std::string& name) {
  std::vector<const baton::XmlNode*> out;
  collectXml(root, name, &out);
  return out;
}

}  // namespace bt

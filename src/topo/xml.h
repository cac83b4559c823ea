// A small XML tree for NCCL's topology files: parse, query, write. NCCL's files use elements and
// attributes only (no text content, no namespaces); comments, the <?xml ?> declaration and
// self-closing tags are accepted. Errors name the file, the line and the element.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nccl.h"

namespace baton {

struct XmlNode {
  std::string name;                                        // element name, e.g. "gpu"
  std::vector<std::pair<std::string, std::string>> attrs;  // in file order
  std::vector<std::unique_ptr<XmlNode>> children;
  XmlNode* parent = nullptr;
  int line = 0;  // where the element opened in its source (0: built in memory)

  const std::string* attr(std::string_view key) const;  // null when absent
  std::string attrOr(std::string_view key, std::string_view dflt) const;
  void set(std::string_view key, std::string value);  // replaces or appends
  XmlNode* add(std::string childName);                // appends a child, returns it
  XmlNode* child(std::string_view childName) const;   // first child with that name, or null
};

// `source` names the text in error messages (a path, or "<string>").
ncclResult_t xmlParse(const std::string& text, const std::string& source, std::unique_ptr<XmlNode>* root);
ncclResult_t xmlLoadFile(const std::string& path, std::unique_ptr<XmlNode>* root);
// Two-space indentation, attributes in stored order, childless elements self-closed.
std::string xmlWrite(const XmlNode& root);
ncclResult_t xmlSaveFile(const std::string& path, const XmlNode& root);

}  // namespace baton

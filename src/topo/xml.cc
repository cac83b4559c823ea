// The topology XML reader and writer (xml.h): a strict little parser for the subset NCCL's files use
// (elements, attributes, comments, the <?xml ?> declaration) and the matching writer. Errors name
// the source, the line and the element, so a hand-edited NCCL_TOPO_FILE can be fixed from the message.
#include "topo/xml.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "misc/debug.h"

namespace baton {

const std::string* XmlNode::attr(std::string_view key) const {
  for (const auto& kv : attrs)
    if (kv.first == key) return &kv.second;
  return nullptr;
}

std::string XmlNode::attrOr(std::string_view key, std::string_view dflt) const {
  const std::string* v = attr(key);
  return v ? *v : std::string(dflt);
}

void XmlNode::set(std::string_view key, std::string value) {
  for (auto& kv : attrs)
    if (kv.first == key) {
      kv.second = std::move(value);
      return;
    }
  attrs.emplace_back(std::string(key), std::move(value));
}

XmlNode* XmlNode::add(std::string childName) {
  auto c = std::make_unique<XmlNode>();
  c->name = std::move(childName);
  c->parent = this;
  children.push_back(std::move(c));
  return children.back().get();
}

XmlNode* XmlNode::child(std::string_view childName) const {
  for (const auto& c : children)
    if (c->name == childName) return c.get();
  return nullptr;
}

namespace {

bool isNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isNameChar(char c) { return isNameStart(c) || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == ':'; }
bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

constexpr int kMaxDepth = 64;

class Parser {
 public:
  Parser(const std::string& text, const std::string& source) : s_(text), src_(source) {}

  ncclResult_t run(std::unique_ptr<XmlNode>* root) {
    if (s_.compare(0, 3, "\xEF\xBB\xBF") == 0) pos_ = 3;  // UTF-8 byte order mark
    std::unique_ptr<XmlNode> top;
    XmlNode* cur = nullptr;  // innermost open element
    int depth = 0;
    for (;;) {
      size_t textStart = pos_;
      while (pos_ < s_.size() && s_[pos_] != '<') ++pos_;
      for (size_t i = textStart; i < pos_; ++i)
        if (!isSpace(s_[i])) {
          // NCCL's files carry no text; stray text is usually a broken tag, so say where.
          size_t e = i;
          while (e < pos_ && e - i < 20 && !isSpace(s_[e])) ++e;
          std::string t = s_.substr(i, e - i);
          return fail(lineAt(i), cur, "unexpected text \"%s\" (topology XML has no text content)", t.c_str());
        }
      if (pos_ >= s_.size()) break;
      if (s_.compare(pos_, 4, "<!--") == 0) {
        size_t end = s_.find("-->", pos_ + 4);
        if (end == std::string::npos) return fail(lineAt(pos_), cur, "unterminated comment");
        pos_ = end + 3;
      } else if (s_.compare(pos_, 2, "<?") == 0) {
        size_t end = s_.find("?>", pos_ + 2);
        if (end == std::string::npos) return fail(lineAt(pos_), cur, "unterminated <? ... ?> declaration");
        if (top) return fail(lineAt(pos_), cur, "<? ... ?> after the root element started");
        pos_ = end + 2;
      } else if (s_.compare(pos_, 2, "<!") == 0) {
        return fail(lineAt(pos_), cur, "DOCTYPE and CDATA are not supported in topology XML");
      } else if (s_.compare(pos_, 2, "</") == 0) {
        int line = lineAt(pos_);
        pos_ += 2;
        std::string name = readName();
        skipSpace();
        if (name.empty() || pos_ >= s_.size() || s_[pos_] != '>') return fail(line, cur, "malformed closing tag");
        ++pos_;
        if (!cur) return fail(line, nullptr, "closing tag </%s> without an open element", name.c_str());
        if (name != cur->name)
          return fail(line, cur, "closing tag </%s> does not match <%s> opened at line %d", name.c_str(),
                      cur->name.c_str(), cur->line);
        cur = cur->parent;
        --depth;
      } else {
        int line = lineAt(pos_);
        if (top && !cur)
          return fail(line, nullptr, "more than one root element (the first is <%s>)", top->name.c_str());
        ++pos_;
        auto node = std::make_unique<XmlNode>();
        node->line = line;
        node->name = readName();
        if (node->name.empty()) return fail(line, cur, "'<' not followed by an element name");
        bool selfClosed = false;
        BATON_CHECK(readAttrs(node.get(), &selfClosed));
        XmlNode* n = node.get();
        if (cur) {
          node->parent = cur;
          cur->children.push_back(std::move(node));
        } else {
          top = std::move(node);
        }
        if (!selfClosed) cur = n, ++depth;
        // NCCL's trees are a few levels deep; a bound keeps recursive walkers off the stack's edge.
        if (depth > kMaxDepth) return fail(line, n, "elements nested deeper than %d levels", kMaxDepth);
      }
    }
    if (cur)
      return fail(lineAt(s_.size()), cur, "<%s> opened at line %d is never closed", cur->name.c_str(), cur->line);
    if (!top) return fail(lineAt(s_.size()), nullptr, "no root element");
    *root = std::move(top);
    return ncclSuccess;
  }

 private:
  template <typename... A>
  ncclResult_t fail(int line, const XmlNode* el, const char* fmt, A... args) {
    char msg[512];
    if constexpr (sizeof...(A) == 0) snprintf(msg, sizeof msg, "%s", fmt);
    else snprintf(msg, sizeof msg, fmt, args...);
    if (el) return batonError(ncclInvalidArgument, "%s:%d: <%s>: %s", src_.c_str(), line, el->name.c_str(), msg);
    return batonError(ncclInvalidArgument, "%s:%d: %s", src_.c_str(), line, msg);
  }

  int lineAt(size_t p) {  // incremental: positions only move forward, except for error reports
    if (p < linePos_) linePos_ = 0, line_ = 1;
    for (; linePos_ < p && linePos_ < s_.size(); ++linePos_)
      if (s_[linePos_] == '\n') ++line_;
    return line_;
  }

  void skipSpace() {
    while (pos_ < s_.size() && isSpace(s_[pos_])) ++pos_;
  }

  std::string readName() {
    size_t b = pos_;
    if (pos_ < s_.size() && isNameStart(s_[pos_]))
      while (pos_ < s_.size() && isNameChar(s_[pos_])) ++pos_;
    return s_.substr(b, pos_ - b);
  }

  ncclResult_t readAttrs(XmlNode* n, bool* selfClosed) {
    for (;;) {
      size_t before = pos_;
      skipSpace();
      if (pos_ >= s_.size()) return fail(n->line, n, "unterminated start tag");
      if (s_[pos_] == '>') {
        ++pos_;
        return ncclSuccess;
      }
      if (s_.compare(pos_, 2, "/>") == 0) {
        pos_ += 2;
        *selfClosed = true;
        return ncclSuccess;
      }
      int line = lineAt(pos_);
      if (pos_ == before) return fail(line, n, "expected whitespace before attribute");
      std::string key = readName();
      if (key.empty()) return fail(line, n, "unexpected character '%c' in start tag", s_[pos_]);
      skipSpace();
      if (pos_ >= s_.size() || s_[pos_] != '=') return fail(line, n, "attribute %s has no '=value'", key.c_str());
      ++pos_;
      skipSpace();
      if (pos_ >= s_.size() || (s_[pos_] != '"' && s_[pos_] != '\''))
        return fail(line, n, "value of attribute %s is not quoted", key.c_str());
      char q = s_[pos_++];
      size_t end = s_.find_first_of(std::string(1, q) + "<", pos_);
      // A '<' before the closing quote means the quote was forgotten: report that, not the '<'.
      if (end == std::string::npos || s_[end] == '<')
        return fail(line, n, "unterminated attribute value (%s)", key.c_str());
      std::string value;
      BATON_CHECK(unescape(s_.substr(pos_, end - pos_), n, key, line, &value));
      pos_ = end + 1;
      if (n->attr(key)) return fail(line, n, "attribute %s appears twice", key.c_str());
      n->attrs.emplace_back(std::move(key), std::move(value));
    }
  }

  ncclResult_t unescape(const std::string& raw, const XmlNode* n, const std::string& key, int line, std::string* out) {
    static const struct {
      const char* ent;
      char c;
    } kEnt[] = {{"amp;", '&'}, {"lt;", '<'}, {"gt;", '>'}, {"quot;", '"'}, {"apos;", '\''}};
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] != '&') {
        *out += raw[i];
        continue;
      }
      bool found = false;
      for (const auto& e : kEnt)
        if (raw.compare(i + 1, strlen(e.ent), e.ent) == 0) {
          *out += e.c;
          i += strlen(e.ent);
          found = true;
          break;
        }
      if (!found) {
        size_t semi = raw.find(';', i);
        std::string ent = raw.substr(i, semi == std::string::npos ? 8 : semi - i + 1);
        return fail(line, n, "unknown entity %s in attribute %s", ent.c_str(), key.c_str());
      }
    }
    return ncclSuccess;
  }

  const std::string& s_;
  const std::string& src_;
  size_t pos_ = 0;
  size_t linePos_ = 0;
  int line_ = 1;
};

void escapeInto(const std::string& v, std::string* out) {
  for (char c : v) {
    switch (c) {
      case '&': *out += "&amp;"; break;
      case '<': *out += "&lt;"; break;
      case '>': *out += "&gt;"; break;
      case '"': *out += "&quot;"; break;
      default: *out += c;
    }
  }
}

void writeNode(const XmlNode& n, int depth, std::string* out) {
  out->append(2 * depth, ' ');
  *out += '<';
  *out += n.name;
  for (const auto& kv : n.attrs) {
    *out += ' ';
    *out += kv.first;
    *out += "=\"";
    escapeInto(kv.second, out);
    *out += '"';
  }
  if (n.children.empty()) {
    *out += "/>\n";
    return;
  }
  *out += ">\n";
  for (const auto& c : n.children) writeNode(*c, depth + 1, out);
  out->append(2 * depth, ' ');
  *out += "</" + n.name + ">\n";
}

}  // namespace

ncclResult_t xmlParse(const std::string& text, const std::string& source, std::unique_ptr<XmlNode>* root) {
  return Parser(text, source).run(root);
}

ncclResult_t xmlLoadFile(const std::string& path, std::unique_ptr<XmlNode>* root) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return batonError(ncclSystemError, "topology XML %s: cannot open: %s", path.c_str(), strerror(errno));
  std::stringstream ss;
  ss << f.rdbuf();
  if (f.bad()) return batonError(ncclSystemError, "topology XML %s: read failed", path.c_str());
  return xmlParse(ss.str(), path, root);
}

std::string xmlWrite(const XmlNode& root) {
  std::string out;
  writeNode(root, 0, &out);
  return out;
}

ncclResult_t xmlSaveFile(const std::string& path, const XmlNode& root) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return batonError(ncclSystemError, "topology XML %s: cannot create: %s", path.c_str(), strerror(errno));
  f << xmlWrite(root);
  f.close();
  if (!f) return batonError(ncclSystemError, "topology XML %s: write failed", path.c_str());
  return ncclSuccess;
}

}  // namespace baton

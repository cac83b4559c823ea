// JSON text without a library, for the files and answers baton writes for other programs (the
// flight recorder's dumps, the RAS service's JSON status): strings escaped, numbers as text, and
// a trailing comma dropped when an object or array closes.
#pragma once

#include <cstdio>
#include <string>

namespace baton {

inline void jsonString(std::string& out, const char* s) {
  out += '"';
  for (; s && *s; ++s) {
    const unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') out += '\\', out += (char)c;
    else if (c < 0x20) {
      char esc[8];
      snprintf(esc, sizeof esc, "\\u%04x", c);
      out += esc;
    } else out += (char)c;
  }
  out += '"';
}
inline void jsonField(std::string& out, const char* key, const char* value) {
  jsonString(out, key), out += ':', jsonString(out, value), out += ',';
}
inline void jsonField(std::string& out, const char* key, long long value) {
  jsonString(out, key), out += ':', out += std::to_string(value), out += ',';
}
inline void jsonFieldU(std::string& out, const char* key, unsigned long long value) {
  jsonString(out, key), out += ':', out += std::to_string(value), out += ',';
}
inline void jsonFieldBool(std::string& out, const char* key, bool value) {
  jsonString(out, key), out += ':', out += value ? "true" : "false", out += ',';
}
inline void jsonKey(std::string& out, const char* key) { jsonString(out, key), out += ':'; }
inline void jsonClose(std::string& out, char close) {
  if (!out.empty() && out.back() == ',') out.pop_back();
  out += close;
}

}  // namespace baton

// NCCL_ALGO / NCCL_PROTO with NCCL's syntax (tuner.h): "Ring", "LL,LL128", "^LL128",
// "^LL128;allreduce:LL128". Unknown names are an error that names them, not a silent no-op.
#include <strings.h>

#include <cstring>
#include <string>
#include <vector>

#include "misc/debug.h"
#include "tuner/tuner.h"

namespace baton {
namespace {

const char* kFuncKeys[kFuncCount] = {"allreduce", "broadcast", "reduce", "allgather", "reducescatter"};
// NCCL's algorithm names, by NCCL's number (coll_args.h); Ring and Tree are implemented, the rest
// parse and enable nothing, so "NCCL_ALGO=NVLS" fails at the first collective with a clear message.
const char* kAlgoNames[kNcclNumAlgos] = {"Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t end = s.find(sep, start);
    out.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// One list ("LL,Simple" or "^LL128") into enabled[n]. isAlgo picks the name table.
ncclResult_t parseList(const char* var, const std::string& list, bool isAlgo, uint8_t* enabled, int n) {
  std::string body = trim(list);
  const bool negate = !body.empty() && body[0] == '^';
  if (negate) body = body.substr(1);
  std::vector<uint8_t> named(n, 0);
  bool any = false;
  for (const std::string& raw : split(body, ',')) {
    const std::string tok = trim(raw);
    if (tok.empty()) continue;
    bool known = false;
    if (isAlgo) {
      for (int a = 0; a < kNcclNumAlgos; ++a)
        if (strcasecmp(tok.c_str(), kAlgoNames[a]) == 0) {
          known = true;
          if (a < kNumTunedAlgos) named[a] = 1;
        }
    } else {
      for (int p = 0; p < kNumProtos; ++p)
        if (strcasecmp(tok.c_str(), protoName(p)) == 0) known = true, named[p] = 1;
    }
    if (!known)
      return batonError(
          ncclInvalidArgument, "%s: unknown %s '%s' (expected %s)", var, isAlgo ? "algorithm" : "protocol", tok.c_str(),
          isAlgo ? "Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree or PAT" : "LL, LL128 or Simple");
    any = true;
  }
  if (!any && !negate) return batonError(ncclInvalidArgument, "%s: empty list in '%s'", var, list.c_str());
  for (int i = 0; i < n; ++i) enabled[i] = negate ? !named[i] : named[i];
  return ncclSuccess;
}

// A whole variable: global section and per-function sections.
constexpr int kMaskW = 8;  // room for every algorithm or protocol index
static_assert(kMaskW >= kNumProtos && kMaskW >= kNumTunedAlgos, "mask row wide enough");

ncclResult_t parseVar(const char* var, const char* value, bool isAlgo, int n, uint8_t (*out)[kMaskW]) {
  for (int f = 0; f < kFuncCount; ++f)
    for (int i = 0; i < n; ++i) out[f][i] = 1;
  if (!value || !*value) return ncclSuccess;
  for (const std::string& section : split(value, ';')) {
    const std::string s = trim(section);
    if (s.empty()) continue;
    const size_t colon = s.find(':');
    uint8_t enabled[kMaskW] = {};
    if (colon == std::string::npos) {
      BATON_CHECK(parseList(var, s, isAlgo, enabled, n));
      for (int f = 0; f < kFuncCount; ++f) memcpy(out[f], enabled, n);
      continue;
    }
    const std::string fn = trim(s.substr(0, colon));
    int func = -1;
    for (int f = 0; f < kFuncCount; ++f)
      if (strcasecmp(fn.c_str(), kFuncKeys[f]) == 0) func = f;
    if (func < 0)
      return batonError(ncclInvalidArgument,
                        "%s: unknown function '%s' in '%s' (expected allreduce, broadcast, reduce, allgather or "
                        "reducescatter)",
                        var, fn.c_str(), value);
    BATON_CHECK(parseList(var, s.substr(colon + 1), isAlgo, enabled, n));
    memcpy(out[func], enabled, n);
  }
  return ncclSuccess;
}

}  // namespace

int funcByName(const char* name) {
  for (int f = 0; name && f < kFuncCount; ++f)
    if (strcasecmp(name, kFuncKeys[f]) == 0) return f;
  return -1;
}

ncclResult_t parseAlgoProtoEnv(const char* algoEnv, const char* protoEnv, AlgoProtoMask* mask) {
  uint8_t algo[kFuncCount][kMaskW], proto[kFuncCount][kMaskW];
  BATON_CHECK(parseVar("NCCL_ALGO", algoEnv, true, kNumTunedAlgos, algo));
  BATON_CHECK(parseVar("NCCL_PROTO", protoEnv, false, kNumProtos, proto));
  for (int f = 0; f < kFuncCount; ++f) {
    memcpy(mask->algo[f], algo[f], kNumTunedAlgos);
    memcpy(mask->proto[f], proto[f], kNumProtos);
  }
  return ncclSuccess;
}

}  // namespace baton

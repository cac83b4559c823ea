// Which network back-end a connection uses: NCCL_NET by name, else the first external plugin
// (NCCL_NET_PLUGIN), else InfiniBand verbs when a device is there, else sockets (NCCL's order).
// Read for every connection; plugins are loaded once, the built-in back-ends initialised once (a
// failed init is tried again next time).
#include <strings.h>

#include <mutex>
#include <string>

#include "misc/debug.h"
#include "misc/param.h"
#include "net/net_backend.h"

namespace baton {

ncclResult_t selectNetBackend(NetBackend** out) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  const std::string want = envStr("NCCL_NET");
  NetBackend* ib = ibNetBackend();
  NetBackend* sock = socketNetBackend();
  static bool ibInit = false, sockInit = false;
  static ncclResult_t ibRes = ncclSuccess, sockRes = ncclSuccess;
  auto init = [](NetBackend* b, bool* done, ncclResult_t* res) {
    if (!*done) *res = b->init(), *done = *res == ncclSuccess;  // a failure is tried again next time
    return *res;
  };
  const std::vector<NetBackend*>& plugins = pluginNetBackends();
  static bool said = false;
  if (!want.empty()) {
    NetBackend* b = !strcasecmp(want.c_str(), "IB") ? ib : !strcasecmp(want.c_str(), "Socket") ? sock : nullptr;
    for (NetBackend* p : plugins)
      if (!b && !strcasecmp(want.c_str(), p->name())) b = p;
    if (!b) {
      std::string names;
      for (NetBackend* p : plugins) names += std::string("'") + p->name() + "', ";
      return batonError(ncclInvalidArgument, "NCCL_NET='%s' names no network back-end (there are %s'Socket' and 'IB')",
                        want.c_str(), names.c_str());
    }
    if (b == ib || b == sock) BATON_CHECK(b == ib ? init(ib, &ibInit, &ibRes) : init(sock, &sockInit, &sockRes));
    if (b->devices() == 0)
      return batonError(ncclSystemError, "NCCL_NET='%s': the %s back-end found no device on this host", want.c_str(),
                        b->name());
    *out = b;
    return ncclSuccess;
  }
  if (!plugins.empty()) {
    if (!said) {
      BATON_INFO(kSubInit | kSubNet, "NET: using network plugin %s", plugins[0]->name());
      said = true;
    }
    *out = plugins[0];
    return ncclSuccess;
  }
  if (envInt("NCCL_IB_DISABLE", 0) == 0 && init(ib, &ibInit, &ibRes) == ncclSuccess && ib->devices() > 0) {
    *out = ib;
    return ncclSuccess;
  }
  BATON_CHECK(init(sock, &sockInit, &sockRes));
  *out = sock;
  return ncclSuccess;
}

}  // namespace baton

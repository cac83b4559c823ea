// Host and process identity (host_identity.h).
#include "bootstrap/host_identity.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "misc/param.h"

namespace baton {

uint64_t fnv1a(const void* data, size_t n, uint64_t h) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

uint64_t hostHash() {
  std::string id = envStr("NCCL_HOSTID");
  if (id.empty()) {
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    std::ifstream boot("/proc/sys/kernel/random/boot_id");
    std::string bootId;
    std::getline(boot, bootId);
    id.assign(host);
    id.append(bootId);
  }
  return fnv1a(id.data(), id.size());
}

uint64_t pidHash(uint64_t host) {
  char ns[64] = "";
  ssize_t n = readlink("/proc/self/ns/pid", ns, sizeof ns - 1);
  int pid = getpid();
  uint64_t h = fnv1a(&pid, sizeof pid, host);
  return n > 0 ? fnv1a(ns, n, h) : h;
}

uint32_t pidNamespace() {
  struct stat st;
  return stat("/proc/self/ns/pid", &st) == 0 ? (uint32_t)st.st_ino : 0;
}

}  // namespace baton

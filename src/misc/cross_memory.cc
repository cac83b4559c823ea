// Cross-memory attach between processes of one host (cross_memory.h).
#include "misc/cross_memory.h"

#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace baton {
namespace {

constexpr uint64_t kProbeValue = 0xba70'c3a0'51c6'e0c9ull;
const volatile uint64_t probeWord = kProbeValue;

// Moves `bytes` between our `local` and process `pid`'s `remote`, looping over short transfers
// (the kernel stops at a page it cannot pin). The bytes moved, or -1 with errno set.
int64_t transfer(bool write, int pid, void* local, uint64_t remote, uint64_t bytes) {
  uint64_t done = 0;
  while (done < bytes) {
    iovec l{static_cast<char*>(local) + done, bytes - done};
    iovec r{reinterpret_cast<void*>(remote + done), bytes - done};
    const ssize_t n = write ? process_vm_writev(pid, &l, 1, &r, 1, 0) : process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? -1 : (int64_t)done;
    done += (uint64_t)n;
  }
  return (int64_t)done;
}

bool readFrom(const void* self, int peer, void* local, uint64_t remote, uint64_t bytes) {
  const int pid = static_cast<const int32_t*>(self)[peer];
  return pid > 0 && transfer(false, pid, local, remote, bytes) == (int64_t)bytes;
}

bool writeTo(const void* self, int peer, uint64_t remote, const void* local, uint64_t bytes) {
  const int pid = static_cast<const int32_t*>(self)[peer];
  return pid > 0 && transfer(true, pid, const_cast<void*>(local), remote, bytes) == (int64_t)bytes;
}

}  // namespace

std::string yamaPtraceScope() {
  static const std::string scope = [] {  // read once per process: every communicator's init asks
    std::ifstream f("/proc/sys/kernel/yama/ptrace_scope");
    std::string v;
    return f >> v ? v : std::string();
  }();
  return scope;
}

bool allowPeerAttach(const std::string& scope, std::string* note) {
  note->clear();
  if (scope.empty() || scope == "0") return true;  // the same user may attach already
  if (scope != "1") {
    *note =
        "kernel.yama.ptrace_scope is " + scope + ": only root (2) or no process (3) may attach, so no single copies";
    return false;
  }
  if (prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0) != 0) {
    *note = std::string("kernel.yama.ptrace_scope is 1 and prctl(PR_SET_PTRACER_ANY) failed: ") + strerror(errno);
    return false;
  }
  *note =
      "kernel.yama.ptrace_scope is 1: this process lets processes of its user attach (PR_SET_PTRACER_ANY, as Open "
      "MPI's CMA does) so local ranks can single-copy; BATON_SINGLE_COPY=0 leaves it";
  return true;
}

uint64_t crossMemoryProbeAddress() { return reinterpret_cast<uintptr_t>(&probeWord); }

bool crossMemoryProbe(int pid, uint64_t addr, std::string* why) {
  uint64_t v = 0;
  if (transfer(false, pid, &v, addr, sizeof v) == (int64_t)sizeof v && v == kProbeValue) return true;
  if (v != 0) {
    *why = "process_vm_readv read an unexpected value (another pid namespace?)";
    return false;
  }
  *why = std::string("process_vm_readv: ") + strerror(errno);
  const std::string scope = yamaPtraceScope();
  if (errno == EPERM && !scope.empty() && scope != "0")
    *why += " (kernel.yama.ptrace_scope is " + scope + "; 0 allows it between processes of one user)";
  return false;
}

PeerCopy crossMemoryPeerCopy(const int32_t* pidsByRank) { return PeerCopy{&readFrom, &writeTo, pidsByRank}; }

}  // namespace baton

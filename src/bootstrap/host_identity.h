// Who and where a rank is: the identities ranks exchange at init to decide which transport reaches
// which peer (same process: p2p; same host: shm; otherwise NET) and which peers' processes a wait
// can check on.
#pragma once

#include <cstddef>
#include <cstdint>

namespace baton {

// FNV-1a over `n` bytes, continuing from `h` (the communicator hash, host and process hashes).
uint64_t fnv1a(const void* data, size_t n, uint64_t h = 1469598103934665603ull);
// This host: a hash of NCCL_HOSTID, else of the host name and the kernel's boot id.
uint64_t hostHash();
// This process on host `host`: the host hash, the pid and the pid namespace.
uint64_t pidHash(uint64_t host);
// The pid namespace's inode (low 32 bits): pids of two processes mean the same only within one.
uint32_t pidNamespace();

}  // namespace baton

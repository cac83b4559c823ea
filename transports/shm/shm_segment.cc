// Mappings are populated up front (MAP_POPULATE): a FIFO slot touched for the first time inside a
// timed operation would otherwise pay page faults there.
#include "shm/shm_segment.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "exec_model.h"
#include "misc/debug.h"

namespace baton {

ncclResult_t shmCreate(const char* name, size_t bytes, void** base) {
  int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return batonError(ncclSystemError, "shm: cannot create segment %s: %s", name, strerror(errno));
  if (ftruncate(fd, bytes) != 0) {
    int e = errno;
    close(fd);
    shm_unlink(name);
    return batonError(ncclSystemError, "shm: cannot size segment %s to %zu bytes: %s (is /dev/shm full?)", name, bytes,
                      strerror(e));
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    shm_unlink(name);
    return batonError(ncclSystemError, "shm: cannot map segment %s: %s", name, strerror(errno));
  }
  *base = p;
  BATON_INFO(kSubShm, "shm: created %s (%zu bytes)", name, bytes);
  return ncclSuccess;
}

ncclResult_t shmOpen(const char* name, size_t bytes, void** base) {
  int fd = shm_open(name, O_RDWR, 0600);
  if (fd < 0) return batonError(ncclSystemError, "shm: cannot open peer's segment %s: %s", name, strerror(errno));
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  close(fd);
  if (p == MAP_FAILED)
    return batonError(ncclSystemError, "shm: cannot map peer's segment %s: %s", name, strerror(errno));
  *base = p;
  return ncclSuccess;
}

int sweepStaleShmSegments() {
  static std::mutex mu;
  static uint64_t last = 0;
  std::lock_guard<std::mutex> lock(mu);
  const uint64_t now = nowNs();
  if (last && now - last < 100000000ull) return 0;
  last = now;
  int removed = 0;
  DIR* d = opendir("/dev/shm");
  if (!d) return 0;
  const size_t plen = strlen(kShmPrefix);
  while (dirent* e = readdir(d)) {
    if (strncmp(e->d_name, kShmPrefix, plen) != 0) continue;
    const long pid = strtol(e->d_name + plen, nullptr, 10);
    if (pid <= 0 || pid == getpid()) continue;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;  // creator alive (or not ours to judge)
    std::string name = std::string("/") + e->d_name;
    if (shm_unlink(name.c_str()) == 0) {
      ++removed;
      BATON_INFO(kSubShm, "shm: removed stale segment %s (creator pid %ld is gone)", name.c_str(), pid);
    }
  }
  closedir(d);
  return removed;
}

}  // namespace baton

// shm transport: ranks that are processes on one host share a FIFO in a POSIX shared-memory segment.
//
// The receiver creates /dev/shm/baton-<pid>-<seq>-<rand> and sends its name; the sender maps it and
// removes the name at once, so after connection nothing is left in /dev/shm even if both processes
// are killed. A segment whose sender never came (a crash during init) is removed by the receiver's
// destructor, or by the next run's sweep of segments whose creator is dead (shm_sweep.cc).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>
#include <string>

#include "misc/debug.h"
#include "shm/shm_segment.h"
#include "transport.h"

namespace baton {
namespace {

struct ShmInfo {
  char name[64];
  uint64_t bytes;
  FifoLayout layout;
};
static_assert(sizeof(ShmInfo) <= sizeof(ConnectInfo::data), "fits in ConnectInfo");

class ShmConnection : public Connection {
 public:
  ShmConnection(void* base, size_t bytes, const FifoLayout& l, std::string unlinkName)
      : base_(base), bytes_(bytes), unlinkName_(std::move(unlinkName)) {
    fifo = static_cast<ConnFifo*>(base);
    layout = l;
  }
  ~ShmConnection() override {
    munmap(base_, bytes_);
    if (!unlinkName_.empty()) shm_unlink(unlinkName_.c_str());  // ENOENT once the sender removed it
  }

 private:
  void* base_;
  size_t bytes_;
  std::string unlinkName_;
};

class ShmTransport : public Transport {
 public:
  const char* name() const override { return "SHM"; }
  bool canConnect(const PeerInfo& self, const PeerInfo& peer) const override { return self.hostHash == peer.hostHash; }

  ncclResult_t createRecv(const ConnSetup&, const FifoLayout& layout, ConnectInfo* info,
                          std::unique_ptr<Connection>* conn) override {
    sweepStaleShmSegments();
    static std::atomic<uint64_t> seq{0};
    ShmInfo si{};
    si.bytes = fifoBytes(layout);
    si.layout = layout;
    snprintf(si.name, sizeof si.name, "/%s%d-%llu-%08x", kShmPrefix, (int)getpid(),
             (unsigned long long)seq.fetch_add(1), (unsigned)std::random_device{}());
    void* base = nullptr;
    BATON_CHECK(shmCreate(si.name, si.bytes, &base));
    memset(info, 0, sizeof *info);
    memcpy(info->data, &si, sizeof si);
    conn->reset(new ShmConnection(base, si.bytes, layout, si.name));
    return ncclSuccess;
  }

  ncclResult_t connectSend(const ConnSetup&, const ConnectInfo& info, std::unique_ptr<Connection>* conn) override {
    ShmInfo si;
    memcpy(&si, info.data, sizeof si);
    si.name[sizeof si.name - 1] = 0;
    if (si.bytes != fifoBytes(si.layout))
      return batonError(ncclInternalError, "shm: connect info for %s says %llu bytes, its layout needs %zu", si.name,
                        (unsigned long long)si.bytes, fifoBytes(si.layout));
    void* base = nullptr;
    BATON_CHECK(shmOpen(si.name, si.bytes, &base));
    shm_unlink(si.name);  // both sides have it mapped: the name is no longer needed
    conn->reset(new ShmConnection(base, si.bytes, si.layout, ""));
    return ncclSuccess;
  }
};

}  // namespace

Transport* makeShmTransport() {
  static ShmTransport transport;
  return &transport;
}

}  // namespace baton

// ncclMemAlloc / ncclMemFree, ncclCommRegister / ncclCommDeregister and windows (lesson 09): the
// allocation table, the registration cache, bad input on every entry point, window mismatches
// failing on every rank, and what a communicator's destroy releases (no descriptor or mapping left).
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "comm.h"
#include "nccl.h"
#include "register/ipc_socket.h"
#include "register/mem_alloc.h"
#include "register/peer_mappings.h"
#include "register/window.h"
#include "symmetric.h"
#include "unit/unit_helpers.h"

namespace {

using bt::lastError;

// These tests count the process's descriptors; the RAS service's listener (one per process, kept
// for its life, opened by its thread at a moment of its own) would be counted, so it stays off in
// this binary (tests/fault/ras_check.sh tests it).
[[maybe_unused]] const bool kRasOff = setenv("NCCL_RAS_ENABLE", "0", 1) == 0;

int openFds() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d)) ++n;
    closedir(d);
  }
  return n;
}
int mappingsOf(const char* name) {
  std::ifstream f("/proc/self/maps");
  int n = 0;
  for (std::string line; std::getline(f, line);) n += line.find(name) != std::string::npos;
  return n;
}

std::vector<ncclComm_t> comms(int n) {
  std::vector<ncclComm_t> c(n);
  EXPECT_EQ(ncclCommInitAll(c.data(), n, nullptr), ncclSuccess) << lastError();
  return c;
}
void destroy(std::vector<ncclComm_t>& c) {
  for (ncclComm_t x : c) EXPECT_EQ(ncclCommDestroy(x), ncclSuccess) << lastError();
}

// The last error is process-wide (as NCCL's), so a thread rank that fails while another does may
// read the other's message: a rank's message must be its own reason or the one its peers give.
bool saysOneOf(const std::string& m, const char* own, const char* peers) {
  return m.find(own) != std::string::npos || m.find(peers) != std::string::npos;
}

// Runs fn(rank) on one thread per rank (a window is collective).
template <typename F>
std::vector<ncclResult_t> onEveryRank(int n, F fn, std::vector<std::string>* msgs = nullptr) {
  std::vector<ncclResult_t> res(n);
  std::vector<std::string> m(n);
  std::vector<std::thread> t;
  for (int r = 0; r < n; ++r)
    t.emplace_back([&, r] {
      res[r] = fn(r);
      m[r] = ncclGetLastError(nullptr);
    });
  for (auto& x : t) x.join();
  if (msgs) *msgs = m;
  return res;
}

TEST(MemAlloc, PageAlignedSharedAndFreed) {
  void* p = nullptr;
  // The first allocation starts the process's IPC socket (it stays): count descriptors after it.
  ASSERT_NCCL_OK(ncclMemAlloc(&p, 1));
  ASSERT_NCCL_OK(ncclMemFree(p));
  const int fds = openFds();
  ASSERT_NCCL_OK(ncclMemAlloc(&p, 1000));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 4096, 0u);
  memset(p, 0x5a, 4096);  // the whole rounded-up page is ours
  EXPECT_EQ(mappingsOf("baton-memalloc"), 1);
  ASSERT_NCCL_OK(ncclMemFree(p));
  EXPECT_EQ(mappingsOf("baton-memalloc"), 0);
  EXPECT_EQ(openFds(), fds);
  EXPECT_EQ(ncclMemFree(nullptr), ncclSuccess);  // as free(NULL)
}

TEST(MemAlloc, BadInput) {
  void* p = reinterpret_cast<void*>(0x1);
  EXPECT_NCCL_ERR(ncclMemAlloc(nullptr, 64), ncclInvalidArgument, "ncclMemAlloc", "ptr is NULL");
  EXPECT_NCCL_ERR(ncclMemAlloc(&p, 0), ncclInvalidArgument, "ncclMemAlloc", "size is 0");
  EXPECT_EQ(p, nullptr);
  int local = 0;
  EXPECT_NCCL_ERR(ncclMemFree(&local), ncclInvalidArgument, "ncclMemFree", "was not returned by ncclMemAlloc");
  ASSERT_NCCL_OK(ncclMemAlloc(&p, 8192));
  EXPECT_NCCL_ERR(ncclMemFree(static_cast<char*>(p) + 100), ncclInvalidArgument, "ncclMemFree", "100 bytes inside");
  ASSERT_NCCL_OK(ncclMemFree(p));
  EXPECT_NCCL_ERR(ncclMemFree(p), ncclInvalidArgument, "ncclMemFree", "freed already");
}

TEST(Register, CacheRefsOverlapAndBadInput) {
  auto c = comms(1);
  void* buf = nullptr;
  ASSERT_NCCL_OK(ncclMemAlloc(&buf, 1 << 20));
  char* b = static_cast<char*>(buf);
  void *h1 = nullptr, *h2 = nullptr, *h3 = nullptr;
  ASSERT_NCCL_OK(ncclCommRegister(c[0], b, 1 << 20, &h1));
  // A range the entry covers: the same handle, one more reference (NCCL's cache).
  ASSERT_NCCL_OK(ncclCommRegister(c[0], b + 4096, 8192, &h2));
  EXPECT_EQ(h1, h2);
  // Still registered: ncclMemFree refuses.
  EXPECT_NCCL_ERR(ncclMemFree(buf), ncclInvalidUsage, "ncclMemFree", "still registered");
  // Overlapping without lying inside.
  std::vector<char> heap(3 << 20);
  char* h = heap.data() + 8192;
  ASSERT_NCCL_OK(ncclCommRegister(c[0], h, 1 << 20, &h3));
  EXPECT_NCCL_ERR(ncclCommRegister(c[0], h + (1 << 19), 1 << 20, &h2), ncclInvalidUsage, "ncclCommRegister",
                  "overlaps the registration");
  EXPECT_EQ(h2, nullptr);
  EXPECT_NCCL_ERR(ncclCommRegister(c[0], nullptr, 64, &h2), ncclInvalidArgument, "ncclCommRegister", "buff is NULL");
  EXPECT_NCCL_ERR(ncclCommRegister(c[0], b, 0, &h2), ncclInvalidArgument, "ncclCommRegister", "size is 0");
  EXPECT_NCCL_ERR(ncclCommRegister(c[0], b, 64, nullptr), ncclInvalidArgument, "ncclCommRegister", "handle is NULL");
  EXPECT_NCCL_ERR(ncclCommRegister(nullptr, b, 64, &h2), ncclInvalidArgument, "ncclCommRegister", "comm is NULL");
  // A handle of another communicator.
  auto other = comms(1);
  EXPECT_NCCL_ERR(ncclCommDeregister(other[0], h3), ncclInvalidArgument, "ncclCommDeregister",
                  "belongs to communicator");
  destroy(other);
  // Deregister: twice for the two references, then a third time is an error.
  ASSERT_NCCL_OK(ncclCommDeregister(c[0], h1));
  EXPECT_NCCL_ERR(ncclMemFree(buf), ncclInvalidUsage, "ncclMemFree", "still registered");
  ASSERT_NCCL_OK(ncclCommDeregister(c[0], h1));
  EXPECT_NCCL_ERR(ncclCommDeregister(c[0], h1), ncclInvalidArgument, "ncclCommDeregister", "not a live registration");
  EXPECT_NCCL_ERR(ncclCommDeregister(c[0], nullptr), ncclInvalidArgument, "ncclCommDeregister", "not a live");
  ASSERT_NCCL_OK(ncclMemFree(buf));
  // What the user did not deregister goes with the communicator.
  destroy(c);
}

TEST(Register, DestroyReleasesRegistrationsSoMemFreeWorks) {
  auto c = comms(2);
  void* buf = nullptr;
  ASSERT_NCCL_OK(ncclMemAlloc(&buf, 1 << 16));
  void* h = nullptr;
  ASSERT_NCCL_OK(ncclCommRegister(c[0], buf, 1 << 16, &h));
  destroy(c);
  EXPECT_EQ(ncclMemFree(buf), ncclSuccess) << lastError();
}

TEST(Window, SymmetricAllReduceAndMismatchesFailOnEveryRank) {
  const int n = 3;
  auto c = comms(n);
  std::vector<void*> mem(n);
  for (int r = 0; r < n; ++r) ASSERT_NCCL_OK(ncclMemAlloc(&mem[r], 1 << 20));
  std::vector<std::string> msgs;
  // Different sizes: every rank fails, naming the sizes.
  auto res = onEveryRank(
      n,
      [&](int r) {
        ncclWindow_t w = nullptr;
        return ncclCommWindowRegister(c[r], mem[r], r == 1 ? 1 << 19 : 1 << 20, &w, NCCL_WIN_COLL_SYMMETRIC);
      },
      &msgs);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(res[r], ncclInvalidArgument) << r;
    EXPECT_NE(msgs[r].find("same size on every rank"), std::string::npos) << msgs[r];
    EXPECT_NE(msgs[r].find("524288"), std::string::npos) << msgs[r];
  }
  // Different flags.
  res = onEveryRank(
      n,
      [&](int r) {
        ncclWindow_t w = nullptr;
        return ncclCommWindowRegister(c[r], mem[r], 1 << 20, &w, r == 2 ? NCCL_WIN_DEFAULT : NCCL_WIN_COLL_SYMMETRIC);
      },
      &msgs);
  for (int r = 0; r < n; ++r) EXPECT_NE(msgs[r].find("winFlags differ"), std::string::npos) << msgs[r];
  // Not ncclMemAlloc memory, misaligned, NULL: that rank says why, the others name it.
  std::vector<char> heap(2 << 20);
  res = onEveryRank(
      n,
      [&](int r) {
        ncclWindow_t w = nullptr;
        char* aligned = heap.data() + (4096 - reinterpret_cast<uintptr_t>(heap.data()) % 4096);
        void* p = r == 0 ? static_cast<void*>(aligned) : mem[r];
        return ncclCommWindowRegister(c[r], p, 1 << 20, &w, NCCL_WIN_COLL_SYMMETRIC);
      },
      &msgs);
  EXPECT_TRUE(saysOneOf(msgs[0], "memory from ncclMemAlloc", "rank 0 passed invalid arguments")) << msgs[0];
  EXPECT_TRUE(saysOneOf(msgs[1], "rank 0 passed invalid arguments", "memory from ncclMemAlloc")) << msgs[1];
  res = onEveryRank(
      n,
      [&](int r) {
        ncclWindow_t w = nullptr;
        return ncclCommWindowRegister(c[r], static_cast<char*>(mem[r]) + (r == 1 ? 64 : 0), 4096, &w,
                                      NCCL_WIN_COLL_SYMMETRIC);
      },
      &msgs);
  EXPECT_TRUE(saysOneOf(msgs[1], "multiples of NCCL_WIN_REQUIRED_ALIGNMENT", "rank 1 passed invalid arguments"))
      << msgs[1];
  res = onEveryRank(
      n,
      [&](int r) {
        ncclWindow_t w = nullptr;
        return ncclCommWindowRegister(c[r], r == 2 ? nullptr : mem[r], 4096, &w, r == 0 ? 7 : 0);
      },
      &msgs);
  // Two ranks fail on their own here, so either may read the other's own reason last.
  for (int r : {0, 2})
    EXPECT_TRUE(saysOneOf(msgs[r], "winFlags 7", "passed invalid arguments") ||
                saysOneOf(msgs[r], "buff is NULL", "buff is NULL"))
        << msgs[r];
  EXPECT_NCCL_ERR(ncclCommWindowRegister(c[0], mem[0], 4096, nullptr, 0), ncclInvalidArgument, "ncclCommWindowRegister",
                  "win is NULL");
  EXPECT_NCCL_ERR(ncclCommWindowDeregister(c[0], reinterpret_cast<ncclWindow_t>(&heap[0])), ncclInvalidArgument,
                  "ncclCommWindowDeregister", "not a live window");

  // After all that, a good window works: a symmetric AllReduce (one-shot) and a larger one, in place.
  std::vector<ncclWindow_t> win(n);
  res = onEveryRank(
      n, [&](int r) { return ncclCommWindowRegister(c[r], mem[r], 1 << 20, &win[r], NCCL_WIN_COLL_SYMMETRIC); });
  for (int r = 0; r < n; ++r) ASSERT_EQ(res[r], ncclSuccess) << msgs[r];
  for (size_t count : {size_t(2), size_t(1000), size_t(200000)}) {
    res = onEveryRank(n, [&](int r) {
      float* f = static_cast<float*>(mem[r]);
      for (size_t i = 0; i < count; ++i) f[i] = float(r + 1) * float(i % 7);
      return ncclAllReduce(f, f, count, ncclFloat, ncclSum, c[r], nullptr);
    });
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(res[r], ncclSuccess);
      const float* f = static_cast<const float*>(mem[r]);
      size_t bad = 0;
      for (size_t i = 0; i < count; ++i) bad += f[i] != 6.0f * float(i % 7);
      EXPECT_EQ(bad, 0u) << "rank " << r << " count " << count;
    }
  }
  // Freeing a buffer that a window holds is refused; after deregistering it is fine.
  EXPECT_NCCL_ERR(ncclMemFree(mem[0]), ncclInvalidUsage, "ncclMemFree", "still registered");
  for (int r = 0; r < n; ++r) ASSERT_NCCL_OK(ncclCommWindowDeregister(c[r], win[r]));
  EXPECT_NCCL_ERR(ncclCommWindowDeregister(c[0], win[0]), ncclInvalidArgument, "ncclCommWindowDeregister",
                  "not a live window");
  for (int r = 0; r < n; ++r) ASSERT_NCCL_OK(ncclMemFree(mem[r]));
  destroy(c);
}

// A thread rank leaves the symmetric barriers as soon as it has seen every peer arrive, while a
// peer thread may still poll its pad; so its pad outlives its communicator until the last rank of
// this process frees its own (register/pad_group.h).
TEST(Window, AThreadRanksPadLivesUntilTheProcesssLastRankIsDestroyed) {
  constexpr int n = 3;
  std::vector<ncclComm_t> c(n);
  ASSERT_EQ(ncclCommInitAll(c.data(), n, nullptr), ncclSuccess) << lastError();
  std::vector<void*> mem(n);
  std::vector<ncclWindow_t> win(n);
  for (int r = 0; r < n; ++r) ASSERT_NCCL_OK(ncclMemAlloc(&mem[r], 1 << 16));
  ASSERT_NCCL_OK(ncclGroupStart());
  for (int r = 0; r < n; ++r)
    ASSERT_NCCL_OK(ncclCommWindowRegister(c[r], mem[r], 1 << 16, &win[r], NCCL_WIN_COLL_SYMMETRIC));
  ASSERT_NCCL_OK(ncclGroupEnd());
  const std::vector<baton::SymPad*> pads = c[2]->windows->pads;
  ASSERT_EQ(pads.size(), (size_t)n);
  baton::MemAllocation m;
  for (int r = 0; r < n; ++r) {
    ASSERT_NCCL_OK(ncclCommDestroy(c[r]));
    for (int q = 0; q < n; ++q)
      EXPECT_EQ(memFind(pads[q], sizeof(baton::SymPad), &m), r < n - 1)
          << "rank " << q << "'s pad after destroying ranks 0.." << r;
  }
  for (int r = 0; r < n; ++r) ASSERT_NCCL_OK(ncclMemFree(mem[r]));
}

// One thread registering six windows of different sizes on each of 4 ranks in one group: each
// rank's registrations run in call order, so rank r's k-th pairs with every peer's k-th (run at
// once, a rank's k-th could meet a peer's j-th and see sizes that differ).
TEST(Window, AGroupsRegistrationsPairInCallOrder) {
  constexpr int n = 4, k = 6;
  auto bytes = [](int w) { return (size_t)4096 << w; };
  std::vector<ncclComm_t> c = comms(n);
  std::vector<std::vector<void*>> mem(n, std::vector<void*>(k));
  std::vector<std::vector<ncclWindow_t>> win(n, std::vector<ncclWindow_t>(k));
  for (int r = 0; r < n; ++r)
    for (int w = 0; w < k; ++w) ASSERT_NCCL_OK(ncclMemAlloc(&mem[r][w], bytes(w)));
  for (int round = 0; round < 5; ++round) {
    ASSERT_NCCL_OK(ncclGroupStart());
    for (int r = 0; r < n; ++r)
      for (int w = 0; w < k; ++w)
        ASSERT_NCCL_OK(ncclCommWindowRegister(c[r], mem[r][w], bytes(w), &win[r][w], NCCL_WIN_COLL_SYMMETRIC));
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << "round " << round << ": " << lastError();
    for (int r = 0; r < n; ++r)
      for (int w = 0; w < k; ++w) {
        EXPECT_EQ(win[r][w]->size, bytes(w)) << "rank " << r << " window " << w;
        EXPECT_EQ(win[r][w]->serial, win[r][0]->serial + w) << "rank " << r << " window " << w;
      }
    ASSERT_NCCL_OK(ncclGroupStart());
    for (int r = 0; r < n; ++r)
      for (int w = 0; w < k; ++w) ASSERT_NCCL_OK(ncclCommWindowDeregister(c[r], win[r][w]));
    ASSERT_NCCL_OK(ncclGroupEnd());
  }
  destroy(c);
  for (int r = 0; r < n; ++r)
    for (int w = 0; w < k; ++w) ASSERT_NCCL_OK(ncclMemFree(mem[r][w]));
}

// Two processes: a registered AllReduce maps the peer's ncclMemAlloc buffer through the IPC socket,
// and destroying the communicator unmaps it (no mapping or descriptor left behind).
TEST(Register, ProcessesMapPeersAndDestroyUnmaps) {
  ncclUniqueId id;
  ASSERT_NCCL_OK(ncclGetUniqueId(&id));
  const int fdsBefore = openFds();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  const int rank = child == 0 ? 1 : 0;
  auto run = [&]() -> std::string {
    ncclComm_t comm = nullptr;
    if (ncclCommInitRank(&comm, 2, id, rank) != ncclSuccess) return std::string("init: ") + lastError();
    const size_t count = 3 << 20;  // 12 MiB: the direct ring path
    void* buf = nullptr;
    void* h = nullptr;
    if (ncclMemAlloc(&buf, count * 4) != ncclSuccess) return "alloc";
    if (ncclCommRegister(comm, buf, count * 4, &h) != ncclSuccess) return std::string("register: ") + lastError();
    int32_t* x = static_cast<int32_t*>(buf);
    for (size_t i = 0; i < count; ++i) x[i] = int32_t(i % 1000) * (rank + 1);
    if (ncclAllReduce(x, x, count, ncclInt32, ncclSum, comm, nullptr) != ncclSuccess)
      return std::string("allreduce: ") + lastError();
    for (size_t i = 0; i < count; ++i)
      if (x[i] != int32_t(i % 1000) * 3) return "wrong value at " + std::to_string(i);
    const int mapped = mappingsOf("baton-memalloc");
    if (mapped < 2) return "expected our buffer and the peer's mapped, found " + std::to_string(mapped);
    if (ncclCommDeregister(comm, h) != ncclSuccess) return "deregister";
    if (ncclCommDestroy(comm) != ncclSuccess) return "destroy";
    if (ncclMemFree(buf) != ncclSuccess) return std::string("free: ") + lastError();
    if (int left = mappingsOf("baton-memalloc"); left != 0) return std::to_string(left) + " mappings left";
    return "";
  };
  const std::string err = run();
  if (child == 0) {
    if (!err.empty()) fprintf(stderr, "child: %s\n", err.c_str());
    _exit(err.empty() ? 0 : 1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_EQ(err, "");
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  // The IPC server's listening socket stays for the process's life; nothing else may.
  EXPECT_LE(openFds(), fdsBefore + 1);
}

// The owner's IPC answer names what an allocation is (a memfd here; a CUDA device's cuMem memory on
// a GPU), and a mapping is handed out only as the kind its caller asked for: a window of device
// memory never gives the CPU a pointer into host memory it took for a device's, nor the reverse.
TEST(PeerMappings, AnAllocationIsHandedOutOnlyAsItsOwnKind) {
  void* buf = nullptr;
  ASSERT_NCCL_OK(baton::memAllocHost(&buf, 8192));
  baton::MemAllocation a;
  ASSERT_TRUE(baton::memFind(buf, 8192, &a));
  EXPECT_EQ(a.device, -1);
  int fd = -1, device = 7;
  uint64_t base = 0, size = 0;
  ASSERT_NCCL_OK(baton::ipcRequestAllocation(getpid(), a.id, nullptr, &fd, &base, &size, &device));
  EXPECT_EQ(device, -1);
  EXPECT_EQ(base, reinterpret_cast<uint64_t>(buf));
  EXPECT_EQ(size, a.size);
  close(fd);
  {
    baton::PeerMappings maps;
    void* p = buf;
    EXPECT_NCCL_ERR(maps.translate(getpid(), a.id, base + 64, 128, &p, /*device=*/true), ncclInvalidUsage,
                    "host memory, where device memory was expected");
    EXPECT_EQ(p, nullptr);
    ASSERT_NCCL_OK(maps.translate(getpid(), a.id, base + 64, 128, &p, /*device=*/false));
    ASSERT_NE(p, nullptr);
    EXPECT_NE(p, static_cast<char*>(buf) + 64);  // a second mapping of the same pages
    *static_cast<volatile int32_t*>(p) = 12345;
    EXPECT_EQ(*reinterpret_cast<volatile int32_t*>(static_cast<char*>(buf) + 64), 12345);
    EXPECT_EQ(maps.mappedCount(), 1u);
  }
  ASSERT_NCCL_OK(baton::memFree(buf));
}

}  // namespace

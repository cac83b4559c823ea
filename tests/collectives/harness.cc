// The ranks-as-threads harness of the collective suites (harness.h): communicators cached per
// rank count, and running a case with a thread per rank or one thread driving every rank in a group.
#include "collectives/harness.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

namespace bt {

namespace {
// Keep freed buffers in the heap instead of returning them to the kernel: each large case allocates
// tens of MiB, and page faults would otherwise cost more than the collectives themselves.
[[maybe_unused]] const bool gMallocTuned = [] {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  return true;
}();
}  // namespace

Comms initAll(int n) {
  Comms comms(n, nullptr);
  ncclResult_t r = ncclCommInitAll(comms.data(), n, nullptr);
  if (r != ncclSuccess) {
    ADD_FAILURE() << "ncclCommInitAll(" << n << "): " << ncclGetErrorString(r) << ": " << ncclGetLastError(nullptr);
    return {};
  }
  return comms;
}

ncclResult_t waitReady(ncclComm_t comm, double timeoutSec) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSec);
  ncclResult_t state = ncclInProgress;
  while (true) {
    ncclResult_t r = ncclCommGetAsyncError(comm, &state);
    if (r != ncclSuccess) return r;
    if (state != ncclInProgress || std::chrono::steady_clock::now() > deadline) return state;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

Comms initGroup(int n, const ncclConfig_t* config) {
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) {
    ADD_FAILURE() << "ncclGetUniqueId: " << ncclGetLastError(nullptr);
    return {};
  }
  Comms comms(n, nullptr);
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  if (config) cfg = *config;
  const bool blocking = cfg.blocking != 0;
  ncclGroupStart();
  for (int r = 0; r < n; ++r) {
    ncclResult_t res =
        config ? ncclCommInitRankConfig(&comms[r], n, id, r, &cfg) : ncclCommInitRank(&comms[r], n, id, r);
    if (res != ncclSuccess && !(res == ncclInProgress && !blocking))
      ADD_FAILURE() << "ncclCommInitRank rank " << r << ": " << ncclGetErrorString(res);
  }
  ncclResult_t end = ncclGroupEnd();
  if (end != ncclSuccess && !(end == ncclInProgress && !blocking)) {
    ADD_FAILURE() << "ncclGroupEnd after " << n << " inits: " << ncclGetErrorString(end) << ": "
                  << ncclGetLastError(nullptr);
    return {};
  }
  for (int r = 0; r < n; ++r) {
    ncclResult_t st = waitReady(comms[r]);
    if (st != ncclSuccess) {
      ADD_FAILURE() << "comm " << r << "/" << n << " not ready: " << ncclGetErrorString(st);
      return {};
    }
  }
  return comms;
}

void destroyComms(Comms& comms) {
  for (ncclComm_t c : comms)
    if (c) {
      EXPECT_EQ(ncclCommDestroy(c), ncclSuccess) << ncclGetLastError(nullptr);
    }
  comms.clear();
}

namespace {
std::map<int, Comms>& cache() {
  static std::map<int, Comms> m;
  return m;
}
// Destroys the cached communicators after the last test (while gtest still records failures).
class CommCacheEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    for (auto& [n, comms] : cache()) {
      EXPECT_EQ(detachTestMemory(comms), ncclSuccess) << ncclGetLastError(nullptr);
      destroyComms(comms);
    }
    cache().clear();
  }
};
[[maybe_unused]] ::testing::Environment* const gCommCacheEnv =
    ::testing::AddGlobalTestEnvironment(new CommCacheEnvironment);
}  // namespace

const Comms& cachedComms(int n) {
  auto it = cache().find(n);
  if (it != cache().end()) return it->second;
  Comms comms = n % 2 ? initAll(n) : initGroup(n);
  EXPECT_EQ(attachTestMemory(comms), ncclSuccess) << ncclGetLastError(nullptr);
  return cache().emplace(n, std::move(comms)).first->second;
}

// Runs fn with NCCL_DEBUG=INFO for `subsys` written to a file, and returns what was logged.
std::string captureLog(const char* subsys, const std::function<void()>& fn) {
  const std::string path = "/tmp/baton-log-" + std::to_string(getpid()) + ".log";
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // still the way to re-read NCCL_DEBUG
  {
    ScopedEnv debug({{"NCCL_DEBUG", "INFO"}, {"NCCL_DEBUG_SUBSYS", subsys}, {"NCCL_DEBUG_FILE", path.c_str()}});
    ncclResetDebugInit();
    fn();
  }
  ncclResetDebugInit();
#pragma GCC diagnostic pop
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  unlink(path.c_str());
  return text.str();
}

std::string runRanks(int n, Drive d, const std::function<ncclResult_t(int)>& fn) {
  std::vector<ncclResult_t> res(n, ncclSuccess);
  std::vector<std::string> msg(n);
  ncclResult_t end = ncclSuccess;
  if (d == Drive::Threads) {
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r)
      threads.emplace_back([&, r] {
        res[r] = fn(r);
        if (res[r] != ncclSuccess) msg[r] = ncclGetLastError(nullptr);
      });
    for (auto& t : threads) t.join();
  } else {
    ncclGroupStart();
    for (int r = 0; r < n; ++r) {
      res[r] = fn(r);
      if (res[r] != ncclSuccess) msg[r] = ncclGetLastError(nullptr);
    }
    end = ncclGroupEnd();
  }
  std::string err;
  for (int r = 0; r < n; ++r)
    if (res[r] != ncclSuccess)
      err += "rank " + std::to_string(r) + " returned " + ncclGetErrorString(res[r]) + ": " + msg[r] + "; ";
  if (end != ncclSuccess)
    err += std::string("ncclGroupEnd returned ") + ncclGetErrorString(end) + ": " + ncclGetLastError(nullptr);
  return err;
}

namespace {
// fn(r) for every rank; on a few threads when `parallel` (large cases: filling and checking
// buffers costs more than the collective).
void forRanks(int n, bool parallel, const std::function<void(int)>& fn) {
  const int workers = parallel ? std::min(n, (int)std::max(2u, std::thread::hardware_concurrency())) : 1;
  if (workers <= 1) {
    for (int r = 0; r < n; ++r) fn(r);
    return;
  }
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w)
    threads.emplace_back([&, w] {
      for (int r = w; r < n; r += workers) fn(r);
    });
  for (auto& t : threads) t.join();
}
}  // namespace

std::string runCase(const Comms& comms, const CollCase& c, Drive d) {
  const int n = (int)comms.size();
  if (n == 0) return describe(c, n) + ": no communicators (their creation failed)";
  if (c.coll == Coll::AlltoAll && c.inPlace) d = Drive::Threads;
  const bool parallel = c.count * typeSize(c.type) >= (256u << 10);
  std::vector<RankBuffers> bufs(n);
  std::vector<std::string> errs(n);
  forRanks(n, parallel, [&](int r) {
    if (ncclResult_t e = prepareRank(c, n, r, comms[r], bufs[r]); e != ncclSuccess)
      errs[r] = std::string("prepare: ") + ncclGetErrorString(e) + ": " + ncclGetLastError(nullptr);
  });
  std::string err;
  for (int r = 0; r < n; ++r)
    if (!errs[r].empty()) err += "rank " + std::to_string(r) + ": " + errs[r] + "; ";
  if (!err.empty()) return describe(c, n) + ": " + err;
  err = runRanks(n, d, [&](int r) { return issueRank(c, n, r, comms[r], bufs[r]); });
  // The expected reduction, computed once for all ranks (in slices, in parallel).
  std::vector<char> reducedAll;
  if (reduces(c.coll) && c.count) {
    const size_t total = c.coll == Coll::ReduceScatter ? c.count * n : c.count, ts = typeSize(c.type);
    reducedAll.resize(total * ts);
    const int slices = parallel ? 8 : 1;
    forRanks(slices, parallel, [&](int s) {
      const size_t lo = total * s / slices, hi = total * (s + 1) / slices;
      fillExpected(c.type, c.op, n, c.seed, lo, hi - lo, reducedAll.data() + lo * ts);
    });
  }
  forRanks(n, parallel,
           [&](int r) { errs[r] = checkRank(c, n, r, comms[r], bufs[r], c.count ? &reducedAll : nullptr); });
  for (int r = 0; r < n; ++r)
    if (!errs[r].empty()) err += "rank " + std::to_string(r) + ": " + errs[r] + "; ";
  return err.empty() ? err : describe(c, n) + " (" + driveName(d) + "): " + err;
}

void runGrouped(std::vector<GroupItem>& items, Drive d, ncclResult_t expect) {
  auto nOf = [](const GroupItem& it) { return (int)it.comms->size(); };
  for (GroupItem& it : items) ASSERT_GT(nOf(it), 0) << "no communicators (their creation failed)";
  for (GroupItem& it : items) {
    it.bufs.resize(nOf(it));
    for (int r = 0; r < nOf(it); ++r) NCCL_ASSERT(prepareRank(it.c, nOf(it), r, (*it.comms)[r], it.bufs[r]));
  }
  auto issue = [&](GroupItem& it, int r) { return issueRank(it.c, nOf(it), r, (*it.comms)[r], it.bufs[r]); };
  if (d == Drive::Group) {
    NCCL_ASSERT(ncclGroupStart());
    for (GroupItem& it : items)
      for (int r = 0; r < nOf(it); ++r)
        EXPECT_EQ(issue(it, r), ncclSuccess) << describe(it.c, nOf(it)) << " rank " << r;
    EXPECT_EQ(ncclGroupEnd(), expect) << ncclGetLastError(nullptr);
  } else {
    const int n = nOf(items[0]);
    std::vector<ncclResult_t> res(n);
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r)
      threads.emplace_back([&, r] {
        ncclGroupStart();
        for (GroupItem& it : items) EXPECT_EQ(issue(it, r), ncclSuccess) << describe(it.c, n) << " rank " << r;
        res[r] = ncclGroupEnd();
      });
    for (auto& t : threads) t.join();
    for (int r = 0; r < n; ++r) EXPECT_EQ(res[r], expect) << "rank " << r;
  }
  for (GroupItem& it : items)
    for (ncclComm_t comm : *it.comms) EXPECT_EQ(waitReady(comm), ncclSuccess);
  for (GroupItem& it : items)
    for (int r = 0; r < nOf(it); ++r)
      EXPECT_EQ(checkRank(it.c, nOf(it), r, (*it.comms)[r], it.bufs[r]), "")
          << describe(it.c, nOf(it)) << " rank " << r;
}

std::vector<GroupItem> mixedCases(const Comms& comms, Coll coll, int howMany, uint64_t seed) {
  const int n = (int)comms.size();
  const size_t counts[] = {0, 1, 7, 1023, 5001, 70001};
  std::vector<GroupItem> items;
  for (int i = 0; i < howMany; ++i) {
    CollCase c{coll,
               kAllTypes[(i * 5) % std::size(kAllTypes)],
               kAllOps[i % std::size(kAllOps)],
               counts[(i * 7) % std::size(counts)],
               (i * 3) % n,
               i % 3 == 1};
    if (c.inPlace && (coll == Coll::AlltoAll || coll == Coll::SendRecv)) c.inPlace = false;
    c.seed = seed + i;
    items.push_back({&comms, c, {}});
  }
  return items;
}

int runMatrix(const Comms& comms, Coll coll, ncclDataType_t type, const Matrix& m) {
  const int n = (int)comms.size();
  if (n == 0) {
    ADD_FAILURE() << collName(coll) << ": no communicators (their creation failed)";
    return 0;
  }
  std::vector<int> roots{0};
  if (rooted(coll) && !m.roots.empty()) {
    roots.clear();
    for (int r : m.roots) roots.push_back(r < 0 ? n + r : r);
  } else if (rooted(coll)) {
    if (m.midRoot && n / 2 != 0) roots.push_back(n / 2);
    if (n - 1 != roots.back()) roots.push_back(n - 1);
  }
  const std::vector<Op> ops = reduces(coll) ? m.ops : std::vector<Op>{Op::Sum};
  int cases = 0, failures = 0;
  for (size_t io = 0; io < ops.size(); ++io)
    for (size_t ic = 0; ic < m.counts.size(); ++ic)
      for (size_t ir = 0; ir < roots.size(); ++ir)
        for (size_t ip = 0; ip < m.placements.size(); ++ip) {
          const bool inPlace = m.placements[ip];
          if (inPlace && coll == Coll::SendRecv) continue;
          const size_t turn = io + ic + ir + ip;  // alternates along every axis
          for (size_t k = 0; k < (m.everyDrive ? m.drives.size() : 1); ++k) {
            const Drive d = m.drives[(m.everyDrive ? k : turn) % m.drives.size()];
            const size_t count = m.counts[ic] == kLarge ? largeCount(coll, type, n) : m.counts[ic];
            CollCase c{coll, type, ops[io], count, roots[ir], inPlace};
            c.seed = m.seed + cases++;
            std::string e = runCase(comms, c, d);
            if (e.empty()) continue;
            ADD_FAILURE() << e;
            if (++failures >= 5) return cases;
          }
        }
  return cases;
}

int runSmall(const Comms& comms, Coll coll, ncclDataType_t type) { return runMatrix(comms, coll, type); }

int runLarge(const Comms& comms, Coll coll, ncclDataType_t type, const std::vector<ncclDataType_t>& allOpsTypes) {
  Matrix m;
  m.ops =
      std::find(allOpsTypes.begin(), allOpsTypes.end(), type) != allOpsTypes.end() ? kOps : std::vector<Op>{Op::Sum};
  m.counts = {kLarge};
  m.placements = {false};
  m.drives = {Drive::Group};
  m.roots = {-1};
  int cases = runMatrix(comms, coll, type, m);
  m.placements = {true};
  m.drives = {Drive::Threads};
  m.roots = {0};
  m.seed = 1000;
  return cases + runMatrix(comms, coll, type, m);
}

std::string typeRanksName(const ::testing::TestParamInfo<TypeRanks>& info) {
  return std::string(typeName(std::get<0>(info.param))) + "_" + std::to_string(std::get<1>(info.param)) + "ranks";
}

ScopedEnv::ScopedEnv(const Vars& vars) {
  for (auto& [name, value] : vars) {
    const char* old = getenv(name);
    saved_.push_back({name, old ? std::optional<std::string>(old) : std::nullopt});
    if (value) setenv(name, value, 1);
    else unsetenv(name);
  }
}

ScopedEnv::~ScopedEnv() {
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
    if (it->second) setenv(it->first.c_str(), it->second->c_str(), 1);
    else unsetenv(it->first.c_str());
  }
}

}  // namespace bt

// Ranks as processes: `baton-run -n N rank_worker` for N = 1 (--quick), 2, 3 and 4, each process one
// rank running the exact-data checks of tests/process/coll_check.cc over the shm transport.
// Asserts exit status 0, that every rank reports the same number of passed checks, and that no
// /dev/shm/baton-* segment is left behind by the (now dead) rank processes. Also: the single-copy
// path between processes (lesson 09), forced for every size; AlltoAll's pairwise and Bruck algorithms
// (lesson 12); zero copy through NET's proxies on registered buffers (lesson 09).
//
// Paths: $BATON_BUILD/bin/baton-run (default build) and $TESTDIR/rank_worker (default build/tests),
// relative to the working directory (make test runs from the repository root).
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace bt {
namespace {

std::string envOr(const char* name, const char* def) {
  const char* v = getenv(name);
  return v && *v ? v : def;
}

bool executable(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && (st.st_mode & S_IXUSR);
}

// Runs `cmd` through the shell; returns its exit status (-1 if it did not exit) and its output.
int runCommand(const std::string& cmd, std::string* output) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  size_t got;
  while ((got = fread(buf, 1, sizeof buf, p)) > 0) output->append(buf, got);
  const int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::set<std::string> shmSegments() {
  std::set<std::string> names;
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d))
      if (strncmp(e->d_name, "baton-", 6) == 0) names.insert(e->d_name);
    closedir(d);
  }
  return names;
}

bool alive(long pid) { return kill((pid_t)pid, 0) == 0 || errno != ESRCH; }

class ProcessRanks : public ::testing::TestWithParam<int> {};

TEST_P(ProcessRanks, BatonRunRankWorker) {
  const int n = GetParam();
  const std::string run = envOr("BATON_BUILD", "build") + "/bin/baton-run";
  const std::string worker = envOr("TESTDIR", "build/tests") + "/rank_worker";
  if (!executable(run) || !executable(worker))
    GTEST_SKIP() << run << " or " << worker << " is not built (make tools " << worker << "), or the working "
                 << "directory is not the repository root";
  const std::set<std::string> before = shmSegments();
  std::string out;
  const std::string cmd =
      "timeout -k 5 170 " + run + " -n " + std::to_string(n) + " " + worker + (n == 1 ? " --quick" : "");
  const int status = runCommand(cmd, &out);
  EXPECT_EQ(status, 0) << cmd << "\n" << out;

  // "[R] rank R pid P" and "[R] rank R: K checks passed" from every rank, K the same everywhere.
  std::map<int, long> pids;
  std::map<int, int> passed;
  const std::regex pidLine(R"(\[(\d+)\] rank (\d+) pid (\d+))"),
      passLine(R"(\[(\d+)\] rank (\d+): (\d+) checks passed)");
  for (std::sregex_iterator it(out.begin(), out.end(), pidLine), end; it != end; ++it)
    pids[std::stoi((*it)[2])] = std::stol((*it)[3]);
  for (std::sregex_iterator it(out.begin(), out.end(), passLine), end; it != end; ++it)
    passed[std::stoi((*it)[2])] = std::stoi((*it)[3]);
  EXPECT_EQ((int)pids.size(), n) << out;
  ASSERT_EQ((int)passed.size(), n) << out;
  for (auto& [r, k] : passed) {
    EXPECT_GT(k, 0) << "rank " << r;
    EXPECT_EQ(k, passed.begin()->second) << "rank " << r << " ran a different number of checks\n" << out;
  }

  // Segments of the rank processes (named /dev/shm/baton-<creator pid>-...) must all be gone.
  for (const std::string& name : shmSegments()) {
    const long creator = strtol(name.c_str() + 6, nullptr, 10);
    bool ours = false;
    for (auto& [r, pid] : pids) ours |= pid == creator;
    EXPECT_FALSE(ours) << "/dev/shm/" << name << " left behind by a rank process (pid " << creator << ")";
    EXPECT_FALSE(!before.count(name) && !alive(creator))
        << "/dev/shm/" << name << " left behind by dead pid " << creator;
  }
}
INSTANTIATE_TEST_SUITE_P(, ProcessRanks, ::testing::Values(1, 2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& i) { return std::to_string(i.param) + "ranks"; });

size_t countOf(const std::string& text, const std::string& what) {
  size_t k = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++k;
  return k;
}

// Lines of `text` that contain both `a` and `b`.
size_t linesWith(const std::string& text, const std::string& a, const std::string& b) {
  size_t n = 0, at = 0;
  while (at < text.size()) {
    const size_t end = std::min(text.find('\n', at), text.size());
    const std::string line = text.substr(at, end - at);
    n += line.find(a) != std::string::npos && line.find(b) != std::string::npos;
    at = end + 1;
  }
  return n;
}

// Plain (malloc) buffers between processes take single copies (cross-memory attach) where the
// kernel permits them: forced for every AllReduce, AllGather, ReduceScatter, Broadcast and Reduce
// size here (and on 3 processes even where cores are fewer, which the default avoids), the
// exact-data checks of 3 processes still pass, and the INFO lines show the path was taken.
// BATON_SINGLE_COPY=0 turns it off.
TEST(ProcessSingleCopy, EveryDirectCollectiveExactAndTheInfoLinesSayIt) {
  const std::string run = envOr("BATON_BUILD", "build") + "/bin/baton-run";
  const std::string worker = envOr("TESTDIR", "build/tests") + "/rank_worker";
  if (!executable(run) || !executable(worker)) GTEST_SKIP() << run << " or " << worker << " is not built";
  // Plain buffers whatever suite runs this (registered or window ones would be mapped instead).
  const std::string env =
      "BATON_TEST_MEMORY=plain BATON_SINGLE_COPY=1 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL NCCL_PROTO=Simple "
      "BATON_SINGLE_COPY_BYTES=0 ";
  std::string out;
  int status = runCommand(env + "timeout -k 5 170 " + run + " -n 3 " + worker, &out);
  const size_t refused = out.find("no single copy to rank");
  if (refused != std::string::npos)
    GTEST_SKIP() << "the kernel refuses cross-memory attach here:"
                 << out.substr(refused, out.find('\n', refused) - refused);
  ASSERT_EQ(status, 0) << out.substr(0, 4000);
  EXPECT_EQ(countOf(out, "single copy (cross-memory attach) with 2 of 2 peer ranks"), 3u) << out.substr(0, 4000);
  EXPECT_GT(countOf(out, "algorithm Ring protocol Simple channels 1 direct (single copy)"), 100u);
  // AllGather, ReduceScatter, Broadcast and Reduce take the direct ring too (ring_direct.h), with
  // single copies.
  for (const char* f :
       {"AllReduce: opCount", "AllGather: opCount", "ReduceScatter: opCount", "Broadcast: opCount", " Reduce: opCount"})
    EXPECT_GT(linesWith(out, f, "direct (single copy)"), 20u) << f;
  EXPECT_EQ(countOf(out, "checks passed"), 3u);

  out.clear();
  status = runCommand(env + "BATON_SINGLE_COPY=0 timeout -k 5 170 " + run + " -n 2 " + worker + " --quick", &out);
  ASSERT_EQ(status, 0) << out.substr(0, 4000);
  EXPECT_EQ(countOf(out, "single copy"), 0u);
  EXPECT_EQ(countOf(out, "checks passed"), 2u);
}

// Registered buffers between processes (lesson 09): the direct ring reads and writes the peers'
// ncclMemAlloc memory, which they map (zero copy). The processes-registered suites check the data
// only; this checks the path: every direct-ring collective's COLL line says "direct (zero copy)",
// and with BATON_DIRECT=0 none does while the checks still pass.
TEST(ProcessZeroCopy, RegisteredBuffersTakeTheDirectRingAndTheInfoLinesSayIt) {
  const std::string run = envOr("BATON_BUILD", "build") + "/bin/baton-run";
  const std::string worker = envOr("TESTDIR", "build/tests") + "/rank_worker";
  if (!executable(run) || !executable(worker)) GTEST_SKIP() << run << " or " << worker << " is not built";
  const std::string env =
      "BATON_TEST_MEMORY=registered NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL NCCL_PROTO=Simple "
      "BATON_SINGLE_COPY_BYTES=0 ";
  std::string out;
  int status = runCommand(env + "timeout -k 5 170 " + run + " -n 3 " + worker + " --quick", &out);
  ASSERT_EQ(status, 0) << out.substr(0, 4000);
  EXPECT_EQ(countOf(out, "checks passed"), 3u);
  for (const char* f :
       {"AllReduce: opCount", "AllGather: opCount", "ReduceScatter: opCount", "Broadcast: opCount", " Reduce: opCount"})
    EXPECT_GT(linesWith(out, f, "direct (zero copy)"), 0u) << f << "\n" << out.substr(0, 4000);

  out.clear();
  status = runCommand(env + "BATON_DIRECT=0 timeout -k 5 170 " + run + " -n 2 " + worker + " --quick", &out);
  ASSERT_EQ(status, 0) << out.substr(0, 4000);
  EXPECT_EQ(countOf(out, "direct (zero copy)"), 0u);
  EXPECT_EQ(countOf(out, "checks passed"), 2u);
}

// By default AllReduces take single copies only where the processes' caches are far apart, as a
// cache line's round trip measured at init says (src/topo/cache_distance.h); AllGathers take them
// either way. BATON_SINGLE_COPY_FAR_NS moves the line: 0 makes every machine far, a second near.
// Every check of the worker passes both ways and the probe's segment does not outlive init.
TEST(ProcessSingleCopy, AllReducesFollowTheMeasuredCacheDistance) {
  const std::string run = envOr("BATON_BUILD", "build") + "/bin/baton-run";
  const std::string worker = envOr("TESTDIR", "build/tests") + "/rank_worker";
  if (!executable(run) || !executable(worker)) GTEST_SKIP() << run << " or " << worker << " is not built";
  const std::string env =
      "env -u BATON_SINGLE_COPY BATON_TEST_MEMORY=plain NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL "
      "BATON_SINGLE_COPY_BYTES=0 NCCL_PROTO=Simple ";  // whatever the suite forces: the direct ring is Simple's
  for (const bool far : {true, false}) {
    std::string out;
    const int status = runCommand(env + "BATON_SINGLE_COPY_FAR_NS=" + (far ? "0" : "1000000000") +
                                      " timeout -k 5 170 " + run + " -n 2 " + worker + " --quick",
                                  &out);
    if (out.find("no single copy to rank") != std::string::npos ||
        out.find("more local ranks than cores") != std::string::npos)
      GTEST_SKIP() << "single copies are not the default here (kernel refuses them, or fewer than 2 cores)";
    ASSERT_EQ(status, 0) << out.substr(0, 4000);
    EXPECT_EQ(countOf(out, far ? "(caches far apart: a cache line's round trip between processes took "
                               : "(caches near: a cache line's round trip between processes took "),
              2u)
        << out.substr(0, 4000);
    // The probe answered: a round trip, not the 200 ms budget a silent peer is charged.
    const std::string took = "round trip between processes took ";
    const size_t at = out.find(took);
    ASSERT_NE(at, std::string::npos);
    EXPECT_LT(std::stod(out.substr(at + took.size())), 1e6) << out.substr(at, 80);
    EXPECT_EQ(linesWith(out, "AllReduce: opCount", "direct (single copy)") > 0, far) << (far ? "far" : "near");
    EXPECT_GT(linesWith(out, "AllGather: opCount", "direct (single copy)"), 0u) << (far ? "far" : "near");
    EXPECT_EQ(countOf(out, "checks passed"), 2u);
  }
  for (const std::string& name : shmSegments())
    EXPECT_EQ(name.find("-cache-"), std::string::npos) << name << " left behind";
}

// Sums the first number after `what` on every line that has it.
uint64_t sumAfter(const std::string& text, const std::string& what) {
  uint64_t sum = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const size_t at = line.find(what);
    if (at != std::string::npos) sum += strtoull(line.c_str() + at + what.size(), nullptr, 10);
  }
  return sum;
}

// NET zero copy (lesson 09): with only NET between them (NCCL_P2P_DISABLE, NCCL_SHM_DISABLE), 2
// processes on registered buffers run the exact-data checks, and the proxies' closing INFO lines
// show steps sent from and received into the user buffers (the rank copied none of those). With
// BATON_NET_ZERO_COPY=0 no step goes zero copy and the checks still pass.
TEST(ProcessNetZeroCopy, RegisteredSendRecvSkipsTheStagingCopies) {
  const std::string run = envOr("BATON_BUILD", "build") + "/bin/baton-run";
  const std::string worker = envOr("TESTDIR", "build/tests") + "/rank_worker";
  if (!executable(run) || !executable(worker)) GTEST_SKIP() << run << " or " << worker << " is not built";
  const std::string env =
      "BATON_TEST_MEMORY=registered NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo NCCL_DEBUG=INFO "
      "NCCL_DEBUG_SUBSYS=NET ";
  std::string out;
  int status = runCommand(env + "timeout -k 5 170 " + run + " -n 2 " + worker, &out);
  ASSERT_EQ(status, 0) << out.substr(0, 4000);
  EXPECT_EQ(countOf(out, "checks passed"), 2u);
  const uint64_t sent = sumAfter(out, " sent "), received = sumAfter(out, " received ");
  // One line per rank for the send/recv connections, more for the rings' (the next test).
  EXPECT_GE(countOf(out, "zero copy (from registered user buffers)"), 2u) << out.substr(0, 4000);
  EXPECT_GE(countOf(out, "zero copy (into registered user buffers)"), 2u) << out.substr(0, 4000);
  EXPECT_GT(sent, 100u);
  // Steps whose message arrived before the rank reached its receive land in the FIFO (10-20% here
  // when idle; more when the machine is loaded and senders run ahead): a good share still lands.
  EXPECT_GT(received, sent / 4) << out.substr(0, 4000);

  out.clear();
  status = runCommand(env + "BATON_NET_ZERO_COPY=0 timeout -k 5 170 " + run + " -n 2 " + worker + " --quick", &out);
  ASSERT_EQ(status, 0) << out.substr(0, 4000);
  EXPECT_EQ(countOf(out, "checks passed"), 2u);
  EXPECT_EQ(countOf(out, "zero copy"), 0u);
}

// NET zero copy for ring collectives (lesson 09): 3 processes with only NET between them, on
// registered buffers and the Simple protocol, run the exact-data checks; every collective's COLL
// line says it took the path, and the proxies sent steps from and received steps into the user
// buffers. With BATON_NET_ZERO_COPY=0 no collective takes it and the checks still pass.
TEST(ProcessNetZeroCopy, RegisteredRingCollectivesSkipTheStagingCopies) {
  const std::string run = envOr("BATON_BUILD", "build") + "/bin/baton-run";
  const std::string worker = envOr("TESTDIR", "build/tests") + "/rank_worker";
  if (!executable(run) || !executable(worker)) GTEST_SKIP() << run << " or " << worker << " is not built";
  const std::string env =
      "BATON_TEST_MEMORY=registered NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo NCCL_PROTO=Simple "
      "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=NET,COLL ";
  std::string out;
  int status = runCommand(env + "timeout -k 5 170 " + run + " -n 3 " + worker, &out);
  ASSERT_EQ(status, 0) << out.substr(0, 4000);
  EXPECT_EQ(countOf(out, "checks passed"), 3u);
  for (const char* f :
       {"AllReduce: opCount", "AllGather: opCount", "ReduceScatter: opCount", "Broadcast: opCount", " Reduce: opCount"})
    EXPECT_GT(linesWith(out, f, "algorithm Ring protocol Simple channels 1 NET zero copy"), 20u) << f;
  EXPECT_GT(sumAfter(out, " sent "), 1000u) << out.substr(0, 4000);
  EXPECT_GT(sumAfter(out, " received "), 100u) << out.substr(0, 4000);

  out.clear();
  status = runCommand(env + "BATON_NET_ZERO_COPY=0 timeout -k 5 170 " + run + " -n 3 " + worker + " --quick", &out);
  ASSERT_EQ(status, 0) << out.substr(0, 4000);
  EXPECT_EQ(countOf(out, "checks passed"), 3u);
  EXPECT_EQ(countOf(out, "zero copy"), 0u);
}

// AlltoAll's round algorithms between processes (lesson 12): the quick exact-data checks on 3 ranks
// (AlltoAllv among them) with pairwise and with Bruck forced, and the COLL lines saying which ran.
TEST(ProcessAlltoAll, PairwiseAndBruckExact) {
  const std::string run = envOr("BATON_BUILD", "build") + "/bin/baton-run";
  const std::string worker = envOr("TESTDIR", "build/tests") + "/rank_worker";
  if (!executable(run) || !executable(worker)) GTEST_SKIP() << run << " or " << worker << " is not built";
  for (const std::string algo : {"pairwise", "bruck"}) {
    std::string out;
    const int status =
        runCommand("BATON_ALLTOALL_ALGO=" + algo + " NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL timeout -k 5 170 " + run +
                       " -n 3 " + worker + " --quick",
                   &out);
    ASSERT_EQ(status, 0) << algo << "\n" << out.substr(0, 4000);
    EXPECT_EQ(countOf(out, "checks passed"), 3u) << algo;
    // ncclAlltoAll's and batonAlltoAllv's COLL lines, every one naming the forced algorithm.
    const size_t calls = countOf(out, "AlltoAll: sendbuff") + countOf(out, "AlltoAllv: sendbuff");
    EXPECT_GT(countOf(out, "AlltoAllv: sendbuff"), 0u) << algo;
    EXPECT_GT(calls, 3u) << algo;
    EXPECT_EQ(calls, countOf(out, "algorithm " + algo)) << algo;
  }
}

// AlltoAll by stores into windows between processes (lesson 12): the quick checks on 3 ranks with
// every buffer in a symmetric window; every ncclAlltoAll and the suite's AlltoAllvs (whose blocks
// lie at different offsets on each rank) take it on their own.
TEST(ProcessAlltoAll, WindowStoresExact) {
  const std::string run = envOr("BATON_BUILD", "build") + "/bin/baton-run";
  const std::string worker = envOr("TESTDIR", "build/tests") + "/rank_worker";
  if (!executable(run) || !executable(worker)) GTEST_SKIP() << run << " or " << worker << " is not built";
  std::string out;
  const int status = runCommand("BATON_TEST_MEMORY=window NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL timeout -k 5 170 " +
                                    run + " -n 3 " + worker + " --quick",
                                &out);
  ASSERT_EQ(status, 0) << out.substr(0, 4000);
  EXPECT_EQ(countOf(out, "checks passed"), 3u);
  size_t alltoall = 0, alltoallv = 0;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    const bool window = line.find("algorithm window") != std::string::npos;
    if (line.find("AlltoAll: sendbuff") != std::string::npos) {
      EXPECT_TRUE(window) << line;
      ++alltoall;
    }
    if (line.find("AlltoAllv: sendbuff") != std::string::npos && window) ++alltoallv;
  }
  EXPECT_GT(alltoall, 3u);
  EXPECT_GE(alltoallv, 3u);  // the suite's own, one per rank at least (MoE's run on its own buffers)
}

// MoE's low-latency stage across hosts (lesson 12): 4 processes whose NCCL_HOSTID makes two
// "hosts" of 2 ranks, NET (sockets on loopback) between them. The quick suite's MoE checks (every
// stage, exact) pass, and the low-latency window is written with puts across the hosts.
TEST(ProcessMoe, LowLatencyAcrossHostsWithPuts) {
  const std::string run = envOr("BATON_BUILD", "build") + "/bin/baton-run";
  const std::string worker = envOr("TESTDIR", "build/tests") + "/rank_worker";
  if (!executable(run) || !executable(worker)) GTEST_SKIP() << run << " or " << worker << " is not built";
  std::string out;
  const int status =
      runCommand("NCCL_SOCKET_IFNAME=lo NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL timeout -k 5 170 " + run +
                     " -n 4 sh -c 'NCCL_HOSTID=moe-h$((BATON_RANK / 2)) exec " + worker + " --quick'",
                 &out);
  ASSERT_EQ(status, 0) << out.substr(0, 4000);
  EXPECT_EQ(countOf(out, "checks passed"), 4u);
  EXPECT_EQ(countOf(out, "device puts to 2 ranks of other hosts"), 4u) << out.substr(0, 4000);
  EXPECT_GE(countOf(out, "written with puts by the others"), 4u);
  EXPECT_GT(countOf(out, "stage lowlatency"), 4u);
}

}  // namespace
}  // namespace bt

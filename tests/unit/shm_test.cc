// Shared-memory segments of the shm transport never outlive their use: the name is unlinked as
// soon as both sides map it, the mappings go on ncclCommDestroy / ncclCommAbort, and segments a
// killed process left behind are swept by the next process that creates one.
//
// Two 2-rank comms in this process use shm instead of p2p with NCCL_P2P_DISABLE=1. The sweep runs
// once per process, so it is tested in fresh children: this binary re-executed with a gtest filter
// on a ShmHelper test and BATON_SHM_TEST_HELPER saying what that child should do.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "nccl.h"
#include "shm/shm_segment.h"
#include "unit/unit_helpers.h"

extern char** environ;

namespace {

using bt::lastError;
using bt::ScopedEnv;

const char* kHelperEnv = "BATON_SHM_TEST_HELPER";

std::string prefixOf(pid_t pid) { return "baton-" + std::to_string(pid) + "-"; }

// Names in /dev/shm that process `pid` created.
std::vector<std::string> shmNames(pid_t pid) {
  std::vector<std::string> out;
  const std::string prefix = prefixOf(pid);
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d))
      if (strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) out.push_back(e->d_name);
    closedir(d);
  }
  return out;
}

// Mappings of this process's segments (named or already unlinked) in /proc/self/maps.
int mappedSegments() {
  std::ifstream maps("/proc/self/maps");
  const std::string needle = "/dev/shm/" + prefixOf(getpid());
  int n = 0;
  for (std::string line; std::getline(maps, line);) n += line.find(needle) != std::string::npos;
  return n;
}

bool shmExists(const std::string& name) {
  struct stat st;
  return stat(("/dev/shm" + name).c_str(), &st) == 0;
}

// Runs this binary on one ShmHelper test with BATON_SHM_TEST_HELPER=mode; returns the wait status.
int runHelper(const char* test, const char* mode, pid_t* pidOut = nullptr) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (strncmp(*e, kHelperEnv, strlen(kHelperEnv)) != 0) env.push_back(*e);
  env.push_back(std::string(kHelperEnv) + "=" + mode);
  std::vector<char*> envp;
  for (auto& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string filter = std::string("--gtest_filter=ShmHelper.") + test;
  char exe[] = "/proc/self/exe";
  char* argv[] = {exe, filter.data(), nullptr};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, exe, &fa, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  if (pidOut) *pidOut = pid;
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

bool helperMode(const char* mode) {
  const char* m = getenv(kHelperEnv);
  return m && strcmp(m, mode) == 0;
}

// ---- children -------------------------------------------------------------------------------

TEST(ShmHelper, CreateSegmentAndDie) {
  if (!helperMode("create-and-die")) GTEST_SKIP() << "child helper of ShmSweep.*";
  void* base = nullptr;
  const std::string name = "/" + prefixOf(getpid()) + "x-y";
  if (baton::shmCreate(name.c_str(), 4096, &base) != ncclSuccess) _exit(3);
  memset(base, 0x5a, 4096);
  raise(SIGKILL);
}

TEST(ShmHelper, Sweep) {
  if (!helperMode("sweep")) GTEST_SKIP() << "child helper of ShmSweep.*";
  const int removed = baton::sweepStaleShmSegments();
  _exit(10 + (removed < 100 ? removed : 100));
}

// A child whose first shm connection (inside ncclCommInitAll) must trigger the sweep by itself.
TEST(ShmHelper, CommOverShm) {
  if (!helperMode("comm")) GTEST_SKIP() << "child helper of ShmSweep.*";
  setenv("NCCL_P2P_DISABLE", "1", 1);
  ncclComm_t comms[2];
  if (ncclCommInitAll(comms, 2, nullptr) != ncclSuccess) _exit(4);
  ncclCommDestroy(comms[0]);
  ncclCommDestroy(comms[1]);
  _exit(0);
}

// ---- this process -------------------------------------------------------------------------------

void allReduceAndSendRecv(ncclComm_t* comms) {
  float in[2][1024], out[2][1024], p2p[2][64];
  for (int r = 0; r < 2; ++r)
    for (int i = 0; i < 1024; ++i) in[r][i] = float(r * 1000 + i);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < 2; ++r)
    ASSERT_EQ(ncclAllReduce(in[r], out[r], 1024, ncclFloat, ncclSum, comms[r], nullptr), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << lastError();
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(ncclSend(in[r], 64, ncclFloat, 1 - r, comms[r], nullptr), ncclSuccess);
    ASSERT_EQ(ncclRecv(p2p[r], 64, ncclFloat, 1 - r, comms[r], nullptr), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << lastError();
  for (int r = 0; r < 2; ++r) {
    for (int i = 0; i < 1024; ++i) ASSERT_EQ(out[r][i], float(1000 + 2 * i)) << "rank " << r;
    for (int i = 0; i < 64; ++i) ASSERT_EQ(p2p[r][i], in[1 - r][i]) << "rank " << r;
  }
}

TEST(ShmTransport, NothingLeftAfterDestroy) {
  ScopedEnv noP2p("NCCL_P2P_DISABLE", "1");
  ncclComm_t comms[2];
  ASSERT_EQ(ncclCommInitAll(comms, 2, nullptr), ncclSuccess) << lastError();
  EXPECT_GT(mappedSegments(), 0) << "NCCL_P2P_DISABLE=1 should have put the rings on shm";
  EXPECT_TRUE(shmNames(getpid()).empty()) << "names stay in /dev/shm after both sides mapped them";
  allReduceAndSendRecv(comms);
  EXPECT_TRUE(shmNames(getpid()).empty()) << "p2p connections left names in /dev/shm";
  ASSERT_EQ(ncclCommDestroy(comms[0]), ncclSuccess);
  ASSERT_EQ(ncclCommDestroy(comms[1]), ncclSuccess);
  EXPECT_TRUE(shmNames(getpid()).empty());
  EXPECT_EQ(mappedSegments(), 0) << "segments still mapped after ncclCommDestroy";
}

TEST(ShmTransport, NothingLeftAfterAbort) {
  ScopedEnv noP2p("NCCL_P2P_DISABLE", "1");
  ncclComm_t comms[2];
  ASSERT_EQ(ncclCommInitAll(comms, 2, nullptr), ncclSuccess) << lastError();
  allReduceAndSendRecv(comms);
  EXPECT_GT(mappedSegments(), 0);
  ASSERT_EQ(ncclCommAbort(comms[1]), ncclSuccess);
  ASSERT_EQ(ncclCommAbort(comms[0]), ncclSuccess);
  EXPECT_TRUE(shmNames(getpid()).empty());
  EXPECT_EQ(mappedSegments(), 0) << "segments still mapped after ncclCommAbort";
}

TEST(ShmSweep, RemovesSegmentsOfDeadProcessesOnly) {
  pid_t dead = -1;
  int status = runHelper("CreateSegmentAndDie", "create-and-die", &dead);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "helper status 0x" << std::hex << status;
  const std::string stale = "/" + prefixOf(dead) + "x-y";
  ASSERT_TRUE(shmExists(stale)) << "the killed helper's segment should be there to sweep";
  // A segment whose creator (this process) is alive must survive the sweep.
  const std::string live = "/" + prefixOf(getpid()) + "live-1";
  void* base = nullptr;
  ASSERT_EQ(baton::shmCreate(live.c_str(), 4096, &base), ncclSuccess) << lastError();

  status = runHelper("Sweep", "sweep");
  ASSERT_TRUE(WIFEXITED(status)) << "status 0x" << std::hex << status;
  EXPECT_GE(WEXITSTATUS(status) - 10, 1) << "sweep removed nothing";
  EXPECT_FALSE(shmExists(stale)) << stale << " survived the sweep";
  EXPECT_TRUE(shmExists(live)) << "the sweep removed a live process's segment";
  munmap(base, 4096);
  shm_unlink(live.c_str());
}

TEST(ShmSweep, FirstShmConnectionSweeps) {
  pid_t dead = -1;
  int status = runHelper("CreateSegmentAndDie", "create-and-die", &dead);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "helper status 0x" << std::hex << status;
  const std::string stale = "/" + prefixOf(dead) + "x-y";
  ASSERT_TRUE(shmExists(stale));
  status = runHelper("CommOverShm", "comm");
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status 0x" << std::hex << status;
  EXPECT_FALSE(shmExists(stale)) << "a new job's shm transport left the dead process's segment";
  shm_unlink(stale.c_str());  // in case
}

}  // namespace

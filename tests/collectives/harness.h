// Ranks-as-threads harness for the collective suites.
//
// Communicators for N ranks are created from one thread (ncclCommInitAll, or ncclGroupStart + N x
// ncclCommInitRank[Config] + ncclGroupEnd) and cached per N for the whole process (init costs ms).
// A case then runs either with one std::thread per rank (each rank's calls are blocking) or with
// this one thread driving every rank inside one ncclGroupStart/End, as nccl-tests does.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "collectives/rank_case.h"
#include "nccl.h"

namespace bt {

using Comms = std::vector<ncclComm_t>;

// ncclCommInitAll(n). Empty on failure (with a gtest failure recorded).
Comms initAll(int n);
// One thread: ncclGroupStart, ncclCommInitRankConfig for every rank, ncclGroupEnd. For a blocking
// config the group returns ncclSuccess; for config->blocking == 0 it may return ncclInProgress and
// this waits (polling ncclCommGetAsyncError) until every comm is ready.
Comms initGroup(int n, const ncclConfig_t* config = nullptr);
void destroyComms(Comms& comms);
// Communicators for n ranks in the default environment, created on first use (odd n with
// ncclCommInitAll, even n with GroupStart + ncclCommInitRank) and destroyed when the program ends.
const Comms& cachedComms(int n);

// Polls ncclCommGetAsyncError until it leaves ncclInProgress; returns the final state.
ncclResult_t waitReady(ncclComm_t comm, double timeoutSec = 60);

enum class Drive { Threads, Group };
inline const char* driveName(Drive d) { return d == Drive::Threads ? "threads" : "one thread, group"; }

// Runs fn(rank) for rank 0..n-1: Threads = one std::thread per rank; Group = this thread inside one
// ncclGroupStart/End. Returns "" if every call (and the group end) returned ncclSuccess.
std::string runRanks(int n, Drive d, const std::function<ncclResult_t(int)>& fn);

// Runs one case on every rank of comms (prepare, issue, check) and returns "" or what failed.
// An in-place AlltoAll always runs as threads: baton supports it only outside a group.
std::string runCase(const Comms& comms, const CollCase& c, Drive d);

// Several cases issued inside one group: one item per (communicator set, case).
struct GroupItem {
  const Comms* comms;
  CollCase c;
  std::vector<RankBuffers> bufs;
};
// Prepares every item, issues all of them inside one group per driving thread (Group: this thread,
// one group around everything, items may use different communicators; Threads: all items on the
// same ranks, one thread per rank), then checks every rank of every item (gtest failures). expect:
// what each group end returns; ncclInProgress for non-blocking communicators, which are then waited
// for with ncclCommGetAsyncError. No in-place AlltoAll (baton allows it only outside a group).
void runGrouped(std::vector<GroupItem>& items, Drive d, ncclResult_t expect = ncclSuccess);

// `howMany` different cases of one collective for one group: types, ops, counts up to 70001,
// roots and placements all varying from case to case.
std::vector<GroupItem> mixedCases(const Comms& comms, Coll coll, int howMany, uint64_t seed);

// Counts {0, 1, 7, 1023}; kLarge stands for largeCount(coll, type, nranks).
constexpr size_t kLarge = ~size_t(0);
inline const std::vector<size_t> kSmallCounts = {0, 1, 7, 1023};
inline const std::vector<Op> kOps(std::begin(kAllOps), std::end(kAllOps));

// What runMatrix runs for one collective and datatype: every op x count x root x placement, each
// case under one drive, the drives taking turns (so each placement and count sees both across the
// ops and roots); everyDrive runs every case under every drive.
struct Matrix {
  std::vector<Op> ops = kOps;  // ignored for non-reducing collectives
  std::vector<size_t> counts = kSmallCounts;
  std::vector<bool> placements = {false, true};  // out-of-place, in-place
  std::vector<Drive> drives = {Drive::Group, Drive::Threads};
  bool everyDrive = false;
  bool midRoot = false;    // roots {0, n-1}, plus n/2 when set
  std::vector<int> roots;  // instead of those, when not empty (-1 stands for n-1)
  uint64_t seed = 1;
};
// Runs the matrix on comms, stopping after a handful of failures (each one a gtest failure that
// names the case). Returns the number of cases run.
int runMatrix(const Comms& comms, Coll coll, ncclDataType_t type, const Matrix& m = {});

// The suites' two standard matrices on cached communicators:
//  small: all ops x {0,1,7,1023} x roots {0,n-1} x both placements, drives taking turns;
//  large: largeCount() with sum (every op for the types in allOpsTypes: one 4-byte and one 1-byte
//         type by default); out-of-place driven from one thread inside a group with root n-1,
//         in-place with one thread per rank and root 0.
int runSmall(const Comms& comms, Coll coll, ncclDataType_t type);
int runLarge(const Comms& comms, Coll coll, ncclDataType_t type,
             const std::vector<ncclDataType_t>& allOpsTypes = {ncclFloat32, ncclInt8});

// gtest parameter (datatype, nranks) and its name, e.g. "f8e4m3_5ranks".
using TypeRanks = std::tuple<ncclDataType_t, int>;
std::string typeRanksName(const ::testing::TestParamInfo<TypeRanks>& info);

// Runs fn with NCCL_DEBUG=INFO for `subsys` written to a file, and returns what was logged.
std::string captureLog(const char* subsys, const std::function<void()>& fn);

// Sets environment variables for a scope and restores the previous values.
class ScopedEnv {
 public:
  using Vars = std::vector<std::pair<const char*, const char*>>;  // value NULL: unset
  explicit ScopedEnv(const Vars& vars);
  ~ScopedEnv();

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

}  // namespace bt

// Asserts an NCCL call succeeded, showing ncclGetLastError on failure.
#define NCCL_ASSERT(call)                                                                                       \
  do {                                                                                                          \
    ncclResult_t r_ = (call);                                                                                   \
    ASSERT_EQ(r_, ncclSuccess) << #call << ": " << ncclGetErrorString(r_) << ": " << ncclGetLastError(nullptr); \
  } while (0)
#define NCCL_EXPECT(call)                                                                                       \
  do {                                                                                                          \
    ncclResult_t r_ = (call);                                                                                   \
    EXPECT_EQ(r_, ncclSuccess) << #call << ": " << ncclGetErrorString(r_) << ": " << ncclGetLastError(nullptr); \
  } while (0)

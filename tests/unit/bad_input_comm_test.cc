// Bad input to the communicator-level API: NULL output pointers, NULL / destroyed / aborted
// communicators, PreMulSum ops used where they do not belong, unimplemented functions, and the
// fixed answers of ncclGetVersion / ncclGetErrorString.
#include <atomic>
#include <chrono>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "nccl.h"
#include "unit/unit_helpers.h"

namespace {

using bt::lastError;

ncclComm_t makeOneRankComm() {
  ncclComm_t c = nullptr;
  EXPECT_EQ(ncclCommInitAll(&c, 1, nullptr), ncclSuccess) << lastError();
  return c;
}

TEST(BadInputComm, Version) {
  int v = 0;
  ASSERT_EQ(ncclGetVersion(&v), ncclSuccess);
  EXPECT_EQ(v, 22809);
  EXPECT_EQ(v, NCCL_VERSION_CODE);
  EXPECT_NCCL_ERR(ncclGetVersion(nullptr), ncclInvalidArgument, "ncclGetVersion", "version is NULL");
}

TEST(BadInputComm, ErrorStrings) {
  std::set<std::string> seen;
  for (int r = ncclSuccess; r < ncclNumResults; ++r) {
    const char* s = ncclGetErrorString((ncclResult_t)r);
    ASSERT_NE(s, nullptr) << "code " << r;
    EXPECT_GT(strlen(s), 0u) << "code " << r;
    EXPECT_TRUE(seen.insert(s).second) << "code " << r << " shares its text: " << s;
  }
  for (int r : {(int)ncclNumResults, -1, 1000}) {
    const char* s = ncclGetErrorString((ncclResult_t)r);
    ASSERT_NE(s, nullptr) << "code " << r;
    EXPECT_GT(strlen(s), 0u);
    EXPECT_EQ(seen.count(s), 0u) << "out-of-range code " << r << " reads like a real one: " << s;
  }
}

TEST(BadInputComm, NullOutputPointers) {
  EXPECT_NCCL_ERR(ncclGetUniqueId(nullptr), ncclInvalidArgument, "ncclGetUniqueId", "uniqueId is NULL");
  EXPECT_NCCL_ERR(ncclCommInitAll(nullptr, 1, nullptr), ncclInvalidArgument, "ncclCommInitAll", "comms is NULL");
  ncclComm_t comms[2];
  EXPECT_NCCL_ERR(ncclCommInitAll(comms, 0, nullptr), ncclInvalidArgument, "ncclCommInitAll", "ndev 0");
  EXPECT_NCCL_ERR(ncclCommInitAll(comms, -3, nullptr), ncclInvalidArgument, "ncclCommInitAll", "ndev -3");

  ncclComm_t comm = makeOneRankComm();
  ASSERT_NE(comm, nullptr);
  EXPECT_NCCL_ERR(ncclCommCount(comm, nullptr), ncclInvalidArgument, "ncclCommCount", "count is NULL");
  EXPECT_NCCL_ERR(ncclCommUserRank(comm, nullptr), ncclInvalidArgument, "ncclCommUserRank", "rank is NULL");
  EXPECT_NCCL_ERR(ncclCommCuDevice(comm, nullptr), ncclInvalidArgument, "ncclCommCuDevice", "device is NULL");
  EXPECT_NCCL_ERR(ncclCommGetAsyncError(comm, nullptr), ncclInvalidArgument, "ncclCommGetAsyncError",
                  "asyncError is NULL");
  EXPECT_NCCL_ERR(ncclCommSplit(comm, 0, 0, nullptr, nullptr), ncclInvalidArgument, "ncclCommSplit", "newcomm is NULL");
  ncclComm_t child = nullptr;
  EXPECT_NCCL_ERR(ncclCommSplit(comm, -5, 0, &child, nullptr), ncclInvalidArgument, "ncclCommSplit", "color -5");
  float scalar = 2.0f;
  ncclRedOp_t op;
  EXPECT_NCCL_ERR(ncclRedOpCreatePreMulSum(nullptr, &scalar, ncclFloat, ncclScalarHostImmediate, comm),
                  ncclInvalidArgument, "ncclRedOpCreatePreMulSum", "op");
  EXPECT_NCCL_ERR(ncclRedOpCreatePreMulSum(&op, nullptr, ncclFloat, ncclScalarHostImmediate, comm), ncclInvalidArgument,
                  "ncclRedOpCreatePreMulSum", "scalar is NULL");
  EXPECT_NCCL_ERR(ncclRedOpCreatePreMulSum(&op, &scalar, (ncclDataType_t)12, ncclScalarHostImmediate, comm),
                  ncclInvalidArgument, "ncclRedOpCreatePreMulSum", "datatype 12");
  EXPECT_NCCL_ERR(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat, (ncclScalarResidence_t)7, comm),
                  ncclInvalidArgument, "ncclRedOpCreatePreMulSum", "residence 7");
  ASSERT_NCCL_OK(ncclCommDestroy(comm));
}

TEST(BadInputComm, NullComm) {
  int n;
  ncclResult_t st;
  ncclComm_t child;
  ncclRedOp_t op;
  float scalar = 1.0f;
  EXPECT_NCCL_ERR(ncclCommCount(nullptr, &n), ncclInvalidArgument, "ncclCommCount", "comm is NULL");
  EXPECT_NCCL_ERR(ncclCommUserRank(nullptr, &n), ncclInvalidArgument, "ncclCommUserRank", "comm is NULL");
  EXPECT_NCCL_ERR(ncclCommCuDevice(nullptr, &n), ncclInvalidArgument, "ncclCommCuDevice", "comm is NULL");
  EXPECT_NCCL_ERR(ncclCommGetAsyncError(nullptr, &st), ncclInvalidArgument, "ncclCommGetAsyncError", "comm is NULL");
  EXPECT_NCCL_ERR(ncclCommFinalize(nullptr), ncclInvalidArgument, "ncclCommFinalize", "comm is NULL");
  EXPECT_NCCL_ERR(ncclCommSplit(nullptr, 0, 0, &child, nullptr), ncclInvalidArgument, "ncclCommSplit", "comm is NULL");
  EXPECT_NCCL_ERR(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat, ncclScalarHostImmediate, nullptr),
                  ncclInvalidArgument, "ncclRedOpCreatePreMulSum", "comm is NULL");
  EXPECT_NCCL_ERR(ncclRedOpDestroy(ncclSum, nullptr), ncclInvalidArgument, "ncclRedOpDestroy", "comm is NULL");
  // NCCL accepts NULL in Destroy and Abort.
  EXPECT_EQ(ncclCommDestroy(nullptr), ncclSuccess);
  EXPECT_EQ(ncclCommAbort(nullptr), ncclSuccess);
}

// Every call on a communicator that no longer exists is an error that names the pointer.
void expectDeadComm(ncclComm_t dead) {
  char ptr[32];
  snprintf(ptr, sizeof ptr, "%p", (void*)dead);
  float buf[4] = {1, 2, 3, 4};
  int n = -1;
  ncclResult_t st;
  ncclRedOp_t op;
  EXPECT_NCCL_ERR(ncclAllReduce(buf, buf, 4, ncclFloat, ncclSum, dead, nullptr), ncclInvalidArgument, "ncclAllReduce",
                  ptr, "not a live communicator");
  EXPECT_NCCL_ERR(ncclBroadcast(buf, buf, 4, ncclFloat, 0, dead, nullptr), ncclInvalidArgument, "ncclBroadcast", ptr);
  EXPECT_NCCL_ERR(ncclSend(buf, 4, ncclFloat, 0, dead, nullptr), ncclInvalidArgument, "ncclSend", ptr);
  EXPECT_NCCL_ERR(ncclCommCount(dead, &n), ncclInvalidArgument, "ncclCommCount", ptr, "not a live communicator");
  EXPECT_EQ(n, -1) << "ncclCommCount wrote through a dead comm";
  EXPECT_NCCL_ERR(ncclCommUserRank(dead, &n), ncclInvalidArgument, "ncclCommUserRank", ptr);
  EXPECT_NCCL_ERR(ncclCommGetAsyncError(dead, &st), ncclInvalidArgument, "ncclCommGetAsyncError", ptr);
  EXPECT_NCCL_ERR(ncclRedOpCreatePreMulSum(&op, buf, ncclFloat, ncclScalarHostImmediate, dead), ncclInvalidArgument,
                  "ncclRedOpCreatePreMulSum", ptr);
  EXPECT_NCCL_ERR(ncclCommFinalize(dead), ncclInvalidArgument, "ncclCommFinalize", ptr);
  EXPECT_NCCL_ERR(ncclCommDestroy(dead), ncclInvalidArgument, "ncclCommDestroy", ptr, "not a live communicator");
  EXPECT_NCCL_ERR(ncclCommAbort(dead), ncclInvalidArgument, "ncclCommAbort", ptr);
}

TEST(BadInputComm, DestroyedCommunicator) {
  ncclComm_t comm = makeOneRankComm();
  ASSERT_NE(comm, nullptr);
  ASSERT_NCCL_OK(ncclCommDestroy(comm));
  expectDeadComm(comm);
}

TEST(BadInputComm, AbortedCommunicator) {
  ncclComm_t comm = makeOneRankComm();
  ASSERT_NE(comm, nullptr);
  ASSERT_NCCL_OK(ncclCommAbort(comm));
  expectDeadComm(comm);
}

TEST(BadInputComm, DestroyedTwoRankCommunicator) {
  ncclComm_t comms[2];
  ASSERT_NCCL_OK(ncclCommInitAll(comms, 2, nullptr));
  ASSERT_NCCL_OK(ncclCommDestroy(comms[0]));
  ASSERT_NCCL_OK(ncclCommAbort(comms[1]));
  expectDeadComm(comms[0]);
  expectDeadComm(comms[1]);
}

// Rank 1 never joins the allreduce: aborting rank 0 ends its blocked call with an error (no hang)
// and the comm is gone afterwards.
TEST(BadInputComm, AbortEndsAnOperationWaitingForAMissingPeer) {
  ncclComm_t comms[2];
  ASSERT_NCCL_OK(ncclCommInitAll(comms, 2, nullptr));
  std::vector<float> buf(1 << 16, 1.0f);
  std::atomic<int> res{-1};
  std::string msg;
  std::thread blocked([&] {
    res = ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat, ncclSum, comms[0], nullptr);
    msg = lastError();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(res.load(), -1) << "the allreduce finished without its peer";
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_NCCL_OK(ncclCommAbort(comms[0]));
  blocked.join();
  EXPECT_LT(bt::secondsSince(t0), 2.0);
  EXPECT_NE(res.load(), ncclSuccess);
  EXPECT_NE(res.load(), ncclInProgress);
  EXPECT_TRUE(bt::messageHas(msg, {"AllReduce", "aborted"}));
  expectDeadComm(comms[0]);
  ASSERT_NCCL_OK(ncclCommDestroy(comms[1]));
}

TEST(BadInputComm, PreMulSumOps) {
  ncclComm_t a = makeOneRankComm(), b = makeOneRankComm();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  float scalar = 3.0f, buf[4] = {1, 2, 3, 4};
  int ibuf[4] = {1, 2, 3, 4};
  ncclRedOp_t op;
  ASSERT_NCCL_OK(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat, ncclScalarHostImmediate, a));
  const std::string opText = "op " + std::to_string((int)op);
  // It works where it was made ...
  ASSERT_NCCL_OK(ncclAllReduce(buf, buf, 4, ncclFloat, op, a, nullptr));
  EXPECT_EQ(buf[1], 6.0f);
  // ... but another communicator does not know it, and the datatype is part of it.
  EXPECT_NCCL_ERR(ncclAllReduce(buf, buf, 4, ncclFloat, op, b, nullptr), ncclInvalidArgument, "ncclAllReduce", opText,
                  "unknown to this communicator");
  EXPECT_NCCL_ERR(ncclReduce(buf, buf, 4, ncclFloat, op, 0, b, nullptr), ncclInvalidArgument, "ncclReduce", opText,
                  "unknown to this communicator");
  EXPECT_NCCL_ERR(ncclRedOpDestroy(op, b), ncclInvalidArgument, "ncclRedOpDestroy", opText,
                  "unknown to this communicator");
  EXPECT_NCCL_ERR(ncclAllReduce(ibuf, ibuf, 4, ncclInt32, op, a, nullptr), ncclInvalidArgument, "ncclAllReduce", opText,
                  "float", "int32");
  // Built-in operators cannot be destroyed.
  for (int builtin = 0; builtin < ncclNumOps; ++builtin)
    EXPECT_NCCL_ERR(ncclRedOpDestroy((ncclRedOp_t)builtin, a), ncclInvalidArgument, "ncclRedOpDestroy",
                    "op " + std::to_string(builtin), "built-in");
  // Destroyed once, it is gone: a second destroy and any use are errors.
  ASSERT_NCCL_OK(ncclRedOpDestroy(op, a));
  EXPECT_NCCL_ERR(ncclRedOpDestroy(op, a), ncclInvalidArgument, "ncclRedOpDestroy", opText);
  EXPECT_NCCL_ERR(ncclAllReduce(buf, buf, 4, ncclFloat, op, a, nullptr), ncclInvalidArgument, opText,
                  "unknown to this communicator");
  ASSERT_NCCL_OK(ncclCommDestroy(a));
  ASSERT_NCCL_OK(ncclCommDestroy(b));
}

TEST(BadInputComm, PreMulSumSlotsRunOut) {
  ncclComm_t comm = makeOneRankComm();
  ASSERT_NE(comm, nullptr);
  double scalar = 0.5;
  std::vector<ncclRedOp_t> ops;
  ncclRedOp_t op;
  while (ops.size() < 1000 &&
         ncclRedOpCreatePreMulSum(&op, &scalar, ncclDouble, ncclScalarHostImmediate, comm) == ncclSuccess)
    ops.push_back(op);
  EXPECT_EQ(ops.size(), 64u);
  EXPECT_NCCL_ERR(ncclRedOpCreatePreMulSum(&op, &scalar, ncclDouble, ncclScalarHostImmediate, comm), ncclInvalidUsage,
                  "ncclRedOpCreatePreMulSum", "64");
  EXPECT_EQ(std::set<ncclRedOp_t>(ops.begin(), ops.end()).size(), ops.size()) << "two ops share a handle";
  for (ncclRedOp_t o : ops) EXPECT_EQ(ncclRedOpDestroy(o, comm), ncclSuccess) << lastError();
  ASSERT_NCCL_OK(ncclRedOpCreatePreMulSum(&op, &scalar, ncclDouble, ncclScalarHostImmediate, comm));
  ASSERT_NCCL_OK(ncclCommDestroy(comm));
}

TEST(BadInputComm, UnimplementedFunctionsSayWhich) {
  ncclComm_t comm = makeOneRankComm();
  ASSERT_NE(comm, nullptr);
  ncclComm_t out = nullptr;
  ncclUniqueId id{};
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  EXPECT_NCCL_ERR(ncclCommInitRankScalable(&out, 1, 0, 1, &id, &cfg), ncclInvalidUsage, "ncclCommInitRankScalable",
                  "not implemented");
  ASSERT_NCCL_OK(ncclGroupStart());
  EXPECT_NCCL_ERR(ncclGroupSimulateEnd(&sim), ncclInvalidUsage, "ncclGroupSimulateEnd", "not implemented");
  ASSERT_NCCL_OK(ncclGroupEnd());
  // The communicator is still fine.
  int n = 0;
  ASSERT_NCCL_OK(ncclCommCount(comm, &n));
  EXPECT_EQ(n, 1);
  ASSERT_NCCL_OK(ncclCommDestroy(comm));
}

}  // namespace

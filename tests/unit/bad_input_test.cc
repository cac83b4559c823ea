// Bad arguments to the collective and point-to-point entry points: each call returns
// ncclInvalidArgument and ncclGetLastError() names the function, the argument and its value.
// Nothing is queued, so no call here ever talks to a peer (a 1-rank and a 2-rank comm suffice).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "baton/alltoallv.h"
#include "nccl.h"
#include "unit/unit_helpers.h"

namespace {

using bt::lastError;
using bt::messageHas;

// One entry point, called with (comm, sendbuff, recvbuff, count, type) and otherwise valid
// arguments: op ncclSum, root 0, peer 0.
struct Entry {
  const char* name;
  // The datatype travels as an int: an out-of-range value held in an ncclDataType_t object is
  // undefined in C++ (UBSan's enum check), while a C caller can pass any int.
  std::function<ncclResult_t(ncclComm_t, const void*, void*, size_t, int)> call;
  bool hasSend, hasRecv;
};

// `expr` may use c (comm), s (sendbuff), r (recvbuff), n (count) and t (datatype).
#define ENTRY(fn, hasSend, hasRecv, expr)                                                   \
  Entry {                                                                                   \
#fn, [](ncclComm_t c, [[maybe_unused]] const void* s, [[maybe_unused]] void* r, size_t n, \
            int type) {                                                                       \
    [[maybe_unused]] const auto t = static_cast<ncclDataType_t>(type);                        \
    return expr;                                                                              \
  }, hasSend, hasRecv \
  }

std::vector<Entry> allEntries() {
  return {
      ENTRY(ncclAllReduce, true, true, ncclAllReduce(s, r, n, t, ncclSum, c, nullptr)),
      ENTRY(ncclBroadcast, true, true, ncclBroadcast(s, r, n, t, 0, c, nullptr)),
      ENTRY(ncclBcast, false, true, ncclBcast(r, n, t, 0, c, nullptr)),
      ENTRY(ncclReduce, true, true, ncclReduce(s, r, n, t, ncclSum, 0, c, nullptr)),
      ENTRY(ncclAllGather, true, true, ncclAllGather(s, r, n, t, c, nullptr)),
      ENTRY(ncclReduceScatter, true, true, ncclReduceScatter(s, r, n, t, ncclSum, c, nullptr)),
      ENTRY(ncclAlltoAll, true, true, ncclAlltoAll(s, r, n, t, c, nullptr)),
      ENTRY(ncclGather, true, true, ncclGather(s, r, n, t, 0, c, nullptr)),
      ENTRY(ncclScatter, true, true, ncclScatter(s, r, n, t, 0, c, nullptr)),
      ENTRY(ncclSend, true, false, ncclSend(s, n, t, 0, c, nullptr)),
      ENTRY(ncclRecv, false, true, ncclRecv(r, n, t, 0, c, nullptr)),
      // Every peer's count is n, every displacement 0 (the arrays outlive the call).
      ENTRY(batonAlltoAllv, true, true,
            batonAlltoAllv(s, std::vector<size_t>(8, n).data(), std::vector<size_t>(8, 0).data(), r,
                           std::vector<size_t>(8, n).data(), std::vector<size_t>(8, 0).data(), t, c, nullptr)),
  };
}
#undef ENTRY

class BadInput : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_EQ(ncclCommInitAll(&one_, 1, nullptr), ncclSuccess) << lastError();
    ASSERT_EQ(ncclCommInitAll(two_, 2, nullptr), ncclSuccess) << lastError();
  }
  static void TearDownTestSuite() {
    ncclCommDestroy(one_);
    ncclCommDestroy(two_[0]);
    ncclCommDestroy(two_[1]);
  }
  static ncclComm_t one_;
  static ncclComm_t two_[2];
  float buf_[64] = {};
};
ncclComm_t BadInput::one_ = nullptr;
ncclComm_t BadInput::two_[2] = {nullptr, nullptr};

TEST_F(BadInput, NullComm) {
  for (const Entry& e : allEntries())
    EXPECT_NCCL_ERR(e.call(nullptr, buf_, buf_, 4, ncclFloat), ncclInvalidArgument,
                    std::string(e.name) + ": comm is NULL");
}

TEST_F(BadInput, InvalidDatatype) {
  for (const Entry& e : allEntries()) {
    for (int t : {-1, 12, 1000}) {
      EXPECT_NCCL_ERR(e.call(one_, buf_, buf_ + 32, 4, t), ncclInvalidArgument, e.name,
                      "invalid datatype " + std::to_string(t));
    }
  }
}

TEST_F(BadInput, NullBuffersWithCount) {
  for (const Entry& e : allEntries()) {
    if (e.hasSend)
      EXPECT_NCCL_ERR(e.call(one_, nullptr, buf_, 4, ncclFloat), ncclInvalidArgument, e.name, "sendbuff is NULL",
                      "count 4");
    if (e.hasRecv) {
      const char* arg = e.hasSend ? "recvbuff is NULL" : "buff is NULL";  // ncclBcast's argument is `buff`
      EXPECT_NCCL_ERR(e.call(one_, buf_, nullptr, 4, ncclFloat), ncclInvalidArgument, e.name, arg, "count 4");
    }
  }
}

TEST_F(BadInput, NullBuffersWithZeroCountAreFine) {
  EXPECT_EQ(ncclAllReduce(nullptr, nullptr, 0, ncclFloat, ncclSum, one_, nullptr), ncclSuccess) << lastError();
  EXPECT_EQ(ncclBroadcast(nullptr, nullptr, 0, ncclInt8, 0, one_, nullptr), ncclSuccess) << lastError();
  EXPECT_EQ(ncclAllGather(nullptr, nullptr, 0, ncclDouble, one_, nullptr), ncclSuccess) << lastError();
}

TEST_F(BadInput, InvalidOp) {
  auto allReduce = [&](ncclRedOp_t op) { return ncclAllReduce(buf_, buf_, 4, ncclFloat, op, one_, nullptr); };
  auto reduce = [&](ncclRedOp_t op) { return ncclReduce(buf_, buf_, 4, ncclFloat, op, 0, one_, nullptr); };
  auto reduceScatter = [&](ncclRedOp_t op) { return ncclReduceScatter(buf_, buf_, 4, ncclFloat, op, one_, nullptr); };
  EXPECT_NCCL_ERR(allReduce((ncclRedOp_t)-1), ncclInvalidArgument, "ncclAllReduce", "op -1");
  EXPECT_NCCL_ERR(reduce((ncclRedOp_t)-7), ncclInvalidArgument, "ncclReduce", "op -7");
  EXPECT_NCCL_ERR(reduceScatter((ncclRedOp_t)-1), ncclInvalidArgument, "ncclReduceScatter", "op -1");
  // Values past the built-ins that no ncclRedOpCreatePreMulSum returned.
  for (int op : {(int)ncclNumOps, 6, 63, 64, 1000, 0x7fffffff}) {
    EXPECT_NCCL_ERR(allReduce((ncclRedOp_t)op), ncclInvalidArgument, "ncclAllReduce", "op " + std::to_string(op),
                    "unknown to this communicator");
    EXPECT_NCCL_ERR(reduce((ncclRedOp_t)op), ncclInvalidArgument, "ncclReduce", "op " + std::to_string(op));
  }
}

TEST_F(BadInput, RootOutOfRange) {
  for (ncclComm_t comm : {one_, two_[0]}) {
    int n = 0;
    ASSERT_EQ(ncclCommCount(comm, &n), ncclSuccess);
    for (int root : {-1, n, n + 100}) {
      const std::string what = "root " + std::to_string(root);
      const std::string range = "nranks=" + std::to_string(n);
      EXPECT_NCCL_ERR(ncclBroadcast(buf_, buf_, 4, ncclFloat, root, comm, nullptr), ncclInvalidArgument,
                      "ncclBroadcast", what, range);
      EXPECT_NCCL_ERR(ncclBcast(buf_, 4, ncclFloat, root, comm, nullptr), ncclInvalidArgument, "ncclBcast", what,
                      range);
      EXPECT_NCCL_ERR(ncclReduce(buf_, buf_, 4, ncclFloat, ncclSum, root, comm, nullptr), ncclInvalidArgument,
                      "ncclReduce", what, range);
      EXPECT_NCCL_ERR(ncclGather(buf_, buf_, 4, ncclFloat, root, comm, nullptr), ncclInvalidArgument, "ncclGather",
                      what, range);
      EXPECT_NCCL_ERR(ncclScatter(buf_, buf_, 4, ncclFloat, root, comm, nullptr), ncclInvalidArgument, "ncclScatter",
                      what, range);
    }
  }
}

TEST_F(BadInput, PeerOutOfRange) {
  for (int peer : {-1, 2, 1 << 30}) {
    const std::string what = "peer " + std::to_string(peer);
    EXPECT_NCCL_ERR(ncclSend(buf_, 4, ncclFloat, peer, two_[0], nullptr), ncclInvalidArgument, "ncclSend", what,
                    "nranks=2");
    EXPECT_NCCL_ERR(ncclRecv(buf_, 4, ncclFloat, peer, two_[1], nullptr), ncclInvalidArgument, "ncclRecv", what,
                    "nranks=2");
  }
}

TEST_F(BadInput, CountWhoseByteSizeOverflows) {
  for (const Entry& e : allEntries()) {
    for (size_t count : {SIZE_MAX, SIZE_MAX / 2, SIZE_MAX / 4 + 1}) {
      EXPECT_NCCL_ERR(e.call(one_, buf_, buf_, count, ncclFloat), ncclInvalidArgument, e.name, std::to_string(count),
                      "overflows");
    }
  }
  // SIZE_MAX bytes of int8 overflow ssize_t even though count * 1 fits size_t.
  EXPECT_NCCL_ERR(ncclAllReduce(buf_, buf_, SIZE_MAX, ncclInt8, ncclSum, one_, nullptr), ncclInvalidArgument,
                  "overflows");
  // Only the nranks multiple overflows: 2^60 floats are 2^62 bytes, times 2 ranks is 2^63.
  const size_t c = size_t(1) << 60;
  EXPECT_NCCL_ERR(ncclAllGather(buf_, buf_, c, ncclFloat, two_[0], nullptr), ncclInvalidArgument, "ncclAllGather",
                  "sendcount " + std::to_string(c), "overflows");
  EXPECT_NCCL_ERR(ncclReduceScatter(buf_, buf_, c, ncclFloat, ncclSum, two_[0], nullptr), ncclInvalidArgument,
                  "ncclReduceScatter", "recvcount " + std::to_string(c), "overflows");
  EXPECT_NCCL_ERR(ncclAlltoAll(buf_, buf_, c, ncclFloat, two_[0], nullptr), ncclInvalidArgument, "ncclAlltoAll",
                  std::to_string(c), "overflows");
  EXPECT_NCCL_ERR(ncclGather(buf_, buf_, c, ncclFloat, 0, two_[0], nullptr), ncclInvalidArgument, "ncclGather",
                  std::to_string(c), "overflows");
  EXPECT_NCCL_ERR(ncclScatter(buf_, buf_, c, ncclFloat, 0, two_[0], nullptr), ncclInvalidArgument, "ncclScatter",
                  std::to_string(c), "overflows");
}

TEST_F(BadInput, ErrorInsideGroupFailsTheGroupAndIsForgotten) {
  ASSERT_NCCL_OK(ncclGroupStart());
  EXPECT_NCCL_ERR(ncclAllReduce(buf_, buf_, 4, (ncclDataType_t)12, ncclSum, one_, nullptr), ncclInvalidArgument,
                  "invalid datatype 12");
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidArgument);
  // The failed group left nothing behind: the next call runs normally.
  for (int i = 0; i < 4; ++i) buf_[i] = float(i + 1);
  ASSERT_NCCL_OK(ncclAllReduce(buf_, buf_ + 8, 4, ncclFloat, ncclSum, one_, nullptr));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(buf_[8 + i], float(i + 1));
}

TEST_F(BadInput, InPlaceAlltoAllInsideAGroup) {
  ASSERT_NCCL_OK(ncclGroupStart());
  EXPECT_NCCL_ERR(ncclAlltoAll(buf_, buf_, 4, ncclFloat, one_, nullptr), ncclInvalidUsage, "ncclAlltoAll", "in-place");
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
}

TEST_F(BadInput, AlltoAllvArrays) {
  const size_t counts[2] = {4, 4}, displs[2] = {0, 4}, huge[2] = {0, SIZE_MAX - 1};
  EXPECT_NCCL_ERR(batonAlltoAllv(buf_, nullptr, displs, buf_ + 8, counts, displs, ncclFloat, two_[0], nullptr),
                  ncclInvalidArgument, "batonAlltoAllv", "sendcounts is NULL");
  EXPECT_NCCL_ERR(batonAlltoAllv(buf_, counts, displs, buf_ + 8, counts, nullptr, ncclFloat, two_[0], nullptr),
                  ncclInvalidArgument, "batonAlltoAllv", "rdispls is NULL");
  EXPECT_NCCL_ERR(batonAlltoAllv(buf_, counts, huge, buf_ + 8, counts, displs, ncclFloat, two_[0], nullptr),
                  ncclInvalidArgument, "batonAlltoAllv", "sdispls[1]=" + std::to_string(SIZE_MAX - 1), "overflows");
  EXPECT_NCCL_ERR(batonAlltoAllv(buf_, counts, displs, buf_, counts, displs, ncclFloat, two_[0], nullptr),
                  ncclInvalidArgument, "batonAlltoAllv", "sendbuff == recvbuff", "no in-place form");
  // Zero counts need no buffers.
  const size_t zero[1] = {0};
  EXPECT_EQ(batonAlltoAllv(nullptr, zero, zero, nullptr, zero, zero, ncclFloat, one_, nullptr), ncclSuccess)
      << lastError();
}

TEST_F(BadInput, GroupEndWithoutStart) {
  EXPECT_NCCL_ERR(ncclGroupEnd(), ncclInvalidUsage, "ncclGroupEnd", "ncclGroupStart");
  // Balanced nesting still works afterwards.
  ASSERT_NCCL_OK(ncclGroupStart());
  ASSERT_NCCL_OK(ncclGroupStart());
  ASSERT_NCCL_OK(ncclGroupEnd());
  ASSERT_NCCL_OK(ncclGroupEnd());
  EXPECT_NCCL_ERR(ncclGroupEnd(), ncclInvalidUsage, "ncclGroupEnd");
}

}  // namespace

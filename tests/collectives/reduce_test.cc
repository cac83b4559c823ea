// Reduce: every datatype x op x count {0,1,7,1023} x roots {0, n-1} x placement at 1..8 ranks
// (drives taking turns, see runSmall), the large count at 2,3,5,8 ranks (runLarge); many Reduces in
// one group; and NULL receive buffers at non-roots, which NCCL never touches.
#include "collectives/harness.h"

namespace bt {
namespace {

class Reduce : public ::testing::TestWithParam<TypeRanks> {};
TEST_P(Reduce, Small) {
  auto [type, n] = GetParam();
  runSmall(cachedComms(n), Coll::Reduce, type);
}
INSTANTIATE_TEST_SUITE_P(, Reduce, ::testing::Combine(::testing::ValuesIn(kAllTypes), ::testing::Range(1, 9)),
                         typeRanksName);

class ReduceLarge : public ::testing::TestWithParam<TypeRanks> {};
TEST_P(ReduceLarge, Large) {
  auto [type, n] = GetParam();
  runLarge(cachedComms(n), Coll::Reduce, type);
}
INSTANTIATE_TEST_SUITE_P(, ReduceLarge,
                         ::testing::Combine(::testing::ValuesIn(kAllTypes), ::testing::Values(2, 3, 5, 8)),
                         typeRanksName);

TEST(ReduceApi, ManyInOneGroup) {
  for (int n : {3, 8})
    for (Drive d : {Drive::Group, Drive::Threads}) {
      std::vector<GroupItem> items = mixedCases(cachedComms(n), Coll::Reduce, 24, 300 + n);
      runGrouped(items, d);
    }
}

TEST(ReduceApi, NullRecvBufferAtNonRoots) {
  for (int n : {2, 3, 5}) {
    const Comms& comms = cachedComms(n);
    for (int root : {0, n - 1}) {
      const size_t count = 70001;
      std::vector<std::vector<int32_t>> send(n, std::vector<int32_t>(count));
      std::vector<int32_t> out(count, -1), want(count);
      for (int r = 0; r < n; ++r) fillInput(ncclInt32, Op::Max, n, 7, r, 0, count, send[r].data());
      fillExpected(ncclInt32, Op::Max, n, 7, 0, count, want.data());
      EXPECT_EQ(runRanks(n, Drive::Threads,
                         [&](int r) {
                           return ncclReduce(send[r].data(), r == root ? out.data() : nullptr, count, ncclInt32,
                                             ncclMax, root, comms[r], nullptr);
                         }),
                "");
      EXPECT_EQ(out, want) << "nranks " << n << " root " << root;
    }
  }
}

}  // namespace
}  // namespace bt

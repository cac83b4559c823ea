// ReduceScatter: every datatype x op x count {0,1,7,1023} x placement (in place: recvbuff =
// sendbuff + rank*recvcount) at 1..8 ranks (drives taking turns, see runSmall), the large count at
// 2,3,5,8 ranks (runLarge: the whole n-block send buffer >= 4 MiB, odd block count), and many
// ReduceScatters in one group.
#include "collectives/harness.h"

namespace bt {
namespace {

class ReduceScatter : public ::testing::TestWithParam<TypeRanks> {};
TEST_P(ReduceScatter, Small) {
  auto [type, n] = GetParam();
  runSmall(cachedComms(n), Coll::ReduceScatter, type);
}
INSTANTIATE_TEST_SUITE_P(, ReduceScatter, ::testing::Combine(::testing::ValuesIn(kAllTypes), ::testing::Range(1, 9)),
                         typeRanksName);

class ReduceScatterLarge : public ::testing::TestWithParam<TypeRanks> {};
TEST_P(ReduceScatterLarge, Large) {
  auto [type, n] = GetParam();
  runLarge(cachedComms(n), Coll::ReduceScatter, type);
}
INSTANTIATE_TEST_SUITE_P(, ReduceScatterLarge,
                         ::testing::Combine(::testing::ValuesIn(kAllTypes), ::testing::Values(2, 3, 5, 8)),
                         typeRanksName);

TEST(ReduceScatterApi, ManyInOneGroup) {
  for (int n : {3, 8})
    for (Drive d : {Drive::Group, Drive::Threads}) {
      std::vector<GroupItem> items = mixedCases(cachedComms(n), Coll::ReduceScatter, 24, 600 + n);
      runGrouped(items, d);
    }
}

}  // namespace
}  // namespace bt

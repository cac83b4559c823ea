// AllGather: every datatype x count {0,1,7,1023} x placement (in place: sendbuff = recvbuff +
// rank*sendcount) at 1..8 ranks (drives taking turns, see runSmall), the large count at 2,3,5,8
// ranks (runLarge: the whole n-block receive buffer >= 4 MiB, odd block count), and many AllGathers
// in one group.
#include "collectives/harness.h"

namespace bt {
namespace {

class AllGather : public ::testing::TestWithParam<TypeRanks> {};
TEST_P(AllGather, Small) {
  auto [type, n] = GetParam();
  runSmall(cachedComms(n), Coll::AllGather, type);
}
INSTANTIATE_TEST_SUITE_P(, AllGather, ::testing::Combine(::testing::ValuesIn(kAllTypes), ::testing::Range(1, 9)),
                         typeRanksName);

class AllGatherLarge : public ::testing::TestWithParam<TypeRanks> {};
TEST_P(AllGatherLarge, Large) {
  auto [type, n] = GetParam();
  runLarge(cachedComms(n), Coll::AllGather, type);
}
INSTANTIATE_TEST_SUITE_P(, AllGatherLarge,
                         ::testing::Combine(::testing::ValuesIn(kAllTypes), ::testing::Values(2, 3, 5, 8)),
                         typeRanksName);

TEST(AllGatherApi, ManyInOneGroup) {
  for (int n : {3, 8})
    for (Drive d : {Drive::Group, Drive::Threads}) {
      std::vector<GroupItem> items = mixedCases(cachedComms(n), Coll::AllGather, 24, 500 + n);
      runGrouped(items, d);
    }
}

}  // namespace
}  // namespace bt

// Broadcast: every datatype x count {0,1,7,1023} x roots {0, n-1} x placement at 1..8 ranks
// (drives taking turns, see runSmall), the large count at 2,3,5,8 ranks (runLarge); many
// Broadcasts in one group; the legacy in-place ncclBcast; NULL send buffers at non-roots.
#include "collectives/harness.h"

namespace bt {
namespace {

class Broadcast : public ::testing::TestWithParam<TypeRanks> {};
TEST_P(Broadcast, Small) {
  auto [type, n] = GetParam();
  runSmall(cachedComms(n), Coll::Broadcast, type);
}
INSTANTIATE_TEST_SUITE_P(, Broadcast, ::testing::Combine(::testing::ValuesIn(kAllTypes), ::testing::Range(1, 9)),
                         typeRanksName);

class BroadcastLarge : public ::testing::TestWithParam<TypeRanks> {};
TEST_P(BroadcastLarge, Large) {
  auto [type, n] = GetParam();
  runLarge(cachedComms(n), Coll::Broadcast, type);
}
INSTANTIATE_TEST_SUITE_P(, BroadcastLarge,
                         ::testing::Combine(::testing::ValuesIn(kAllTypes), ::testing::Values(2, 3, 5, 8)),
                         typeRanksName);

TEST(BroadcastApi, ManyInOneGroup) {
  for (int n : {3, 8})
    for (Drive d : {Drive::Group, Drive::Threads}) {
      std::vector<GroupItem> items = mixedCases(cachedComms(n), Coll::Broadcast, 24, 400 + n);
      runGrouped(items, d);
    }
}

// ncclBcast(buff, ...): one buffer per rank, the root's contents everywhere afterwards.
TEST(BroadcastApi, LegacyBcastInPlace) {
  for (int n : {1, 3, 4})
    for (ncclDataType_t type : kAllTypes)
      for (size_t count : {size_t(1), size_t(1023), size_t(70001)}) {
        const Comms& comms = cachedComms(n);
        const int root = n - 1;
        const size_t ts = typeSize(type);
        std::vector<GuardedBuffer> bufs;
        for (int r = 0; r < n; ++r) bufs.emplace_back(count * ts);
        fillPayload(ts, count, root, 0, count, bufs[root].data());
        std::vector<char> want(count * ts);
        fillPayload(ts, count, root, 0, count, want.data());
        EXPECT_EQ(runRanks(n, Drive::Group,
                           [&](int r) { return ncclBcast(bufs[r].data(), count, type, root, comms[r], nullptr); }),
                  "");
        for (int r = 0; r < n; ++r) {
          EXPECT_EQ(compareBits(bufs[r].data(), want.data(), count, ts, "buff") + bufs[r].checkGuards(), "")
              << typeName(type) << " count " << count << " nranks " << n << " rank " << r;
        }
      }
}

TEST(BroadcastApi, NullSendBufferAtNonRoots) {
  const int n = 4;
  const Comms& comms = cachedComms(n);
  const size_t count = 100003;
  std::vector<double> src(count);
  fillPayload(8, 5, 0, 0, count, src.data());
  std::vector<std::vector<double>> out(n, std::vector<double>(count, -1));
  EXPECT_EQ(runRanks(n, Drive::Threads,
                     [&](int r) {
                       return ncclBroadcast(r == 1 ? src.data() : nullptr, out[r].data(), count, ncclFloat64, 1,
                                            comms[r], nullptr);
                     }),
            "");
  for (int r = 0; r < n; ++r)
    EXPECT_EQ(compareBits(out[r].data(), src.data(), count, 8, "recvbuff"), "") << "rank " << r;
}

}  // namespace
}  // namespace bt

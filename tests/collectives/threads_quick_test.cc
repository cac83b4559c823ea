// ThreadsQuick: a fast pass over every collective and p2p pattern with one thread per rank, for the
// ThreadSanitizer build (make test-tsan runs 'Protocol*:Threads*Quick*'). At 2, 3 and 4 ranks:
// every type (sum; float: every op); counts {0, 1, 7, 1023} and the largest odd count whose buffer
// stays within 64 KiB; both placements; roots 0, n/2, n-1; one thread per rank or one thread
// driving every rank inside a group, taking turns.
#include "collectives/harness.h"

namespace bt {
namespace {

constexpr Coll kEvery[] = {Coll::AllReduce, Coll::Reduce, Coll::ReduceScatter, Coll::AllGather, Coll::Broadcast,
                           Coll::AlltoAll,  Coll::Gather, Coll::Scatter,       Coll::SendRecv};

// The largest odd count whose whole buffer (n blocks for the blocked collectives) is <= 64 KiB.
size_t quickCount(Coll c, ncclDataType_t t, int n) {
  const size_t max = (64u << 10) / typeSize(t) / (blocked(c) ? n : 1);
  return max % 2 ? max : max - 1;
}

class ThreadsQuick : public ::testing::TestWithParam<Coll> {};
TEST_P(ThreadsQuick, TwoToFourRanks) {
  const Coll coll = GetParam();
  for (int n : {2, 3, 4})
    for (ncclDataType_t type : kAllTypes) {
      Matrix m;
      m.ops = type == ncclFloat32 ? kOps : std::vector<Op>{Op::Sum};
      m.counts = {0, 1, 7, 1023, quickCount(coll, type, n)};
      m.midRoot = true;
      runMatrix(cachedComms(n), coll, type, m);
    }
}
INSTANTIATE_TEST_SUITE_P(, ThreadsQuick, ::testing::ValuesIn(kEvery),
                         [](const ::testing::TestParamInfo<Coll>& i) { return std::string(collName(i.param)); });

}  // namespace
}  // namespace bt

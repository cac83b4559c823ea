// Checks of the test data itself (data.h, rank_case.h): the expected results do not depend on the
// order in which ranks' contributions are combined (so a ring, a chain or a naive root all must
// produce them bit for bit), generation is random-access, and the checks catch what they claim to:
// a wrong element, a modified send buffer, a write past either end.
#include <algorithm>
#include <functional>
#include <numeric>

#include "collectives/harness.h"
#include "datatypes.h"
#include "reduce_ops.h"

namespace bt {
namespace {

// Reduces rank values element by element in the element type, storing to T after every step as the
// library's FIFO hops do, in the given rank order; applies avg's division at the end.
template <typename T>
std::vector<T> reduceInOrder(Op op, int n, uint64_t seed, size_t count, const std::vector<int>& order) {
  using Tr = baton::TypeTraits<T>;
  using C = typename Tr::Compute;
  std::vector<std::vector<T>> in(n, std::vector<T>(count));
  for (int r = 0; r < n; ++r) Gen<T>::inputs(op, n, seed, r, 0, count, in[r].data());
  const C scalar = Tr::load(Gen<T>::scalar());
  auto pre = [&](T v) { return op == Op::PreMulSum ? Tr::store(baton::wrapMul(Tr::load(v), scalar)) : v; };
  std::vector<T> acc(count);
  for (size_t i = 0; i < count; ++i) {
    T a = pre(in[order[0]][i]);
    for (size_t k = 1; k < order.size(); ++k) {
      const C x = Tr::load(a), y = Tr::load(pre(in[order[k]][i]));
      C v;
      switch (op) {
        case Op::Prod: v = baton::wrapMul(x, y); break;
        case Op::Max: v = x < y ? y : x; break;
        case Op::Min: v = y < x ? y : x; break;
        default: v = baton::wrapAdd(x, y); break;
      }
      a = Tr::store(v);
    }
    if (op == Op::Avg) a = Tr::store(static_cast<C>(Tr::load(a) / static_cast<C>(n)));
    acc[i] = a;
  }
  return acc;
}

TEST(DataSelfTest, ExpectedIsIndependentOfReductionOrder) {
  for (ncclDataType_t t : kAllTypes)
    withType(t, [&](auto z) {
      using T = decltype(z);
      for (int n = 1; n <= 8; ++n)
        for (Op op : kOps) {
          const size_t count = 3000;
          std::vector<T> want(count);
          fillExpected(t, op, n, 42 + n, 0, count, want.data());
          std::vector<int> order(n);
          std::iota(order.begin(), order.end(), 0);
          for (int rot = 0; rot < n; ++rot) {  // every ring starting point, both directions
            std::rotate(order.begin(), order.begin() + 1, order.end());
            for (bool reverse : {false, true}) {
              std::vector<int> o = order;
              if (reverse) std::reverse(o.begin(), o.end());
              std::vector<T> got = reduceInOrder<T>(op, n, 42 + n, count, o);
              ASSERT_EQ(compareBits(got.data(), want.data(), count, sizeof(T), "reduced"), "")
                  << typeName(t) << " " << opName(op) << " nranks " << n << " rotation " << rot
                  << (reverse ? " reversed" : "");
            }
          }
        }
    });
}

// Any slice [lo, lo+n) generated on its own equals the same slice of the whole.
TEST(DataSelfTest, GenerationIsRandomAccess) {
  for (ncclDataType_t t : kAllTypes) {
    const size_t ts = typeSize(t), count = 10007;
    using Fill = std::function<void(size_t lo, size_t n, char* dst)>;
    const std::vector<std::pair<const char*, Fill>> fills = {
        {"input", [&](size_t lo, size_t n, char* d) { fillInput(t, Op::Sum, 5, 3, 2, lo, n, d); }},
        {"prod input", [&](size_t lo, size_t n, char* d) { fillInput(t, Op::Prod, 5, 3, 2, lo, n, d); }},
        {"payload", [&](size_t lo, size_t n, char* d) { fillPayload(ts, 3, 2, lo, n, d); }},
        {"expected", [&](size_t lo, size_t n, char* d) { fillExpected(t, Op::Min, 5, 3, lo, n, d); }}};
    for (auto& [what, fill] : fills) {
      std::vector<char> whole(count * ts), parts(count * ts);
      fill(0, count, whole.data());
      for (size_t lo = 0, n = 1; lo < count; lo += n, n = n * 3 + 1) {
        n = std::min(n, count - lo);
        fill(lo, n, parts.data() + lo * ts);
      }
      EXPECT_EQ(whole, parts) << typeName(t) << " " << what;
    }
  }
}

TEST(DataSelfTest, GuardsCatchWritesOutsideTheBuffer) {
  GuardedBuffer b(100);
  EXPECT_EQ(b.checkGuards(), "");
  b.data()[100] = 0;
  EXPECT_NE(b.checkGuards().find("after"), std::string::npos);
  GuardedBuffer c(100);
  c.data()[-1] = 0;
  EXPECT_NE(c.checkGuards().find("before"), std::string::npos);
}

// checkRank flags a wrong result element, a modified send buffer and a guard hit (one rank, no
// communication: the buffers are prepared and "completed" by hand).
TEST(DataSelfTest, CheckRankCatchesCorruption) {
  const CollCase c{Coll::AllReduce, ncclFloat32, Op::Sum, 1023};
  auto completed = [&](RankBuffers& b) {
    EXPECT_EQ(prepareRank(c, 1, 0, nullptr, b), ncclSuccess);
    fillExpected(c.type, c.op, 1, c.seed, 0, c.count, b.recv);
  };
  RankBuffers ok, wrong, modified, overrun;
  completed(ok);
  EXPECT_EQ(checkRank(c, 1, 0, nullptr, ok), "");
  completed(wrong);
  static_cast<float*>(wrong.recv)[500] += 1;
  EXPECT_NE(checkRank(c, 1, 0, nullptr, wrong).find("first at 500"), std::string::npos);
  completed(modified);
  static_cast<float*>(const_cast<void*>(modified.send))[3] = 0.5f;
  EXPECT_NE(checkRank(c, 1, 0, nullptr, modified).find("sendbuff"), std::string::npos);
  completed(overrun);
  static_cast<float*>(overrun.recv)[1023] = 0;
  EXPECT_NE(checkRank(c, 1, 0, nullptr, overrun).find("guard"), std::string::npos);
}

}  // namespace
}  // namespace bt

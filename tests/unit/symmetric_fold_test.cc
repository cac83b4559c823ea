// The symmetric kernels' fold (algorithms/symmetric.h) at both tile widths: the GPU's 16-byte
// vectors (with its element-at-a-time rest and its unaligned fallback) run here on one CPU thread
// and must give the CPU's 8 KiB tiles' bits exactly, for every rank count, alignment and output
// shape the symmetric bodies use, so a GPU run of the shared body starts from a tested fold.
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "symmetric.h"

namespace {

using baton::ExecCtx;
using baton::SymOuts;

template <typename T>
T valueAt(int rank, size_t i) {
  // Integer-valued and small: every sum and product is exact in every type tested.
  return baton::TypeTraits<T>::store(
      static_cast<typename baton::TypeTraits<T>::Compute>((rank + 1) * 3 + (int)(i % 5)));
}

// Folds n elements of nIns inputs (each starting `skew` elements into its buffer, to break 16-byte
// alignment) into `nOut` outputs (rotated from `first`) at both widths; the outputs must match bit
// for bit and hold the same value in every output.
template <typename T, template <typename> class OpT>
void expectSameBits(int nIns, size_t n, size_t skew, int nOut, int first) {
  const OpT<T> op = baton::makeOp<T, OpT>(baton::OpParams{});
  std::vector<std::vector<T>> in(nIns, std::vector<T>(n + skew + 8));
  std::vector<const void*> ins(nIns);
  for (int r = 0; r < nIns; ++r) {
    for (size_t i = 0; i < n; ++i) in[r][skew + i] = valueAt<T>(r, i);
    ins[r] = in[r].data();
  }
  auto run = [&](auto tileTag, std::vector<std::vector<T>>* out) {
    constexpr size_t kTile = decltype(tileTag)::value;
    out->assign(nOut, std::vector<T>(n + skew + 8));
    std::vector<void*> bases(nOut);
    for (int o = 0; o < nOut; ++o) bases[o] = (*out)[o].data();
    SymOuts<T> outs;
    if (nOut == 1) outs.one = (*out)[0].data() + skew;
    else outs.bases = bases.data(), outs.n = nOut, outs.first = first, outs.off = skew;
    ExecCtx ctx;
    baton::symFold<T, kTile>(ctx, op, ins.data(), nIns, skew, outs, n);
  };
  std::vector<std::vector<T>> gpuWidth, cpuWidth;
  run(std::integral_constant<size_t, 16>{}, &gpuWidth);
  run(std::integral_constant<size_t, 8192>{}, &cpuWidth);
  for (int o = 0; o < nOut; ++o)
    ASSERT_EQ(std::memcmp(gpuWidth[o].data(), cpuWidth[o].data(), gpuWidth[o].size() * sizeof(T)), 0)
        << "output " << o << " of " << nOut << ", " << nIns << " inputs, n " << n << ", skew " << skew;
  // And the value is the fold itself (sum here, checked on the first and last elements).
  if constexpr (std::is_same_v<OpT<T>, baton::OpSum<T>> && (std::is_same_v<T, float> || std::is_same_v<T, double>)) {
    for (size_t i : {size_t(0), n - 1}) {
      double want = 0;
      for (int r = 0; r < nIns; ++r) want += baton::TypeTraits<T>::load(valueAt<T>(r, i));
      EXPECT_EQ((double)baton::TypeTraits<T>::load(cpuWidth[0][skew + i]), want) << i;
    }
  }
}

template <typename T, template <typename> class OpT>
void sweep() {
  for (int nIns : {1, 2, 3, 4, 7})
    for (size_t n : {size_t(1), size_t(7), size_t(64), size_t(1000), size_t(4099)})
      for (size_t skew : {size_t(0), size_t(1)})
        for (int nOut : {1, 3}) expectSameBits<T, OpT>(nIns, n, skew, nOut, nOut > 1 ? 2 : 0);
}

TEST(SymmetricFold, VectorTilesMatchCpuTilesFloat) {
  sweep<float, baton::OpSum>();
  sweep<float, baton::OpMax>();
  sweep<float, baton::OpSumPostDiv>();
}
TEST(SymmetricFold, VectorTilesMatchCpuTilesLowPrecision) {
  sweep<baton::half_t, baton::OpSum>();
  sweep<baton::bfloat16_t, baton::OpProd>();
  sweep<baton::fp8e4m3_t, baton::OpSum>();
}
TEST(SymmetricFold, VectorTilesMatchCpuTilesIntegers) {
  sweep<int8_t, baton::OpSum>();
  sweep<int64_t, baton::OpMin>();
  sweep<double, baton::OpSum>();
}

}  // namespace

// Reduction operators and the reduce-copy loop every primitive uses.
//
// Computes out[i] = post(op(recv[i], pre(src[i]))) for sum, prod, max, min, PreMulSum (pre = x*scalar)
// and SumPostDiv (avg: post = x/nranks), in the type's compute type (float for 16/8-bit floats).
// Introduced in lesson 01 (docs/lessons/01-naive-allreduce.md).
//
// Memory-ordering contract: none; reduceCopy reads and writes plain memory that the caller has
// already acquired (see connector.h) and will publish afterwards.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "datatypes.h"
#include "exec_model.h"
#include "reduce_x86.h"

namespace baton {

// Which operator a work item carries (runtime form; the kernels take the typed functors below).
enum RedOpKind : int { kOpSum = 0, kOpProd, kOpMax, kOpMin, kOpPreMulSum, kOpSumPostDiv, kOpCount };

// Integer arithmetic wraps like the GPU's: do signed sums and products in the unsigned type.
template <typename C>
BATON_HD C wrapAdd(C a, C b) {
  if constexpr (std::is_integral_v<C> && std::is_signed_v<C>) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return static_cast<C>(a + b);
  }
}
template <typename C>
BATON_HD C wrapMul(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    using U = std::conditional_t<(sizeof(C) < sizeof(unsigned)), unsigned, std::make_unsigned_t<C>>;
    return static_cast<C>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}

template <typename T>
struct OpSum {
  using C = typename TypeTraits<T>::Compute;
  static constexpr bool kPreIdentity = true, kPostIdentity = true;
  BATON_HD C pre(C x) const { return x; }
  BATON_HD C operator()(C a, C b) const { return wrapAdd(a, b); }
  BATON_HD C post(C x) const { return x; }
};
template <typename T>
struct OpProd {
  using C = typename TypeTraits<T>::Compute;
  static constexpr bool kPreIdentity = true, kPostIdentity = true;
  BATON_HD C pre(C x) const { return x; }
  BATON_HD C operator()(C a, C b) const { return wrapMul(a, b); }
  BATON_HD C post(C x) const { return x; }
};
template <typename T>
struct OpMax {
  using C = typename TypeTraits<T>::Compute;
  static constexpr bool kPreIdentity = true, kPostIdentity = true;
  BATON_HD C pre(C x) const { return x; }
  BATON_HD C operator()(C a, C b) const { return a < b ? b : a; }
  BATON_HD C post(C x) const { return x; }
};
template <typename T>
struct OpMin {
  using C = typename TypeTraits<T>::Compute;
  static constexpr bool kPreIdentity = true, kPostIdentity = true;
  BATON_HD C pre(C x) const { return x; }
  BATON_HD C operator()(C a, C b) const { return b < a ? b : a; }
  BATON_HD C post(C x) const { return x; }
};
// ncclRedOpCreatePreMulSum: every rank's input is multiplied by the scalar before the sum.
template <typename T>
struct OpPreMulSum {
  using C = typename TypeTraits<T>::Compute;
  static constexpr bool kPreIdentity = false, kPostIdentity = true;
  C scalar;
  BATON_HD C pre(C x) const { return wrapMul(x, scalar); }
  BATON_HD C operator()(C a, C b) const { return wrapAdd(a, b); }
  BATON_HD C post(C x) const { return x; }
};
// ncclAvg: sum, then divide by the number of ranks once, on the final value. (NCCL pre-multiplies
// floating inputs by 1/n; baton divides at the end for every type so integer-valued data stays exact.)
template <typename T>
struct OpSumPostDiv {
  using C = typename TypeTraits<T>::Compute;
  static constexpr bool kPreIdentity = true, kPostIdentity = false;
  C divisor;
  BATON_HD C pre(C x) const { return x; }
  BATON_HD C operator()(C a, C b) const { return wrapAdd(a, b); }
  BATON_HD C post(C x) const { return static_cast<C>(x / divisor); }
};

// An operator as a work item carries it (the runtime form): the kind, PreMulSum's scalar and
// SumPostDiv's divisor. Both backends turn it into the typed functor with makeOp.
struct OpParams {
  RedOpKind kind = kOpSum;
  unsigned char scalar[8] = {};     // PreMulSum scalar (host-immediate), in the element type
  const void* scalarPtr = nullptr;  // PreMulSum scalar read when the operation runs (ncclScalarDevice)
  int nRanks = 1;                   // SumPostDiv divisor
};

// The typed operator OpT<T> for `p`: PreMulSum reads its scalar (from scalarPtr when it lives in
// the caller's memory, read as the operation starts), SumPostDiv takes the rank count.
template <typename T, template <typename> class OpT>
BATON_HD OpT<T> makeOp(const OpParams& p) {
  using C = typename TypeTraits<T>::Compute;
  if constexpr (std::is_same_v<OpT<T>, OpPreMulSum<T>>) {
    T v;
    memcpy(&v, p.scalarPtr ? p.scalarPtr : p.scalar, sizeof(T));
    return OpPreMulSum<T>{TypeTraits<T>::load(v)};
  } else if constexpr (std::is_same_v<OpT<T>, OpSumPostDiv<T>>) {
    return OpSumPostDiv<T>{static_cast<C>(p.nRanks)};
  } else {
    return OpT<T>{};
  }
}

// An operator kind as a type, for withOp: OpTag<OpSum>::type<T> is OpSum<T>.
template <template <typename> class OpT>
struct OpTag {
  template <typename T>
  using type = OpT<T>;
};

// Calls f(OpTag<OpT>{}) for the operator `kind` names: the one switch from the runtime kind to the
// typed operator (the CPU kernel table and the CUDA kernels' table both pick through it). An
// unknown kind returns f's result type value-initialised (nullptr for a kernel pointer). Host code:
// a launch picks its kernel before it starts.
template <typename F>
auto withOp(int kind, F&& f) -> decltype(f(OpTag<OpSum>{})) {
  switch (kind) {
    case kOpSum: return f(OpTag<OpSum>{});
    case kOpProd: return f(OpTag<OpProd>{});
    case kOpMax: return f(OpTag<OpMax>{});
    case kOpMin: return f(OpTag<OpMin>{});
    case kOpPreMulSum: return f(OpTag<OpPreMulSum>{});
    case kOpSumPostDiv: return f(OpTag<OpSumPostDiv>{});
    default: return decltype(f(OpTag<OpSum>{}))();
  }
}

// One element of reduceCopy, for the line-at-a-time protocols (LL): post(op(recv, pre(src))).
template <typename T, typename Op, Moves M>
BATON_HD T reduceElem(const Op& op, T recv, T src) {
  using Tr = TypeTraits<T>;
  constexpr bool kPre = M.src && M.preSrc && !Op::kPreIdentity, kPost = M.post && !Op::kPostIdentity;
  if constexpr (!(M.recv && M.src) && !kPre && !kPost)
    return M.recv ? recv : src;  // a copy keeps the bits (NaN payloads)
  typename Op::C v;
  if constexpr (M.src) {
    v = Tr::load(src);
    if constexpr (kPre) v = op.pre(v);
    if constexpr (M.recv) v = op(Tr::load(recv), v);
  } else {
    v = Tr::load(recv);
  }
  if constexpr (kPost) v = op.post(v);
  return Tr::store(v);
}

#if defined(__CUDA_ARCH__)
// reduceCopy on a GPU: every thread of the block takes 16-byte vectors when all the buffers are
// 16-byte aligned (slots always are; cudaMalloc'd buffers are, at the offsets channels cut), so
// each input is read once and every output written from registers in one pass; elements
// otherwise, and for the tail.
template <typename T, typename Op, Moves M>
__device__ __forceinline__ void reduceCopyBlock(const Op& op, const T* recv, const T* src, T* sendOut, T* dst,
                                                size_t n) {
  constexpr size_t V = 16 / sizeof(T);
  const uintptr_t addrs =
      (M.recv ? reinterpret_cast<uintptr_t>(recv) : 0) | (M.src ? reinterpret_cast<uintptr_t>(src) : 0) |
      (M.send ? reinterpret_cast<uintptr_t>(sendOut) : 0) | (M.dst ? reinterpret_cast<uintptr_t>(dst) : 0);
  size_t first = 0;
  if ((addrs & 15) == 0) {
    const size_t nv = n / V;
    for (size_t v = threadIdx.x; v < nv; v += blockDim.x) {
      uint4 a{}, b{}, o{};
      if constexpr (M.recv) a = reinterpret_cast<const uint4*>(recv)[v];
      if constexpr (M.src) b = reinterpret_cast<const uint4*>(src)[v];
      const T* ta = reinterpret_cast<const T*>(&a);
      const T* tb = reinterpret_cast<const T*>(&b);
      T* to = reinterpret_cast<T*>(&o);
#pragma unroll
      for (size_t e = 0; e < V; ++e) to[e] = reduceElem<T, Op, M>(op, ta[e], tb[e]);
      if constexpr (M.send) reinterpret_cast<uint4*>(sendOut)[v] = o;
      if constexpr (M.dst) reinterpret_cast<uint4*>(dst)[v] = o;
    }
    first = nv * V;
  }
  for (size_t i = first + threadIdx.x; i < n; i += blockDim.x) {
    const T out = reduceElem<T, Op, M>(op, M.recv ? recv[i] : T{}, M.src ? src[i] : T{});
    if constexpr (M.send) sendOut[i] = out;
    if constexpr (M.dst) dst[i] = out;
  }
}
#endif

// The one loop behind every primitive. Inputs: `recv` (already reduced upstream) when M.recv and
// `src` (this rank's user input, `pre` applied when M.preSrc) when M.src. Outputs: `sendOut` (a
// send slot, or wherever the caller sends) when M.send and `dst` when M.dst, both receiving
// post(value) when M.post. Each Moves compiles to a branch-free loop the compiler can vectorise.
template <typename T, typename Op, Moves M>
BATON_HD void reduceCopy(const ExecCtx& ctx, const Op& op, const T* __restrict__ recv, const T* src, T* sendOut, T* dst,
                         size_t n) {
  static_assert(M.recv || M.src, "reduceCopy needs an input");
#if defined(__CUDA_ARCH__)
  (void)ctx;
  reduceCopyBlock<T, Op, M>(op, recv, src, sendOut, dst, n);
#else
  using Tr = TypeTraits<T>;
  constexpr bool kPre = M.src && M.preSrc && !Op::kPreIdentity;
  constexpr bool kPost = M.post && !Op::kPostIdentity;
  if constexpr (!(M.recv && M.src) && !kPre && !kPost) {
    // A pure copy: let the backend's copy loop (memcpy on the CPU) do it.
    const T* in = M.recv ? recv : src;
    if constexpr (M.send) copyBytes(ctx, sendOut, in, n * sizeof(T));
    if constexpr (M.dst) copyBytes(ctx, dst, in, n * sizeof(T));
    return;
  } else {
    // Over the storage words (Tr::Bits), with a unit stride when the block is one thread (always,
    // on this backend): both let g++ vectorize the loop, conversions included.
    using B = typename Tr::Bits;
    const B* rb = reinterpret_cast<const B*>(recv);
    const B* sb = reinterpret_cast<const B*>(src);
    B* ob = reinterpret_cast<B*>(sendOut);
    B* db = reinterpret_cast<B*>(dst);
    auto one = [&](size_t i) {
      typename Op::C v;
      if constexpr (M.src) {
        v = Tr::loadBits(sb[i]);
        if constexpr (kPre) v = op.pre(v);
        if constexpr (M.recv) v = op(Tr::loadBits(rb[i]), v);
      } else {
        v = Tr::loadBits(rb[i]);
      }
      if constexpr (kPost) v = op.post(v);
      const B out = Tr::storeBits(v);
      if constexpr (M.send) ob[i] = out;
      if constexpr (M.dst) db[i] = out;
    };
    if (threadCount(ctx) == 1) {
      size_t i = reduceVectorPrefix<T, Op, M.recv, M.src, kPre, kPost>(op, recv, src, M.send ? sendOut : nullptr,
                                                                       M.dst ? dst : nullptr, n);
      for (; i < n; ++i) one(i);
    } else {
      for (size_t i = threadId(ctx); i < n; i += threadCount(ctx)) one(i);
    }
  }
#endif
}

}  // namespace baton

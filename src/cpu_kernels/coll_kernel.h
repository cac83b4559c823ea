// The CPU backend's "kernel": one channel's share of one collective, for one (type, operator).
// Instantiated for every combination in kernels_*.cc; kernel_table.cc picks one at run time.
#pragma once

#include "coll_args.h"
#include "coll_dispatch.h"
#include "exec_model.h"
#include "nccl.h"
#include "reduce_ops.h"

namespace baton {

using CollKernel = void (*)(ExecCtx& ctx, const CollArgs& args, const OpParams& op);

// Reducing collectives (AllReduce, Reduce, ReduceScatter) for one (type, operator), any protocol.
template <typename T, template <typename> class OpT>
void reduceKernel(ExecCtx& ctx, const CollArgs& a, const OpParams& p) {
  const OpT<T> op = makeOp<T, OpT>(p);
  runReducing<T>(ctx, a, op);
}

// Data movement only: AllGather and Broadcast, on bytes.
void copyKernel(ExecCtx& ctx, const CollArgs& a, const OpParams& p);

#define BATON_DECLARE_KERNELS(T)                                                                 \
  extern template void reduceKernel<T, OpSum>(ExecCtx&, const CollArgs&, const OpParams&);       \
  extern template void reduceKernel<T, OpProd>(ExecCtx&, const CollArgs&, const OpParams&);      \
  extern template void reduceKernel<T, OpMax>(ExecCtx&, const CollArgs&, const OpParams&);       \
  extern template void reduceKernel<T, OpMin>(ExecCtx&, const CollArgs&, const OpParams&);       \
  extern template void reduceKernel<T, OpPreMulSum>(ExecCtx&, const CollArgs&, const OpParams&); \
  extern template void reduceKernel<T, OpSumPostDiv>(ExecCtx&, const CollArgs&, const OpParams&);
#define BATON_DEFINE_KERNELS(T)                                                           \
  template void reduceKernel<T, OpSum>(ExecCtx&, const CollArgs&, const OpParams&);       \
  template void reduceKernel<T, OpProd>(ExecCtx&, const CollArgs&, const OpParams&);      \
  template void reduceKernel<T, OpMax>(ExecCtx&, const CollArgs&, const OpParams&);       \
  template void reduceKernel<T, OpMin>(ExecCtx&, const CollArgs&, const OpParams&);       \
  template void reduceKernel<T, OpPreMulSum>(ExecCtx&, const CollArgs&, const OpParams&); \
  template void reduceKernel<T, OpSumPostDiv>(ExecCtx&, const CollArgs&, const OpParams&);

BATON_DECLARE_KERNELS(int8_t)
BATON_DECLARE_KERNELS(uint8_t)
BATON_DECLARE_KERNELS(int32_t)
BATON_DECLARE_KERNELS(uint32_t)
BATON_DECLARE_KERNELS(int64_t)
BATON_DECLARE_KERNELS(uint64_t)
BATON_DECLARE_KERNELS(half_t)
BATON_DECLARE_KERNELS(float)
BATON_DECLARE_KERNELS(double)
BATON_DECLARE_KERNELS(bfloat16_t)
BATON_DECLARE_KERNELS(fp8e4m3_t)
BATON_DECLARE_KERNELS(fp8e5m2_t)

// The kernel for (func, type, op). AllGather/Broadcast ignore type and op.
CollKernel collKernel(CollFunc func, ncclDataType_t type, RedOpKind op);

}  // namespace baton

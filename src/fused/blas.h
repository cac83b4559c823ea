// The local GEMM of the fused operations (lesson 11): a real BLAS, loaded when first needed.
//
// libnccl.so.2 does not link a BLAS, so a program that never calls a fused operation needs none
// (as a CPU-only machine needs no CUDA runtime). The first fused call opens Debian's OpenBLAS
// (libopenblas.so.0; tools/install-deps.sh installs the single-threaded build, one thread per
// rank) or, failing that, any CBLAS in libblas.so.3, and asks a threaded OpenBLAS for one thread.
// Operands of every supported type are computed in fp32: half and bfloat16 tiles are widened
// first and results rounded once when stored (blas.cc).
#pragma once

#include <cstddef>

#include "nccl.h"

namespace baton {

// Opens the BLAS (once per process). ncclSystemError, naming what was tried, when none loads.
ncclResult_t blasLoad(const char* fn);
const char* blasName();  // the library that was loaded

// Row-major C[m x n] = alpha * op(A) * op(B) + beta * C, op(X) = X or Xᵀ; lda/ldb/ldc are the row
// pitches of the matrices as stored. blasLoad must have succeeded.
void sgemm(bool transA, bool transB, size_t m, size_t n, size_t k, float alpha, const float* a, size_t lda,
           const float* b, size_t ldb, float beta, float* c, size_t ldc);

// Element conversions between a fused operation's datatype (float, half, bfloat16) and fp32.
void widenToFloat(ncclDataType_t type, const void* src, float* dst, size_t count);
void roundFromFloat(ncclDataType_t type, const float* src, void* dst, size_t count);

}  // namespace baton

// Loading the BLAS at run time and the fp32 conversions of the fused operations' operands.
#include "fused/blas.h"

#include <dlfcn.h>

#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "datatypes.h"
#include "misc/debug.h"
#include "misc/param.h"

namespace baton {
namespace {

// The CBLAS ABI: enum values fixed by the reference cblas.h (netlib) that every CBLAS exports.
constexpr int kCblasRowMajor = 101, kCblasNoTrans = 111, kCblasTrans = 112;
using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
using SetThreadsFn = void (*)(int);
using GetParallelFn = int (*)();

struct Blas {
  std::once_flag once;
  SgemmFn sgemm = nullptr;
  std::string name = "none";
  bool serialize = false;  // a sequential OpenBLAS: one call at a time in this process
  std::mutex mu;
  std::string tried;
};
Blas gBlas;

void openBlas() {
  std::vector<std::string> libs = {"libopenblas.so.0", "libblas.so.3"};
  if (envSet("BATON_BLAS_LIB")) libs = {envStr("BATON_BLAS_LIB")};
  for (const std::string& libName : libs) {
    const char* lib = libName.c_str();
    void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      gBlas.tried += std::string(gBlas.tried.empty() ? "" : "; ") + dlerror();
      continue;
    }
    auto fn = (SgemmFn)dlsym(h, "cblas_sgemm");
    if (!fn) {
      gBlas.tried += std::string(gBlas.tried.empty() ? "" : "; ") + lib + " has no cblas_sgemm";
      dlclose(h);
      continue;
    }
    // A threaded OpenBLAS would start a thread per core in every rank: one rank, one thread.
    if (auto set = (SetThreadsFn)dlsym(h, "openblas_set_num_threads")) set(1);
    // A sequential OpenBLAS built without USE_LOCKING (Debian's libopenblas0-serial) shares its
    // buffers between calls: two thread ranks calling it at once got wrong products (seen in
    // tests/collectives/fused_tp_test.cc). The threaded build locks, with one thread it computes
    // on the caller's.
    if (auto par = (GetParallelFn)dlsym(h, "openblas_get_parallel")) gBlas.serialize = par() == 0;
    gBlas.sgemm = fn;
    gBlas.name = lib;
    BATON_INFO(kSubInit, "fused operations: GEMM from %s%s", lib,
               gBlas.serialize ? " (sequential OpenBLAS: one GEMM at a time per process)" : "");
    return;
  }
}

}  // namespace

ncclResult_t blasLoad(const char* fn) {
  std::call_once(gBlas.once, openBlas);
  if (gBlas.sgemm) return ncclSuccess;
  return batonError(ncclSystemError,
                    "%s: the fused operations need a CBLAS and none loaded (%s); on Debian: apt-get install "
                    "libopenblas0-pthread",
                    fn, gBlas.tried.c_str());
}

const char* blasName() { return gBlas.name.c_str(); }

void sgemm(bool transA, bool transB, size_t m, size_t n, size_t k, float alpha, const float* a, size_t lda,
           const float* b, size_t ldb, float beta, float* c, size_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // C = beta * C; a reference BLAS would refuse the zero leading dimensions
    for (size_t i = 0; i < m; ++i)
      for (size_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.f ? 0.f : beta * c[i * ldc + j];
    return;
  }
  auto ld = [](size_t v) { return (int)(v > 0 ? v : 1); };
  std::unique_lock<std::mutex> lock(gBlas.mu, std::defer_lock);
  if (gBlas.serialize) lock.lock();
  gBlas.sgemm(kCblasRowMajor, transA ? kCblasTrans : kCblasNoTrans, transB ? kCblasTrans : kCblasNoTrans, (int)m,
              (int)n, (int)k, alpha, a, ld(lda), b, ld(ldb), beta, c, ld(ldc));
}

namespace {
template <typename T>
void widen(const T* src, float* dst, size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = toFloat(src[i]);
}
template <typename T>
void narrow(const float* src, T* dst, size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = fromFloat<T>(src[i]);
}
}  // namespace

void widenToFloat(ncclDataType_t type, const void* src, float* dst, size_t count) {
  if (count == 0) return;  // src and dst may be NULL (an empty operand)
  switch (type) {
    case ncclFloat16: widen((const half_t*)src, dst, count); break;
    case ncclBfloat16: widen((const bfloat16_t*)src, dst, count); break;
    default: memcpy(dst, src, count * sizeof(float)); break;
  }
}

void roundFromFloat(ncclDataType_t type, const float* src, void* dst, size_t count) {
  if (count == 0) return;
  switch (type) {
    case ncclFloat16: narrow(src, (half_t*)dst, count); break;
    case ncclBfloat16: narrow(src, (bfloat16_t*)dst, count); break;
    default: memcpy(dst, src, count * sizeof(float)); break;
  }
}

}  // namespace baton

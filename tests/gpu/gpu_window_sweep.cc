// What windows buy on a GPU (lesson 09): AllReduce and AllGather, float, between ncclMemAlloc
// buffers registered as NCCL_WIN_COLL_SYMMETRIC windows (baton: the symmetric kernels, reading and
// writing the peers' memory in place) beside the same calls on cudaMalloc buffers (the ring through
// FIFOs), per size, in one run, with the device's copy bandwidth. Thread ranks, one process.
// tools/scripts/gpu-check.sh runs it; it needs a GPU.
//
//   gpu_window_sweep [-n ranks] [-e maxbytes] [-c allreduce|allgather]
//
// busbw is nccl-tests' (AllReduce algbw x 2(n-1)/n, AllGather x (n-1)/n); "win/ring" is the ratio
// of the two busbw columns, measured back to back at each size.
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gpu_check.h"

namespace {

struct Rank {
  int dev = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  float *winIn = nullptr, *winOut = nullptr;  // ncclMemAlloc, in windows
  float *in = nullptr, *out = nullptr;        // cudaMalloc
  ncclWindow_t wIn = nullptr, wOut = nullptr;
};

// Microseconds per call of `once` (every rank's call in one group), after warm-up.
template <typename F>
double timeCalls(std::vector<Rank>& ranks, size_t bytes, F once) {
  auto syncAll = [&] {
    for (Rank& R : ranks) {
      CUDA(cudaSetDevice(R.dev));
      CUDA(cudaStreamSynchronize(R.stream));
    }
  };
  const int iters = bytes >= (64u << 20) ? 10 : 50;
  for (int w = 0; w < 5; ++w) once();
  syncAll();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) once();
  syncAll();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 2;
  size_t maxBytes = 256u << 20;
  bool gather = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-n" && i + 1 < argc) n = atoi(argv[++i]);
    else if (a == "-e" && i + 1 < argc) maxBytes = strtoull(argv[++i], nullptr, 0);
    else if (a == "-c" && i + 1 < argc) gather = std::string(argv[++i]) == "allgather";
    else {
      fprintf(stderr, "usage: %s [-n ranks] [-e maxbytes] [-c allreduce|allgather]\n", argv[0]);
      return 2;
    }
  }
  const int nd = ndevices();
  if (nd == 0) {
    fprintf(stderr, "no CUDA device\n");
    return 77;
  }
  if (n < 2 || maxBytes < 8 || maxBytes % (4u * n)) {
    fprintf(stderr, "gpu_window_sweep: -n %d -e %zu: need 2 or more ranks and a size that splits into n floats\n", n,
            maxBytes);
    return 2;
  }
  std::vector<Rank> ranks(n);
  {
    int one = n;
    std::vector<RankComm> rc = initRanks(&one, false);
    for (int r = 0; r < n; ++r) ranks[r].comm = rc[r].comm, ranks[r].dev = rc[r].dev;
  }
  for (Rank& R : ranks) {
    CUDA(cudaSetDevice(R.dev));
    CUDA(cudaStreamCreateWithFlags(&R.stream, cudaStreamNonBlocking));
    NCCL(ncclMemAlloc((void**)&R.winIn, maxBytes));
    NCCL(ncclMemAlloc((void**)&R.winOut, maxBytes));
    CUDA(cudaMalloc(&R.in, maxBytes));
    CUDA(cudaMalloc(&R.out, maxBytes));
    CUDA(cudaMemset(R.winIn, 0, maxBytes));
    CUDA(cudaMemset(R.in, 0, maxBytes));
  }
  NCCL(ncclGroupStart());
  for (Rank& R : ranks) {
    NCCL(ncclCommWindowRegister(R.comm, R.winIn, maxBytes, &R.wIn, NCCL_WIN_COLL_SYMMETRIC));
    NCCL(ncclCommWindowRegister(R.comm, R.winOut, maxBytes, &R.wOut, NCCL_WIN_COLL_SYMMETRIC));
  }
  NCCL(ncclGroupEnd());
  CUDA(cudaDeviceSynchronize());
  const double copyGBs = deviceCopyGBs(ranks[0].dev, ranks[0].in, ranks[0].out, maxBytes);
  printf("# %s float%s, %d ranks on %d device(s): windows (ncclMemAlloc, NCCL_WIN_COLL_SYMMETRIC) and cudaMalloc\n",
         gather ? "AllGather" : "AllReduce", gather ? "" : " sum", n, nd);
  printf("# copy bandwidth (cudaMemcpy device to device, %zu bytes): %.1f GB/s\n", maxBytes, copyGBs);
  printf("%12s %10s %10s %10s %10s %9s %9s\n", "size", "win(us)", "ring(us)", "win busbw", "ring busbw", "win/ring",
         "win/copy");
  const double factor = gather ? (double)(n - 1) / n : 2.0 * (n - 1) / n;
  for (size_t bytes = 8; bytes <= maxBytes; bytes = bytes * 4 > maxBytes && bytes < maxBytes ? maxBytes : bytes * 4) {
    const size_t count = gather ? bytes / 4 / n : bytes / 4;  // nccl-tests' size: AllGather's whole output
    if (count == 0) continue;
    auto call = [&](bool win) {
      return [&, win] {
        NCCL(ncclGroupStart());
        for (Rank& R : ranks) {
          const float* in = win ? R.winIn : R.in;
          float* out = win ? R.winOut : R.out;
          if (gather) NCCL(ncclAllGather(in, out, count, ncclFloat32, R.comm, R.stream));
          else NCCL(ncclAllReduce(in, out, count, ncclFloat32, ncclSum, R.comm, R.stream));
        }
        NCCL(ncclGroupEnd());
      };
    };
    const double usWin = timeCalls(ranks, bytes, call(true));
    const double usRing = timeCalls(ranks, bytes, call(false));
    const double busWin = bytes / (usWin * 1e-6) / 1e9 * factor, busRing = bytes / (usRing * 1e-6) / 1e9 * factor;
    printf("%12zu %10.2f %10.2f %10.2f %10.2f %9.2f %9.3f\n", bytes, usWin, usRing, busWin, busRing, busWin / busRing,
           busWin / copyGBs);
    fflush(stdout);
  }
  NCCL(ncclGroupStart());
  for (Rank& R : ranks) {
    NCCL(ncclCommWindowDeregister(R.comm, R.wIn));
    NCCL(ncclCommWindowDeregister(R.comm, R.wOut));
  }
  NCCL(ncclGroupEnd());
  for (Rank& R : ranks) {
    NCCL(ncclCommDestroy(R.comm));
    CUDA(cudaSetDevice(R.dev));
    NCCL(ncclMemFree(R.winIn));
    NCCL(ncclMemFree(R.winOut));
    CUDA(cudaFree(R.in));
    CUDA(cudaFree(R.out));
    CUDA(cudaStreamDestroy(R.stream));
  }
  return 0;
}

// What the CUDA backend's check programs share (gpu_collectives.cc, gpu_sendrecv.cc, ...): exit on a
// failed CUDA or NCCL call with its message, the device count, the ranks of a check, and the
// device's copy bandwidth.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#define CUDA(call)                                                                           \
  do {                                                                                       \
    cudaError_t e_ = (call);                                                                 \
    if (e_ != cudaSuccess) {                                                                 \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(2);                                                                               \
    }                                                                                        \
  } while (0)
#define NCCL(call)                                                                               \
  do {                                                                                           \
    ncclResult_t r_ = (call);                                                                    \
    if (r_ != ncclSuccess) {                                                                     \
      fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #call, ncclGetErrorString(r_), \
              ncclGetLastError(nullptr));                                                        \
      exit(3);                                                                                   \
    }                                                                                            \
  } while (0)

inline int ndevices() {
  int d = 0;
  const cudaError_t e = cudaGetDeviceCount(&d);
  if (e != cudaSuccess) fprintf(stderr, "cudaGetDeviceCount: %s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? d : 0;
}

// A rank this process drives.
struct RankComm {
  int id = 0, dev = 0;
  ncclComm_t comm = nullptr;
};

// The ranks of a check: `*n` thread ranks of this process (ncclCommInitAll, rank r on device
// r % devices), or with `procs` this process's one rank of a job baton-run started (BATON_RANK,
// BATON_NRANKS; NCCL_COMM_ID meets the others), *n then the job's size. Exits 2 outside baton-run.
inline std::vector<RankComm> initRanks(int* n, bool procs) {
  const int nd = ndevices();
  std::vector<RankComm> ranks;
  if (procs) {
    const char* rs = getenv("BATON_RANK");
    const char* ns = getenv("BATON_NRANKS");
    if (!rs || !ns) {
      fprintf(stderr, "check --procs: run under baton-run (BATON_RANK, BATON_NRANKS unset)\n");
      exit(2);
    }
    *n = atoi(ns);
    RankComm R;
    R.id = atoi(rs), R.dev = R.id % nd;
    ncclUniqueId id;
    NCCL(ncclGetUniqueId(&id));
    CUDA(cudaSetDevice(R.dev));
    NCCL(ncclCommInitRank(&R.comm, *n, id, R.id));
    ranks.push_back(R);
  } else {
    std::vector<int> devs(*n);
    std::vector<ncclComm_t> comms(*n);
    for (int r = 0; r < *n; ++r) devs[r] = r % nd;
    NCCL(ncclCommInitAll(comms.data(), *n, devs.data()));
    for (int r = 0; r < *n; ++r) ranks.push_back({r, devs[r], comms[r]});
  }
  return ranks;
}

// Bytes copied per second (GB/s), device to device, `bytes` at a time from src to dst on `dev`.
inline double deviceCopyGBs(int dev, const void* src, void* dst, size_t bytes) {
  CUDA(cudaSetDevice(dev));
  cudaStream_t s;
  cudaEvent_t a, b;
  CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CUDA(cudaEventCreate(&a));
  CUDA(cudaEventCreate(&b));
  for (int w = 0; w < 3; ++w) CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s));
  CUDA(cudaEventRecord(a, s));
  const int copies = 20;
  for (int w = 0; w < copies; ++w) CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s));
  CUDA(cudaEventRecord(b, s));
  CUDA(cudaEventSynchronize(b));
  float ms = 0;
  CUDA(cudaEventElapsedTime(&ms, a, b));
  CUDA(cudaEventDestroy(a));
  CUDA(cudaEventDestroy(b));
  CUDA(cudaStreamDestroy(s));
  return (double)bytes * copies / (ms * 1e-3) / 1e9;
}

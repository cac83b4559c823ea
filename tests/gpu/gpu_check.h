// What the CUDA backend's check programs share (gpu_collectives.cc, gpu_sendrecv.cc): exit on a
// failed CUDA or NCCL call with its message, the device count, and the device's copy bandwidth.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>

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

// A GPU communicator: the part of a communicator that drives a CUDA device (README's CUDA backend).
//
// When every rank had a CUDA device current at init and all are processes or threads of one host,
// each channel's ring gets a FIFO in device memory: a peer thread of this process reaches it by
// its pointer (peer access between devices), a peer process through a CUDA IPC handle. Collectives
// on device buffers then run as kernels on the caller's stream (gpu_launch.cc), in the order the
// communicator's calls were made; host buffers keep the CPU backend.
#pragma once

#include <memory>
#include <vector>

#include "cuda/cuda_backend.h"
#include "nccl.h"

struct ncclComm;

namespace baton {

struct Task;

class GpuComm {
 public:
  ~GpuComm();
  // The collective part of init (every rank calls it after its rings exist); *out stays null when
  // the communicator is not a GPU one, and `why` says why.
  static ncclResult_t create(ncclComm* comm, std::shared_ptr<GpuComm>* out, std::string* why);

  // Enqueues `t` (a collective on device buffers) on its stream and returns.
  ncclResult_t launch(ncclComm* comm, const Task& t);
  // Raises the kernels' abort flag (ncclCommAbort): their waits give up.
  void abort();
  // Waits for every kernel launched so far (ncclCommDestroy, ncclCommAbort).
  ncclResult_t drain();
  // A kernel's failure, once (ncclCommGetAsyncError): ncclSuccess while none failed.
  ncclResult_t takeFailure(ncclComm* comm);

  int device() const { return dev_; }
  int channels() const { return nChannels_; }

 private:
  const CudaBackend* b_ = nullptr;
  int dev_ = 0;
  int nChannels_ = 0;
  int rank_ = 0;
  std::vector<void*> fifos_;      // ours (device memory): one receive FIFO per channel
  std::vector<void*> opened_;     // peers' FIFOs opened through CUDA IPC
  void* channelsDev_ = nullptr;   // GpuChannelDev[nChannels_]
  void* userRanksDev_ = nullptr;  // int[nChannels_][nRanks]
  GpuStatus* status_ = nullptr;   // pinned; statusDev_ is the device's view of it
  GpuStatus* statusDev_ = nullptr;
  int* abort_ = nullptr;  // pinned; abortDev_ is the device's view of it
  int* abortDev_ = nullptr;
  void* lastWork_ = nullptr;  // event after the last launch: the next one waits for it
  bool launched_ = false;
  bool failureTaken_ = false;
};

// Whether the collective `t` on `comm` runs on the device, or why it cannot: ncclSuccess and
// *onDevice = false for host buffers; ncclInvalidUsage / ncclInvalidArgument naming the argument
// for device buffers the communicator cannot serve.
ncclResult_t gpuClassify(ncclComm* comm, const Task& t, const char* fn, bool* onDevice);

}  // namespace baton

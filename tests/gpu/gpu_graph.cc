// The CUDA backend inside CUDA graphs: collectives and a send/recv group captured into one graph per
// rank, the graphs launched again and again with new inputs, and eager calls on another stream
// before and after every launch (NCCL supports any mix of captured and eager work on one
// communicator). Uses only NCCL's API and the CUDA runtime. tools/scripts/gpu-check.sh runs it; it needs a GPU.
//
//   gpu_graph check [-n ranks] [-r launches] [--global] [--alltoall]
//
// One thread drives every rank (groups). Each rank's graph is captured (thread-local capture mode,
// or global with --global) on stream A, with stream C forked at its start:
//   A: AllReduce (sum) in -> sum; AllGather in -> all; one group of Send in to the next rank and
//      Recv from the previous into shifted; a second group whose Send is on A and whose Recv (of
//      the rank two back, into shifted2) is on C
//   C: Broadcast of rank 0's in -> bcast. Nothing in the graph orders it against A's calls: the
//      library must (a communicator's kernels run one at a time, in call order).
//   --alltoall adds, on A, an AlltoAll of in -> exchanged (kCount / n elements per peer), whose
//      copies, kernels and (Bruck on more than 3 ranks: BATON_ALLTOALL_ALGO) scratch allocations
//      are captured.
// Each launch: new inputs copied on A, an eager AllReduce on stream B (no order against A from the
// caller), the graph on A, another eager AllReduce on B; then every output is checked exactly
// (int32), and at the end that no kernel reported an error (ncclCommGetAsyncError). With baton
// last (these leave the communicators in an error state): a call on host buffers on a capturing
// stream, and a group whose streams are one captured and one not, are ncclInvalidUsage.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_check.h"

namespace {

constexpr size_t kCount = (1u << 20) + 3;  // int32 elements: past a FIFO's steps, not a multiple of a chunk

int32_t val(int r, size_t i, int it) { return (r + 1) * 1000 + (int32_t)(i % 997) + it * 7; }
int32_t eagerVal(int r, size_t i, int it) { return (r + 1) * (int32_t)(i % 13) + it; }

struct Rank {
  int dev = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t a = nullptr, b = nullptr, c = nullptr;
  cudaEvent_t fork = nullptr, join = nullptr;
  int32_t *in = nullptr, *sum = nullptr, *all = nullptr, *shifted = nullptr, *shifted2 = nullptr, *bcast = nullptr;
  int32_t *in2 = nullptr, *out2 = nullptr, *out3 = nullptr;
  int32_t* exchanged = nullptr;  // --alltoall
  int32_t* host = nullptr;       // pinned: inputs on the way in, outputs on the way out
  cudaGraphExec_t exec = nullptr;
};

void capture(std::vector<Rank>& ranks, cudaStreamCaptureMode mode, bool alltoall) {
  const int n = (int)ranks.size();
  for (Rank& R : ranks) {
    CUDA(cudaSetDevice(R.dev));
    CUDA(cudaStreamBeginCapture(R.a, mode));
    CUDA(cudaEventRecord(R.fork, R.a));
    CUDA(cudaStreamWaitEvent(R.c, R.fork, 0));
  }
  NCCL(ncclGroupStart());
  for (Rank& R : ranks) NCCL(ncclAllReduce(R.in, R.sum, kCount, ncclInt32, ncclSum, R.comm, R.a));
  NCCL(ncclGroupEnd());
  NCCL(ncclGroupStart());
  for (Rank& R : ranks) NCCL(ncclAllGather(R.in, R.all, kCount, ncclInt32, R.comm, R.a));
  NCCL(ncclGroupEnd());
  NCCL(ncclGroupStart());
  for (int r = 0; r < n; ++r) {
    Rank& R = ranks[r];
    NCCL(ncclSend(R.in, kCount, ncclInt32, (r + 1) % n, R.comm, R.a));
    NCCL(ncclRecv(R.shifted, kCount, ncclInt32, (r + n - 1) % n, R.comm, R.a));
  }
  NCCL(ncclGroupEnd());
  NCCL(ncclGroupStart());
  for (int r = 0; r < n; ++r) {
    Rank& R = ranks[r];
    NCCL(ncclSend(R.in, kCount, ncclInt32, (r + 2) % n, R.comm, R.a));
    NCCL(ncclRecv(R.shifted2, kCount, ncclInt32, (r + 2 * n - 2) % n, R.comm, R.c));
  }
  NCCL(ncclGroupEnd());
  NCCL(ncclGroupStart());
  for (Rank& R : ranks) NCCL(ncclBroadcast(R.in, R.bcast, kCount, ncclInt32, 0, R.comm, R.c));
  NCCL(ncclGroupEnd());
  if (alltoall) {
    NCCL(ncclGroupStart());
    for (Rank& R : ranks) NCCL(ncclAlltoAll(R.in, R.exchanged, kCount / n, ncclInt32, R.comm, R.a));
    NCCL(ncclGroupEnd());
  }
  // Every capture ends before any graph is instantiated: this thread may not instantiate while a
  // stream it captures is still capturing.
  std::vector<cudaGraph_t> graphs(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    Rank& R = ranks[i];
    CUDA(cudaSetDevice(R.dev));
    CUDA(cudaEventRecord(R.join, R.c));
    CUDA(cudaStreamWaitEvent(R.a, R.join, 0));
    CUDA(cudaStreamEndCapture(R.a, &graphs[i]));
  }
  for (size_t i = 0; i < ranks.size(); ++i) {
    CUDA(cudaSetDevice(ranks[i].dev));
    CUDA(cudaGraphInstantiate(&ranks[i].exec, graphs[i], 0));
    CUDA(cudaGraphDestroy(graphs[i]));
  }
}

// Copies `count` elements of device memory p to the rank's pinned buffer and compares them with want(i).
template <typename Want>
int expect(Rank& R, const int32_t* p, size_t count, const char* what, int rank, int it, Want want) {
  CUDA(cudaMemcpy(R.host, p, count * sizeof(int32_t), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < count; ++i)
    if (R.host[i] != want(i)) {
      fprintf(stderr, "launch %d rank %d: %s[%zu] = %d, expected %d\n", it, rank, what, i, R.host[i], want(i));
      return 1;
    }
  return 0;
}

// baton only: what a capture refuses. Leaves the communicators in an error state.
int refusals(std::vector<Rank>& ranks, cudaStreamCaptureMode mode) {
  int bad = 0;
  Rank& R = ranks[0];
  CUDA(cudaSetDevice(R.dev));
  std::vector<int32_t> host(16, 1), hostOut(16, 0);
  CUDA(cudaStreamBeginCapture(R.a, mode));
  ncclResult_t res = ncclAllReduce(host.data(), hostOut.data(), 16, ncclInt32, ncclSum, R.comm, R.a);
  cudaGraph_t g;
  CUDA(cudaStreamEndCapture(R.a, &g));
  CUDA(cudaGraphDestroy(g));
  if (res != ncclInvalidUsage || !strstr(ncclGetLastError(R.comm), "captured into a CUDA graph")) {
    fprintf(stderr, "host buffers on a capturing stream: got %s (%s), expected ncclInvalidUsage\n",
            ncclGetErrorString(res), ncclGetLastError(R.comm));
    bad = 1;
  }
  if (ranks.size() < 2) return bad;
  // A group with its send on a capturing stream and its receive on an eager one.
  const int n = (int)ranks.size();
  for (Rank& Q : ranks) {
    CUDA(cudaSetDevice(Q.dev));
    CUDA(cudaStreamBeginCapture(Q.a, mode));
  }
  NCCL(ncclGroupStart());
  for (int r = 0; r < n; ++r) {
    NCCL(ncclSend(ranks[r].in, 4, ncclInt32, (r + 1) % n, ranks[r].comm, ranks[r].a));
    NCCL(ncclRecv(ranks[r].shifted, 4, ncclInt32, (r + n - 1) % n, ranks[r].comm, ranks[r].b));
  }
  res = ncclGroupEnd();
  for (Rank& Q : ranks) {
    CUDA(cudaSetDevice(Q.dev));
    CUDA(cudaStreamEndCapture(Q.a, &g));
    CUDA(cudaGraphDestroy(g));
  }
  if (res != ncclInvalidUsage) {
    fprintf(stderr, "a group with one captured and one eager stream: got %s, expected ncclInvalidUsage\n",
            ncclGetErrorString(res));
    bad = 1;
  }
  printf("refused: host buffers on a capturing stream%s: %s\n",
         n > 1 ? ", a group with one captured and one eager stream" : "", bad ? "FAILED" : "ok");
  return bad;
}

int check(int n, int launches, cudaStreamCaptureMode mode, bool alltoall) {
  const int nd = ndevices();
  std::vector<int> devs(n);
  std::vector<ncclComm_t> comms(n);
  for (int r = 0; r < n; ++r) devs[r] = r % nd;
  NCCL(ncclCommInitAll(comms.data(), n, devs.data()));
  std::vector<Rank> ranks(n);
  const size_t bytes = kCount * sizeof(int32_t);
  for (int r = 0; r < n; ++r) {
    Rank& R = ranks[r];
    R.dev = devs[r], R.comm = comms[r];
    CUDA(cudaSetDevice(R.dev));
    for (cudaStream_t* s : {&R.a, &R.b, &R.c}) CUDA(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking));
    CUDA(cudaEventCreateWithFlags(&R.fork, cudaEventDisableTiming));
    CUDA(cudaEventCreateWithFlags(&R.join, cudaEventDisableTiming));
    for (int32_t** p : {&R.in, &R.sum, &R.shifted, &R.shifted2, &R.bcast, &R.in2, &R.out2, &R.out3, &R.exchanged})
      CUDA(cudaMalloc(p, bytes));
    CUDA(cudaMalloc(&R.all, bytes * n));
    CUDA(cudaMallocHost(&R.host, bytes * n));
  }
  capture(ranks, mode, alltoall);
  int bad = 0;
  for (int it = 0; it < launches && !bad; ++it) {
    for (int r = 0; r < n; ++r) {
      Rank& R = ranks[r];
      CUDA(cudaSetDevice(R.dev));
      for (size_t i = 0; i < kCount; ++i) R.host[i] = val(r, i, it);
      CUDA(cudaMemcpyAsync(R.in, R.host, bytes, cudaMemcpyHostToDevice, R.a));
      CUDA(cudaStreamSynchronize(R.a));  // the pinned buffer is refilled below
      for (size_t i = 0; i < kCount; ++i) R.host[i] = eagerVal(r, i, it);
      CUDA(cudaMemcpyAsync(R.in2, R.host, bytes, cudaMemcpyHostToDevice, R.b));
      CUDA(cudaStreamSynchronize(R.b));
    }
    NCCL(ncclGroupStart());
    for (Rank& R : ranks) NCCL(ncclAllReduce(R.in2, R.out2, kCount, ncclInt32, ncclSum, R.comm, R.b));
    NCCL(ncclGroupEnd());
    for (Rank& R : ranks) {
      CUDA(cudaSetDevice(R.dev));
      CUDA(cudaGraphLaunch(R.exec, R.a));
    }
    NCCL(ncclGroupStart());
    for (Rank& R : ranks) NCCL(ncclAllReduce(R.in2, R.out3, kCount, ncclInt32, ncclMax, R.comm, R.b));
    NCCL(ncclGroupEnd());
    for (Rank& R : ranks) {
      CUDA(cudaSetDevice(R.dev));
      CUDA(cudaStreamSynchronize(R.a));
      CUDA(cudaStreamSynchronize(R.b));
    }
    for (int r = 0; r < n && !bad; ++r) {
      Rank& R = ranks[r];
      CUDA(cudaSetDevice(R.dev));
      bad |= expect(R, R.sum, kCount, "AllReduce", r, it, [&](size_t i) {
        int32_t s = 0;
        for (int q = 0; q < n; ++q) s += val(q, i, it);
        return s;
      });
      bad |= expect(R, R.all, kCount * n, "AllGather", r, it,
                    [&](size_t i) { return val((int)(i / kCount), i % kCount, it); });
      bad |= expect(R, R.shifted, kCount, "Recv", r, it, [&](size_t i) { return val((r + n - 1) % n, i, it); });
      bad |=
          expect(R, R.shifted2, kCount, "Recv on C", r, it, [&](size_t i) { return val((r + 2 * n - 2) % n, i, it); });
      bad |= expect(R, R.bcast, kCount, "Broadcast", r, it, [&](size_t i) { return val(0, i, it); });
      const size_t block = kCount / n;  // peer q's block r lands in block q
      if (alltoall)
        bad |= expect(R, R.exchanged, block * n, "AlltoAll", r, it,
                      [&](size_t i) { return val((int)(i / block), r * block + i % block, it); });
      bad |= expect(R, R.out2, kCount, "eager AllReduce before", r, it, [&](size_t i) {
        int32_t s = 0;
        for (int q = 0; q < n; ++q) s += eagerVal(q, i, it);
        return s;
      });
      bad |= expect(R, R.out3, kCount, "eager AllReduce (max) after", r, it,
                    [&](size_t i) { return eagerVal(n - 1, i, it); });
    }
  }
  for (int r = 0; r < n; ++r) {
    ncclResult_t async = ncclSuccess;
    NCCL(ncclCommGetAsyncError(ranks[r].comm, &async));
    if (async != ncclSuccess) {
      fprintf(stderr, "rank %d: ncclCommGetAsyncError: %s (%s)\n", r, ncclGetErrorString(async),
              ncclGetLastError(ranks[r].comm));
      bad = 1;
    }
  }
  printf(
      "%d rank(s), %s capture, %d launches of one graph (AllReduce, AllGather, two send/recv shifts, "
      "Broadcast on a forked stream%s) between eager AllReduces: %s\n",
      n, mode == cudaStreamCaptureModeGlobal ? "global" : "thread-local", launches, alltoall ? ", AlltoAll" : "",
      bad ? "FAILED" : "exact");
  if (!bad && dlsym(RTLD_DEFAULT, "batonAlltoAllv")) bad |= refusals(ranks, mode);
  for (Rank& R : ranks) {
    CUDA(cudaSetDevice(R.dev));
    CUDA(cudaGraphExecDestroy(R.exec));
    NCCL(ncclCommDestroy(R.comm));
    for (int32_t* p : {R.in, R.sum, R.all, R.shifted, R.shifted2, R.bcast, R.in2, R.out2, R.out3, R.exchanged})
      CUDA(cudaFree(p));
    CUDA(cudaFreeHost(R.host));
    for (cudaStream_t s : {R.a, R.b, R.c}) CUDA(cudaStreamDestroy(s));
    CUDA(cudaEventDestroy(R.fork));
    CUDA(cudaEventDestroy(R.join));
  }
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) != "check") {
    fprintf(stderr, "usage: %s check [-n ranks] [-r launches] [--global] [--alltoall]\n", argv[0]);
    return 2;
  }
  int n = 2, launches = 20;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeThreadLocal;
  bool alltoall = false;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-n" && i + 1 < argc) n = atoi(argv[++i]);
    else if (a == "-r" && i + 1 < argc) launches = atoi(argv[++i]);
    else if (a == "--global") mode = cudaStreamCaptureModeGlobal;
    else if (a == "--alltoall") alltoall = true;
  }
  if (ndevices() == 0) {
    fprintf(stderr, "no CUDA device\n");
    return 77;
  }
  return check(n, launches, mode, alltoall);
}

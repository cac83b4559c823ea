// ncclMemAlloc and windows on GPUs: device memory from ncclMemAlloc (cuMem, exported so peers can
// import it), registered as a symmetric window on every rank, then collectives on the windows'
// memory, exact, each of them one of NCCL's symmetric kernels in baton ("algorithm Sym..." with
// NCCL_DEBUG_SUBSYS=COLL): an AllGather (stores into the peers' windows, SymStore), ReduceScatters
// (loads from them, SymLoad), an AlltoAll (SymAlltoAll), small AllReduces (SymOneShot) and larger
// ones (SymTwoShot), out of place and in place, at offsets 16-byte vectors suit and at ones that
// they do not, and two captured into a CUDA graph and launched repeatedly; then the windows
// deregistered and the memory freed. Uses only NCCL's API and the CUDA runtime.
// tools/scripts/gpu-check.sh runs it; it needs a GPU.
//
//   gpu_window check [-n ranks] [--procs]
//
// Threads (one thread drives every rank with groups; windows registered in a group, as NCCL
// allows) or processes (--procs, under baton-run: each process imports its peers' memory through
// the descriptors their ncclMemAlloc exported). With NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ALLOC the
// library says where each allocation and window went ("cuMem", "mapped into this rank's CUDA
// device"). With baton, ncclMemFree of a buffer still in a window is ncclInvalidUsage.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gpu_check.h"

namespace {

constexpr size_t kCount = (4u << 20) / sizeof(int32_t);  // 4 MiB: a multiple of any cuMem granularity seen (2 MiB)
constexpr size_t kSmall = 1027;         // int32s: within the one-shot size, not a multiple of a 16-byte grain
constexpr size_t kSmallInPlace = 4096;  // where the in-place one lies in the window (every rank alike)
constexpr int kSmallRepeats = 50;
constexpr size_t kMedium = kCount / 2 + 5;  // int32s: above the one-shot size, not a multiple of a grain
constexpr size_t kGraphAt = 8192;           // where the AllReduce captured into a CUDA graph lies in the window
constexpr int kGraphLaunches = 4;

int32_t val(int r, size_t i) { return (r + 1) * 100 + (int32_t)(i % 1009); }

struct Rank {
  int id = 0, dev = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int32_t *buf = nullptr, *all = nullptr;  // ncclMemAlloc: the AllReduce's (in place) and the AllGather's
  ncclWindow_t win = nullptr, winAll = nullptr;
};

int gFailures = 0;

void expectEq(const Rank& R, const int32_t* dev, size_t count, const char* what, int32_t (*want)(size_t, int), int n) {
  std::vector<int32_t> host(count);
  CUDA(cudaSetDevice(R.dev));
  CUDA(cudaMemcpy(host.data(), dev, count * sizeof(int32_t), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < count; ++i)
    if (host[i] != want(i, n)) {
      fprintf(stderr, "FAIL rank %d: %s[%zu] = %d, expected %d\n", R.id, what, i, host[i], want(i, n));
      ++gFailures;
      return;
    }
}

int32_t sumAt(size_t i, int n) {
  int32_t s = 0;
  for (int q = 0; q < n; ++q) s += val(q, i);
  return s;
}
int32_t gatheredAt(size_t i, int) { return val((int)(i / kCount), i % kCount); }
int32_t sumAtInPlace(size_t i, int n) { return sumAt(kSmallInPlace + i, n); }
int32_t sumAtNext(size_t i, int n) { return sumAt(i + 1, n); }
int32_t scaledGatheredAt(size_t i, int n) { return n * gatheredAt(i, n); }
// After k launches of an in-place AllReduce: the sum, then times n for every launch after the first.
int32_t graphAt(size_t i, int n) {
  int32_t v = sumAt(kGraphAt + i, n);
  for (int k = 1; k < kGraphLaunches; ++k) v *= n;
  return v;
}
// The two-shot output (the sum from one element in), times n for each of k launches.
int32_t graphMediumAt(size_t i, int n) {
  int32_t v = sumAtNext(i, n);
  for (int k = 0; k < kGraphLaunches; ++k) v *= n;
  return v;
}

void fill(const Rank& R, int32_t* dev) {
  std::vector<int32_t> host(kCount);
  for (size_t i = 0; i < kCount; ++i) host[i] = val(R.id, i);
  CUDA(cudaSetDevice(R.dev));
  CUDA(cudaMemcpy(dev, host.data(), kCount * sizeof(int32_t), cudaMemcpyHostToDevice));
  CUDA(cudaDeviceSynchronize());  // a copy from pageable memory may return early; R.stream does not wait for it
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) != "check") {
    fprintf(stderr, "usage: %s check [-n ranks] [--procs]\n", argv[0]);
    return 2;
  }
  int n = 2;
  bool procs = false;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-n" && i + 1 < argc) n = atoi(argv[++i]);
    else if (a == "--procs") procs = true;
  }
  const int nd = ndevices();
  if (nd == 0) {
    fprintf(stderr, "no CUDA device\n");
    return 77;
  }
  std::vector<Rank> ranks;
  for (const RankComm& rc : initRanks(&n, procs)) {
    Rank R;
    R.id = rc.id, R.dev = rc.dev, R.comm = rc.comm;
    ranks.push_back(R);
  }
  for (Rank& R : ranks) {
    CUDA(cudaSetDevice(R.dev));  // ncclMemAlloc allocates on the current device
    CUDA(cudaStreamCreateWithFlags(&R.stream, cudaStreamNonBlocking));
    NCCL(ncclMemAlloc((void**)&R.buf, kCount * sizeof(int32_t)));
    NCCL(ncclMemAlloc((void**)&R.all, kCount * sizeof(int32_t) * n));
    fill(R, R.buf);
  }
  // Collective: every rank registers at once (a group, for the thread that drives them all).
  NCCL(ncclGroupStart());
  for (Rank& R : ranks) {
    NCCL(ncclCommWindowRegister(R.comm, R.buf, kCount * sizeof(int32_t), &R.win, NCCL_WIN_COLL_SYMMETRIC));
    NCCL(ncclCommWindowRegister(R.comm, R.all, kCount * sizeof(int32_t) * n, &R.winAll, NCCL_WIN_COLL_SYMMETRIC));
  }
  NCCL(ncclGroupEnd());
  auto sync = [&] {
    for (Rank& R : ranks) {
      CUDA(cudaSetDevice(R.dev));
      CUDA(cudaStreamSynchronize(R.stream));
    }
  };
  NCCL(ncclGroupStart());
  for (Rank& R : ranks) NCCL(ncclAllGather(R.buf, R.all, kCount, ncclInt32, R.comm, R.stream));
  NCCL(ncclGroupEnd());
  sync();
  for (Rank& R : ranks) expectEq(R, R.all, kCount * n, "AllGather into a window", gatheredAt, n);
  // ReduceScatters of the gathered windows (baton: loads from the peers' windows): rank q's block
  // of every rank's input is val(q, .), so the result is n * val(q, .). Then one whose output and
  // (but rank 0's) blocks are not 16-byte aligned (1027 int32s, output one element in), then one
  // in place, then an AllGather in place of what it left: every block q becomes n * val(q, .).
  NCCL(ncclGroupStart());
  for (Rank& R : ranks) NCCL(ncclReduceScatter(R.all, R.buf, kCount, ncclInt32, ncclSum, R.comm, R.stream));
  NCCL(ncclGroupEnd());
  NCCL(ncclGroupStart());
  for (Rank& R : ranks)
    NCCL(ncclReduceScatter(R.all, R.buf + kCount / 2 + 1, kSmall, ncclInt32, ncclSum, R.comm, R.stream));
  NCCL(ncclGroupEnd());
  NCCL(ncclGroupStart());
  for (Rank& R : ranks)
    NCCL(ncclReduceScatter(R.all, R.all + R.id * kCount, kCount, ncclInt32, ncclSum, R.comm, R.stream));
  NCCL(ncclGroupEnd());
  NCCL(ncclGroupStart());
  for (Rank& R : ranks) NCCL(ncclAllGather(R.all + R.id * kCount, R.all, kCount, ncclInt32, R.comm, R.stream));
  NCCL(ncclGroupEnd());
  sync();
  for (Rank& R : ranks) {
    std::vector<int32_t> host(kCount), all(kCount);
    CUDA(cudaSetDevice(R.dev));
    CUDA(cudaMemcpy(host.data(), R.buf, kCount * sizeof(int32_t), cudaMemcpyDeviceToHost));
    CUDA(cudaMemcpy(all.data(), R.all + R.id * kCount, kCount * sizeof(int32_t), cudaMemcpyDeviceToHost));
    expectEq(R, R.all, kCount * n, "in-place AllGather of in-place ReduceScatters", scaledGatheredAt, n);
    for (size_t i = 0; i < kCount; ++i) {
      // The unaligned one overwrote kSmall elements from kCount / 2 + 1 with n * gathered[id * kSmall + i].
      const size_t u = i - (kCount / 2 + 1);
      const int32_t want = u < kSmall ? n * gatheredAt(R.id * kSmall + u, n) : n * val(R.id, i);
      if (host[i] != want || all[i] != n * val(R.id, i)) {
        fprintf(stderr, "FAIL rank %d: ReduceScatter[%zu] = %d (in place %d), expected %d (in place %d)\n", R.id, i,
                host[i], all[i], want, n * val(R.id, i));
        ++gFailures;
        break;
      }
    }
  }
  for (Rank& R : ranks) fill(R, R.buf);
  // An AlltoAll into a window (baton: stores into the peers' windows): block q of rank r's output
  // is block r of rank q's input.
  const size_t block = kCount / n;
  NCCL(ncclGroupStart());
  for (Rank& R : ranks) NCCL(ncclAlltoAll(R.buf, R.all, block, ncclInt32, R.comm, R.stream));
  NCCL(ncclGroupEnd());
  sync();
  for (Rank& R : ranks) {
    std::vector<int32_t> host(kCount);
    CUDA(cudaSetDevice(R.dev));
    CUDA(cudaMemcpy(host.data(), R.all, kCount * sizeof(int32_t), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < kCount; ++i) {
      const int q = (int)(i / block);
      if (host[i] != val(q, R.id * block + i % block)) {
        fprintf(stderr, "FAIL rank %d: AlltoAll into a window [%zu] = %d, expected %d\n", R.id, i, host[i],
                val(q, R.id * block + i % block));
        ++gFailures;
        break;
      }
    }
  }
  // Small AllReduces between windows (baton: the one-shot symmetric kernel, reading the peers'
  // windows), many back to back so the barriers' epochs advance, then one at an offset 16-byte
  // vectors do not suit; one above the one-shot size (baton: two-shot, each rank folding its piece
  // and storing it into every rank's output), also unaligned; then a small one in place.
  for (int it = 0; it < kSmallRepeats; ++it) {
    NCCL(ncclGroupStart());
    for (Rank& R : ranks) NCCL(ncclAllReduce(R.buf, R.all, kSmall, ncclInt32, ncclSum, R.comm, R.stream));
    NCCL(ncclGroupEnd());
  }
  NCCL(ncclGroupStart());
  for (Rank& R : ranks)
    NCCL(ncclAllReduce(R.buf + 1, R.all + kSmall + 1, kSmall, ncclInt32, ncclSum, R.comm, R.stream));
  NCCL(ncclGroupEnd());
  NCCL(ncclGroupStart());
  for (Rank& R : ranks)
    NCCL(ncclAllReduce(R.buf + 1, R.all + kCount / 4 + 1, kMedium, ncclInt32, ncclSum, R.comm, R.stream));
  NCCL(ncclGroupEnd());
  NCCL(ncclGroupStart());
  for (Rank& R : ranks)
    NCCL(ncclAllReduce(R.buf + kSmallInPlace, R.buf + kSmallInPlace, kSmall, ncclInt32, ncclSum, R.comm, R.stream));
  NCCL(ncclGroupEnd());
  sync();
  for (Rank& R : ranks) {
    expectEq(R, R.all, kSmall, "small AllReduce between windows", sumAt, n);
    expectEq(R, R.all + kSmall + 1, kSmall, "small AllReduce at an unaligned offset", sumAtNext, n);
    expectEq(R, R.all + kCount / 4 + 1, kMedium, "two-shot AllReduce at an unaligned offset", sumAtNext, n);
    expectEq(R, R.buf + kSmallInPlace, kSmall, "small in-place AllReduce in a window", sumAtInPlace, n);
  }
  // Two in-place AllReduces between windows captured into a CUDA graph on every rank, a small one
  // and the two-shot one's output (many channels), the graph launched kGraphLaunches times with an
  // eager one between launches: each launch takes the next barrier epoch on each of its channels
  // (baton's kernels count them in device memory), so each multiplies by n.
  std::vector<cudaGraphExec_t> execs(ranks.size());
  for (Rank& R : ranks) {
    CUDA(cudaSetDevice(R.dev));
    CUDA(cudaMemset(R.all + kGraphAt, 0, kSmall * sizeof(int32_t)));  // where the eager ones land
    CUDA(cudaDeviceSynchronize());
  }
  for (Rank& R : ranks) {  // no synchronizing call may follow while this thread captures
    CUDA(cudaSetDevice(R.dev));
    CUDA(cudaStreamBeginCapture(R.stream, cudaStreamCaptureModeThreadLocal));
  }
  NCCL(ncclGroupStart());
  for (Rank& R : ranks)
    NCCL(ncclAllReduce(R.buf + kGraphAt, R.buf + kGraphAt, kSmall, ncclInt32, ncclSum, R.comm, R.stream));
  NCCL(ncclGroupEnd());
  NCCL(ncclGroupStart());
  for (Rank& R : ranks) {
    int32_t* medium = R.all + kCount / 4 + 1;
    NCCL(ncclAllReduce(medium, medium, kMedium, ncclInt32, ncclSum, R.comm, R.stream));
  }
  NCCL(ncclGroupEnd());
  std::vector<cudaGraph_t> graphs(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    CUDA(cudaSetDevice(ranks[i].dev));
    CUDA(cudaStreamEndCapture(ranks[i].stream, &graphs[i]));
  }
  for (size_t i = 0; i < ranks.size(); ++i) {  // once no stream of this thread captures
    CUDA(cudaSetDevice(ranks[i].dev));
    CUDA(cudaGraphInstantiate(&execs[i], graphs[i], 0));
    CUDA(cudaGraphDestroy(graphs[i]));
  }
  for (int it = 0; it < kGraphLaunches; ++it) {
    for (size_t i = 0; i < ranks.size(); ++i) {
      CUDA(cudaSetDevice(ranks[i].dev));
      CUDA(cudaGraphLaunch(execs[i], ranks[i].stream));
    }
    NCCL(ncclGroupStart());
    for (Rank& R : ranks) NCCL(ncclAllReduce(R.buf, R.all + kGraphAt, kSmall, ncclInt32, ncclSum, R.comm, R.stream));
    NCCL(ncclGroupEnd());
  }
  sync();
  for (size_t i = 0; i < ranks.size(); ++i) {
    Rank& R = ranks[i];
    expectEq(R, R.buf + kGraphAt, kSmall, "AllReduce between windows in a CUDA graph, launched repeatedly", graphAt, n);
    expectEq(R, R.all + kCount / 4 + 1, kMedium, "two-shot AllReduce in a CUDA graph, launched repeatedly",
             graphMediumAt, n);
    expectEq(R, R.all + kGraphAt, kSmall, "small AllReduce between the graph's launches", sumAt, n);
    CUDA(cudaSetDevice(R.dev));
    CUDA(cudaGraphExecDestroy(execs[i]));
  }
  // The whole window in place (baton: two-shot, 16-byte vectors), from the original input.
  for (Rank& R : ranks) fill(R, R.buf);
  NCCL(ncclGroupStart());
  for (Rank& R : ranks) NCCL(ncclAllReduce(R.buf, R.buf, kCount, ncclInt32, ncclSum, R.comm, R.stream));
  NCCL(ncclGroupEnd());
  sync();
  for (Rank& R : ranks) expectEq(R, R.buf, kCount, "in-place AllReduce of a whole window", sumAt, n);
  const bool baton = dlsym(RTLD_DEFAULT, "batonAlltoAllv") != nullptr;
  if (baton) {  // NCCL leaves freeing registered memory undefined; baton refuses it
    const ncclResult_t r = ncclMemFree(ranks[0].buf);
    const std::string why = ncclGetLastError(nullptr);
    if (r != ncclInvalidUsage || why.find("registered") == std::string::npos)
      fprintf(stderr, "FAIL: ncclMemFree of a window's memory returned %d (%s)\n", r, why.c_str()), ++gFailures;
  }
  NCCL(ncclGroupStart());  // in case deregistration is collective (one thread drives every rank)
  for (Rank& R : ranks) {
    NCCL(ncclCommWindowDeregister(R.comm, R.win));
    NCCL(ncclCommWindowDeregister(R.comm, R.winAll));
  }
  NCCL(ncclGroupEnd());
  for (Rank& R : ranks) {
    NCCL(ncclCommDestroy(R.comm));
    CUDA(cudaSetDevice(R.dev));
    NCCL(ncclMemFree(R.buf));
    NCCL(ncclMemFree(R.all));
    CUDA(cudaStreamDestroy(R.stream));
  }
  printf(
      "window check%s: %d ranks (%s), ncclMemAlloc device memory in symmetric windows, AllGather, ReduceScatter, "
      "AlltoAll and AllReduce: %s\n",
      procs ? (", rank " + std::to_string(ranks[0].id)).c_str() : "", n, procs ? "processes" : "threads",
      gFailures ? "FAILED" : "exact");
  return gFailures ? 1 : 0;
}

// The CUDA backend's point-to-point check and sweep, on device buffers: ncclSend / ncclRecv in
// groups, and ncclAlltoAll, ncclGather and ncclScatter (built from them). Uses only NCCL's API and
// the CUDA runtime, so the same binary runs against baton's libnccl.so.2 and NVIDIA's.
// tools/scripts/gpu-check.sh runs it; it needs a GPU.
//
//   gpu_sendrecv check [-n ranks]   threads (one thread drives every rank through groups): every
//                                   pattern below, exact bytes, the bytes around every received
//                                   region untouched; with baton, bad input too
//   gpu_sendrecv check --procs      the same patterns, one process per rank (under baton-run)
//   gpu_sendrecv sweep [-n ranks] [-e maxbytes]
//                                   each rank sends to the next and receives from the previous:
//                                   time and busbw per size (nccl-tests' sendrecv: busbw = algbw)
//
// Patterns: shifts by 0 (to itself), 1 and n/2 ranks at 1 B .. 16 MiB (past one FIFO's 8 steps),
// every pair at once with a different size per pair, two transfers to one peer in one group (they
// arrive in issue order), 40 small ones to one peer in one group, receives on a second stream,
// AlltoAll, (with baton) AlltoAllv where one rank moves nothing and AlltoAll in place, Gather and Scatter; no kernel
// reporting an error (ncclCommGetAsyncError); two groups queued back to back before the host waits; send
// buffers unchanged after every pattern.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_check.h"

namespace {

constexpr size_t kGap = 64;  // untouched bytes after every received region

enum Api { kP2p, kAlltoAll, kGather, kScatter, kAlltoAllv, kAlltoAllInPlace };

// baton's AlltoAllv (include/baton/alltoallv.h), looked up so the program still runs on NVIDIA's library.
using AlltoAllvFn = ncclResult_t (*)(const void*, const size_t[], const size_t[], void*, const size_t[], const size_t[],
                                     ncclDataType_t, ncclComm_t, cudaStream_t);
AlltoAllvFn batonAlltoAllv() { return reinterpret_cast<AlltoAllvFn>(dlsym(RTLD_DEFAULT, "batonAlltoAllv")); }

// One transfer of a pattern: `bytes` from src's send buffer at sendOff to dst's receive buffer at recvOff.
struct Xfer {
  int src, dst;
  size_t bytes, sendOff, recvOff;
};

struct Pattern {
  std::string name;
  Api api = kP2p;
  int root = 0;
  size_t count = 0;  // AlltoAll, Gather, Scatter: bytes per block
  std::vector<Xfer> xs;
  bool recvStream2 = false;  // point-to-point: receives on each rank's second stream
};

unsigned char pat(int src, int dst, size_t i) {
  return (unsigned char)(src * 37 + dst * 11 + i * 7 + (i >> 8) * 3 + 1);
}

// Point-to-point transfers, laid out one after the other in each rank's buffers.
Pattern p2p(const std::string& name, int n, const std::vector<Xfer>& list) {
  Pattern p{name, kP2p, 0, 0, {}};
  std::vector<size_t> sendAt(n, 0), recvAt(n, 0);
  for (Xfer x : list) {
    x.sendOff = sendAt[x.src], x.recvOff = recvAt[x.dst];
    sendAt[x.src] += x.bytes, recvAt[x.dst] += x.bytes + kGap;
    p.xs.push_back(x);
  }
  return p;
}

std::vector<Pattern> patterns(int n) {
  std::vector<Pattern> ps;
  const size_t sizes[] = {1, 4097, (1u << 20) + 3, (16u << 20) + 5};
  std::vector<int> shifts{0, 1, n / 2};
  std::sort(shifts.begin(), shifts.end());
  shifts.erase(std::unique(shifts.begin(), shifts.end()), shifts.end());
  for (int k : shifts)
    for (size_t b : sizes) {
      std::vector<Xfer> l;
      for (int r = 0; r < n; ++r) l.push_back({r, (r + k) % n, b, 0, 0});
      ps.push_back(p2p("shift " + std::to_string(k) + ", " + std::to_string(b) + " B", n, l));
    }
  std::vector<Xfer> shift1;
  for (int r = 0; r < n; ++r) shift1.push_back({r, (r + 1) % n, (1u << 20) + 3, 0, 0});
  ps.push_back(p2p("shift 1, receives on a second stream", n, shift1));
  ps.back().recvStream2 = true;
  std::vector<Xfer> many;
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < 40; ++i) many.push_back({r, (r + 1) % n, 100 + 13 * (size_t)i, 0, 0});
  ps.push_back(p2p("40 to one peer in one group", n, many));
  std::vector<Xfer> all;
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d)
      all.push_back({s, d, 1000 * (size_t)(s + 1) + 37 * (size_t)d + 130000 * (d == 0), 0, 0});
  ps.push_back(p2p("every pair, a size per pair", n, all));
  std::vector<Xfer> two;
  for (int r = 0; r < n; ++r)
    two.push_back({r, (r + 1) % n, 5000, 0, 0}), two.push_back({r, (r + 1) % n, 300001, 0, 0});
  ps.push_back(p2p("two to one peer, in order", n, two));
  const size_t block = 70001;
  Pattern a{"AlltoAll, 70001 B blocks", kAlltoAll, 0, block, {}};
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) a.xs.push_back({s, d, block, d * block, s * block});
  ps.push_back(a);
  if (batonAlltoAllv()) {  // rank 0 moves nothing (every count 0); the others a size per pair
    std::vector<Xfer> v;
    for (int src = 0; src < n; ++src)
      for (int d = 0; d < n; ++d) v.push_back({src, d, src && d ? 500 * (size_t)src + 7 * (size_t)d : 0, 0, 0});
    ps.push_back(p2p("AlltoAllv, rank 0 moves nothing", n, v));
    ps.back().api = kAlltoAllv;
    // In place: NCCL leaves it undefined (a group may not write a buffer it also reads); baton
    // sets the input aside on the stream first.
    Pattern ip{"AlltoAll in place, 70001 B blocks", kAlltoAllInPlace, 0, block, a.xs};
    ps.push_back(ip);
  }
  const int root = 1 % n;
  Pattern g{"Gather to rank " + std::to_string(root), kGather, root, block, {}};
  for (int s = 0; s < n; ++s) g.xs.push_back({s, root, block, 0, s * block});
  ps.push_back(g);
  Pattern sc{"Scatter from rank 0", kScatter, 0, block, {}};
  for (int d = 0; d < n; ++d) sc.xs.push_back({0, d, block, d * block, 0});
  ps.push_back(sc);
  return ps;
}

struct Rank {
  int id = 0, dev = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr, stream2 = nullptr;
  unsigned char* send = nullptr;
  unsigned char* recv = nullptr;
  size_t sendBytes = 0, recvBytes = 0;
};

int gFailures = 0, gRuns = 0;

// One pattern's buffers on every rank this process drives.
struct Buffers {
  std::vector<unsigned char*> send, recv;
  std::vector<std::vector<unsigned char>> in;  // what each send buffer holds
  std::vector<size_t> recvBytes;
};

Buffers prepare(std::vector<Rank>& ranks, const Pattern& p) {
  Buffers B;
  for (Rank& R : ranks) {
    size_t sendBytes = 0, recvBytes = 0;
    for (const Xfer& x : p.xs) {
      if (x.src == R.id) sendBytes = std::max(sendBytes, x.sendOff + x.bytes);
      if (x.dst == R.id) recvBytes = std::max(recvBytes, x.recvOff + x.bytes + kGap);
    }
    recvBytes += kGap;
    std::vector<unsigned char> in(sendBytes + 1, 0x5A);
    for (const Xfer& x : p.xs)
      if (x.src == R.id)
        for (size_t i = 0; i < x.bytes; ++i) in[x.sendOff + i] = pat(x.src, x.dst, i);
    unsigned char *send = nullptr, *recv = nullptr;
    CUDA(cudaSetDevice(R.dev));
    CUDA(cudaMalloc(&send, in.size()));
    CUDA(cudaMalloc(&recv, recvBytes));
    CUDA(cudaMemcpyAsync(send, in.data(), in.size(), cudaMemcpyHostToDevice, R.stream));
    CUDA(cudaMemsetAsync(recv, 0xA5, recvBytes, R.stream));
    if (p.api == kAlltoAllInPlace) CUDA(cudaMemcpyAsync(recv, in.data(), sendBytes, cudaMemcpyHostToDevice, R.stream));
    CUDA(cudaStreamSynchronize(R.stream));
    B.send.push_back(send), B.recv.push_back(recv), B.in.push_back(std::move(in)), B.recvBytes.push_back(recvBytes);
  }
  return B;
}

// The pattern's calls, one group for every rank this process drives; returns without waiting.
void issue(std::vector<Rank>& ranks, int n, const Pattern& p, const Buffers& B) {
  NCCL(ncclGroupStart());
  for (size_t k = 0; k < ranks.size(); ++k) {
    Rank& R = ranks[k];
    unsigned char* send = B.send[k];
    unsigned char* recv = B.recv[k];
    switch (p.api) {
      case kAlltoAll: NCCL(ncclAlltoAll(send, recv, p.count, ncclInt8, R.comm, R.stream)); break;
      case kAlltoAllInPlace: NCCL(ncclAlltoAll(recv, recv, p.count, ncclInt8, R.comm, R.stream)); break;
      case kGather: NCCL(ncclGather(send, recv, p.count, ncclInt8, p.root, R.comm, R.stream)); break;
      case kScatter: NCCL(ncclScatter(send, recv, p.count, ncclInt8, p.root, R.comm, R.stream)); break;
      case kAlltoAllv: {
        std::vector<size_t> sc(n), sd(n), rc(n), rd(n);
        for (const Xfer& x : p.xs) {
          if (x.src == R.id) sc[x.dst] = x.bytes, sd[x.dst] = x.sendOff;
          if (x.dst == R.id) rc[x.src] = x.bytes, rd[x.src] = x.recvOff;
        }
        NCCL(batonAlltoAllv()(send, sc.data(), sd.data(), recv, rc.data(), rd.data(), ncclInt8, R.comm, R.stream));
        break;
      }
      case kP2p:
        for (const Xfer& x : p.xs) {
          if (x.src == R.id) NCCL(ncclSend(send + x.sendOff, x.bytes, ncclInt8, x.dst, R.comm, R.stream));
          if (x.dst == R.id)
            NCCL(ncclRecv(recv + x.recvOff, x.bytes, ncclInt8, x.src, R.comm, p.recvStream2 ? R.stream2 : R.stream));
        }
        break;
    }
  }
  NCCL(ncclGroupEnd());
}

void expectSame(const std::vector<unsigned char>& out, const std::vector<unsigned char>& want, const Pattern& p,
                int rank, const char* what) {
  ++gRuns;
  if (out == want) return;
  size_t bad = 0;
  while (out[bad] == want[bad]) ++bad;
  if (++gFailures <= 20)
    fprintf(stderr, "FAIL %s rank %d: %s byte %zu is 0x%02x, expected 0x%02x\n", p.name.c_str(), rank, what, bad,
            out[bad], want[bad]);
}

// Waits for both streams, checks every received byte, the bytes around them and the send buffer.
void verify(std::vector<Rank>& ranks, const Pattern& p, Buffers& B) {
  for (size_t k = 0; k < ranks.size(); ++k) {
    Rank& R = ranks[k];
    CUDA(cudaSetDevice(R.dev));
    CUDA(cudaStreamSynchronize(R.stream));
    CUDA(cudaStreamSynchronize(R.stream2));
    std::vector<unsigned char> out(B.recvBytes[k]), want(B.recvBytes[k], 0xA5), sent(B.in[k].size());
    CUDA(cudaMemcpy(out.data(), B.recv[k], out.size(), cudaMemcpyDeviceToHost));
    CUDA(cudaMemcpy(sent.data(), B.send[k], sent.size(), cudaMemcpyDeviceToHost));
    for (const Xfer& x : p.xs)
      if (x.dst == R.id)
        for (size_t i = 0; i < x.bytes; ++i) want[x.recvOff + i] = pat(x.src, x.dst, i);
    expectSame(out, want, p, R.id, "received");
    ncclResult_t async = ncclSuccess;
    NCCL(ncclCommGetAsyncError(R.comm, &async));
    ++gRuns;
    if (async != ncclSuccess && ++gFailures <= 20)
      fprintf(stderr, "FAIL %s rank %d: ncclCommGetAsyncError says %s (%s)\n", p.name.c_str(), R.id,
              ncclGetErrorString(async), ncclGetLastError(R.comm));
    expectSame(sent, B.in[k], p, R.id, "send buffer");
    CUDA(cudaFree(B.send[k]));
    CUDA(cudaFree(B.recv[k]));
  }
}

// What only baton promises: clear errors for buffers of both kinds, overlapping send-to-self buffers, and a window on
// cudaMalloc memory (peers cannot map it; ncclMemAlloc's cuMem memory they can). Each is refused on every rank alike,
// so no kernel waits for a peer that was refused.
void expectError(ncclResult_t got, ncclResult_t want, const char* what, const char* mention) {
  const std::string why = ncclGetLastError(nullptr);
  ++gRuns;
  if (got != want || why.find(mention) == std::string::npos)
    ++gFailures, fprintf(stderr, "FAIL bad input: %s returned %d (%s), expected %d naming '%s'\n", what, got,
                         why.c_str(), want, mention);
}

void badInput(std::vector<Rank>& ranks, int n) {
  if (!batonAlltoAllv()) return;  // NVIDIA's library
  Rank& R = ranks[0];
  std::vector<unsigned char> host(64 * (size_t)n);
  unsigned char* dev = nullptr;
  CUDA(cudaSetDevice(R.dev));
  CUDA(cudaMalloc(&dev, 128 * (size_t)n));
  expectError(ncclAlltoAll(dev, host.data(), 64, ncclInt8, R.comm, R.stream), ncclInvalidArgument,
              "AlltoAll from device to host memory", "host memory");
  NCCL(ncclGroupStart());
  NCCL(ncclSend(dev, 64, ncclInt8, R.id, R.comm, R.stream));
  NCCL(ncclRecv(dev + 32, 64, ncclInt8, R.id, R.comm, R.stream));
  expectError(ncclGroupEnd(), ncclInvalidArgument, "send to itself into an overlapping buffer", "overlap");
  if (n == 1) {  // collective: one thread can register a window only for a communicator of one
    ncclWindow_t w = nullptr;
    expectError(ncclCommWindowRegister(R.comm, dev, 4096, &w, NCCL_WIN_DEFAULT), ncclInvalidUsage,
                "a window on device memory", "device memory");
  }
  CUDA(cudaFree(dev));
}

void runAll(std::vector<Rank>& ranks, int n, bool procs) {
  const bool say = !procs || ranks[0].id == 0;
  const std::vector<Pattern> ps = patterns(n);
  for (const Pattern& p : ps) {
    const int before = gFailures;
    Buffers B = prepare(ranks, p);
    issue(ranks, n, p, B);
    verify(ranks, p, B);
    if (say) printf("  %-40s %s\n", p.name.c_str(), gFailures == before ? "ok" : "FAILED");
    fflush(stdout);
  }
  // Two groups on the same connectors, the second queued before the first has run.
  auto named = [&](const char* name) {
    return *std::find_if(ps.begin(), ps.end(), [&](const Pattern& p) { return p.name == name; });
  };
  const Pattern& a = named("40 to one peer in one group");
  const Pattern& b = named("every pair, a size per pair");
  const int before = gFailures;
  Buffers A = prepare(ranks, a), Bb = prepare(ranks, b);
  issue(ranks, n, a, A);
  issue(ranks, n, b, Bb);
  verify(ranks, a, A);
  verify(ranks, b, Bb);
  if (say) printf("  %-40s %s\n", "two groups back to back", gFailures == before ? "ok" : "FAILED");
  badInput(ranks, n);
}

int check(int n, bool procs) {
  const int nd = ndevices();
  std::vector<Rank> ranks;
  for (const RankComm& rc : initRanks(&n, procs)) ranks.push_back({rc.id, rc.dev, rc.comm});
  if (!procs || ranks[0].id == 0)
    printf("sendrecv check: %d ranks (%s) on %d device(s), device buffers\n", n, procs ? "processes" : "threads", nd);
  for (Rank& R : ranks) {
    CUDA(cudaSetDevice(R.dev));
    CUDA(cudaStreamCreateWithFlags(&R.stream, cudaStreamNonBlocking));
    CUDA(cudaStreamCreateWithFlags(&R.stream2, cudaStreamNonBlocking));
  }
  runAll(ranks, n, procs);
  for (Rank& R : ranks) {
    NCCL(ncclCommDestroy(R.comm));
    CUDA(cudaStreamDestroy(R.stream));
    CUDA(cudaStreamDestroy(R.stream2));
  }
  printf("sendrecv check%s: %d of %d results exact%s\n", procs ? (", rank " + std::to_string(ranks[0].id)).c_str() : "",
         gRuns - gFailures, gRuns, gFailures ? "  FAILED" : "");
  return gFailures ? 1 : 0;
}

int sweep(int n, size_t maxBytes) {
  const int nd = ndevices();
  std::vector<int> devs(n);
  std::vector<ncclComm_t> comms(n);
  for (int r = 0; r < n; ++r) devs[r] = r % nd;
  NCCL(ncclCommInitAll(comms.data(), n, devs.data()));
  std::vector<Rank> ranks;
  for (int r = 0; r < n; ++r) {
    Rank R{r, devs[r], comms[r]};
    CUDA(cudaSetDevice(R.dev));
    CUDA(cudaStreamCreateWithFlags(&R.stream, cudaStreamNonBlocking));
    CUDA(cudaMalloc(&R.send, maxBytes));
    CUDA(cudaMalloc(&R.recv, maxBytes));
    ranks.push_back(R);
  }
  printf("# sendrecv: %d ranks, each sends to the next and receives from the previous (busbw = algbw)\n", n);
  printf("%12s %10s %10s\n", "size", "time(us)", "busbw(GB/s)");
  for (size_t bytes = 8; bytes <= maxBytes; bytes *= 4) {
    auto once = [&] {
      NCCL(ncclGroupStart());
      for (Rank& R : ranks) {
        NCCL(ncclSend(R.send, bytes, ncclInt8, (R.id + 1) % n, R.comm, R.stream));
        NCCL(ncclRecv(R.recv, bytes, ncclInt8, (R.id + n - 1) % n, R.comm, R.stream));
      }
      NCCL(ncclGroupEnd());
    };
    auto sync = [&] {
      for (Rank& R : ranks) CUDA(cudaStreamSynchronize(R.stream));
    };
    for (int i = 0; i < 5; ++i) once();
    sync();
    const int iters = 20;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) once();
    sync();
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;
    printf("%12zu %10.2f %10.2f\n", bytes, us, bytes / us / 1e3);
  }
  printf("# device copy (cudaMemcpy device to device, %zu bytes): %.1f GB/s\n", maxBytes,
         deviceCopyGBs(ranks[0].dev, ranks[0].send, ranks[0].recv, maxBytes));
  for (Rank& R : ranks) {
    NCCL(ncclCommDestroy(R.comm));
    CUDA(cudaFree(R.send));
    CUDA(cudaFree(R.recv));
    CUDA(cudaStreamDestroy(R.stream));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s check [-n ranks] [--procs] | sweep [-n ranks] [-e maxbytes]\n", argv[0]);
    return 2;
  }
  const std::string mode = argv[1];
  int n = 2;
  size_t maxBytes = 256u << 20;
  bool procs = false;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-n" && i + 1 < argc) n = atoi(argv[++i]);
    else if (a == "-e" && i + 1 < argc) maxBytes = strtoull(argv[++i], nullptr, 0);
    else if (a == "--procs") procs = true;
  }
  if (ndevices() == 0) {
    fprintf(stderr, "no CUDA device\n");
    return 77;
  }
  if (mode == "check") return check(n, procs);
  if (mode == "sweep") return sweep(n, maxBytes);
  fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}

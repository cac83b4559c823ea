// The CUDA backend's correctness check and sweep, on device buffers: one program that uses only
// NCCL's API and the CUDA runtime, so the same binary runs against baton's libnccl.so.2 and
// NVIDIA's (LD_LIBRARY_PATH picks). tools/scripts/gpu-check.sh runs it; it needs a GPU.
//
//   gpu_collectives check [-n ranks]   threads: every collective x protocol x (type, operator) x count,
//                                      exact results, guard bytes after every output untouched;
//                                      then stream semantics and ncclCommAbort of a waiting kernel
//   gpu_collectives check --procs      the same matrix, one process per rank (under baton-run)
//   gpu_collectives sweep [-n ranks] [-e maxbytes] [-p proto] [-c allreduce|allgather|reducescatter|broadcast|reduce]
//                                      busbw per size (float sum; nccl-tests' sizes and bus factors),
//                                      and the device's copy bandwidth (cudaMemcpy device to device)
//                                      in the same run
//   gpu_collectives calibrate [-n ranks] [-e maxbytes] [-o file]
//                                      (baton only) the AllReduce sweep per protocol, ring and tree,
//                                      fitted to latency + bytes / bandwidth and written as the tuning
//                                      file's 'gpu' table (default: where the library reads it), which
//                                      the tuner then chooses from per size on device buffers
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gpu_check.h"

namespace {

enum Func { kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter };
const char* kFuncNames[] = {"AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter"};

// Small integers, exact in every type (fp8 e4m3 holds 0..16 exactly), encoded as the type's bits.
uint64_t encode(ncclDataType_t t, int64_t v) {
  switch (t) {
    case ncclFloat16: {  // |v| <= 2048
      if (v == 0) return 0;
      int e = 0;
      while ((v >> (e + 1)) != 0) ++e;
      return (uint64_t)(((e + 15) << 10) | (((v << 10) >> e) & 0x3ff));
    }
    case ncclBfloat16: {
      float f = (float)v;
      uint32_t b;
      memcpy(&b, &f, 4);
      return b >> 16;
    }
    case ncclFloat8e4m3: {  // 0 <= v <= 15
      if (v == 0) return 0;
      int e = 0;
      while ((v >> (e + 1)) != 0) ++e;
      return (uint64_t)(((e + 7) << 3) | (((v << 3) >> e) & 7));
    }
    case ncclFloat32: {
      float f = (float)v;
      uint32_t b;
      memcpy(&b, &f, 4);
      return b;
    }
    case ncclFloat64: {
      double d = (double)v;
      uint64_t b;
      memcpy(&b, &d, 8);
      return b;
    }
    default: return (uint64_t)v;
  }
}

size_t typeBytes(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2: return 1;
    case ncclFloat16:
    case ncclBfloat16: return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32: return 4;
    default: return 8;
  }
}

struct Case {
  ncclDataType_t type;
  ncclRedOp_t op;  // ncclNumOps: PreMulSum by 3
  const char* name;
};
// Every type, each built-in operator at least once, PreMulSum and Avg.
const Case kCases[] = {{ncclInt32, ncclSum, "int32/sum"},           {ncclFloat32, ncclSum, "float/sum"},
                       {ncclFloat64, ncclProd, "double/prod"},      {ncclInt8, ncclMax, "int8/max"},
                       {ncclUint8, ncclMin, "uint8/min"},           {ncclInt64, ncclSum, "int64/sum"},
                       {ncclUint64, ncclMax, "uint64/max"},         {ncclUint32, ncclProd, "uint32/prod"},
                       {ncclFloat16, ncclSum, "half/sum"},          {ncclBfloat16, ncclSum, "bf16/sum"},
                       {ncclFloat8e4m3, ncclSum, "fp8e4m3/sum"},    {ncclFloat32, ncclAvg, "float/avg"},
                       {ncclFloat32, ncclNumOps, "float/premulsum"}};

// Rank r's input element i, chosen so every result is a small exact integer.
int64_t input(const Case& c, int r, size_t i, int n) {
  if (c.op == ncclProd) return 1 + ((i + r) % 3 == 0);  // 1 or 2
  if (c.op == ncclAvg) return (int64_t)n * (int64_t)((i + r) % 4);
  if (c.type == ncclFloat8e4m3) return (int64_t)((i + r) % 3);  // sums <= 2n <= 16
  return (int64_t)((i * 7 + r * 3) % 11) + (c.op == ncclMax || c.op == ncclMin ? r : 0);
}
int64_t reduce(const Case& c, size_t i, int n) {
  int64_t v = input(c, 0, i, n);
  for (int r = 1; r < n; ++r) {
    const int64_t x = input(c, r, i, n);
    if (c.op == ncclProd) v *= x;
    else if (c.op == ncclMax) v = x > v ? x : v;
    else if (c.op == ncclMin) v = x < v ? x : v;
    else v += x;
  }
  if (c.op == ncclAvg) v /= n;
  if (c.op == ncclNumOps) {  // PreMulSum: every input times 3
    v = 0;
    for (int r = 0; r < n; ++r) v += 3 * input(c, r, i, n);
  }
  return v;
}

void put(std::vector<unsigned char>& buf, size_t i, ncclDataType_t t, int64_t v) {
  const uint64_t b = encode(t, v);
  memcpy(&buf[i * typeBytes(t)], &b, typeBytes(t));
}

constexpr size_t kGuard = 256;  // bytes after each output that must stay 0xA5

struct Rank {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int dev = 0;
  void* send = nullptr;
  void* recv = nullptr;
  ncclRedOp_t premul{};
};

int gFailures = 0, gRuns = 0;

// One collective on every rank this process drives (`ranks`, global ids `ids`), checked.
void runOne(std::vector<Rank>& ranks, const std::vector<int>& ids, int n, Func f, const Case& c, size_t count,
            const char* proto) {
  const size_t tb = typeBytes(c.type);
  const size_t inCount = f == kReduceScatter ? count * n : count;
  const size_t outCount = f == kAllGather ? count * n : count;
  const int root = 1 % n;
  for (size_t k = 0; k < ranks.size(); ++k) {
    Rank& R = ranks[k];
    const int r = ids[k];
    std::vector<unsigned char> in(inCount * tb);
    for (size_t i = 0; i < inCount; ++i) put(in, i, c.type, input(c, r, i, n));
    CUDA(cudaSetDevice(R.dev));
    // On the rank's own stream, so the collective after them is ordered after them (its stream
    // does not wait for the legacy default stream that cudaMemset would use).
    CUDA(cudaMemcpyAsync(R.send, in.data(), in.size(), cudaMemcpyHostToDevice, R.stream));
    CUDA(cudaMemsetAsync(R.recv, 0xA5, outCount * tb + kGuard, R.stream));
    CUDA(cudaStreamSynchronize(R.stream));
  }
  NCCL(ncclGroupStart());
  for (size_t k = 0; k < ranks.size(); ++k) {
    Rank& R = ranks[k];
    const ncclRedOp_t op = c.op == ncclNumOps ? R.premul : c.op;
    switch (f) {
      case kAllReduce: NCCL(ncclAllReduce(R.send, R.recv, count, c.type, op, R.comm, R.stream)); break;
      case kBroadcast: NCCL(ncclBroadcast(R.send, R.recv, count, c.type, root, R.comm, R.stream)); break;
      case kReduce: NCCL(ncclReduce(R.send, R.recv, count, c.type, op, root, R.comm, R.stream)); break;
      case kAllGather: NCCL(ncclAllGather(R.send, R.recv, count, c.type, R.comm, R.stream)); break;
      case kReduceScatter: NCCL(ncclReduceScatter(R.send, R.recv, count, c.type, op, R.comm, R.stream)); break;
    }
  }
  NCCL(ncclGroupEnd());
  for (size_t k = 0; k < ranks.size(); ++k) {
    Rank& R = ranks[k];
    const int r = ids[k];
    CUDA(cudaSetDevice(R.dev));
    CUDA(cudaStreamSynchronize(R.stream));
    std::vector<unsigned char> out(outCount * tb + kGuard), want(outCount * tb + kGuard, 0xA5);
    CUDA(cudaMemcpy(out.data(), R.recv, out.size(), cudaMemcpyDeviceToHost));
    const bool written = !(f == kReduce && r != root);
    for (size_t i = 0; written && i < outCount; ++i) {
      int64_t v;
      if (f == kBroadcast) v = input(c, root, i, n);
      else if (f == kAllGather) v = input(c, (int)(i / count), i % count, n);
      else if (f == kReduceScatter) v = reduce(c, (size_t)r * count + i, n);
      else v = reduce(c, i, n);
      put(want, i, c.type, v);
    }
    ++gRuns;
    if (out != want) {
      size_t bad = 0;
      while (out[bad] == want[bad]) ++bad;
      if (++gFailures <= 20)
        fprintf(stderr, "FAIL %s %s %s count %zu rank %d: byte %zu is 0x%02x, expected 0x%02x%s\n", kFuncNames[f],
                c.name, proto, count, r, bad, out[bad], want[bad], bad >= outCount * tb ? " (guard bytes)" : "");
    }
  }
}

// Processes on one GPU take turns on it (time slices; no MPS), so their matrix is smaller.
bool gFewCounts = false;

void runMatrix(std::vector<Rank>& ranks, const std::vector<int>& ids, int n, const char* proto) {
  const size_t all[] = {1, 5, 1023, 65536 + 17, (1u << 20) + 3}, few[] = {1, 1023, 65536 + 17};
  const std::vector<size_t> counts = gFewCounts ? std::vector<size_t>(few, few + 3) : std::vector<size_t>(all, all + 5);
  const int before = gFailures;
  for (int f = 0; f < 5; ++f)
    for (const Case& c : kCases) {
      const bool moves = f == kBroadcast || f == kAllGather;
      if (moves && c.op != ncclSum) continue;  // data movement: the operator plays no part
      for (size_t count : counts) runOne(ranks, ids, n, (Func)f, c, count, proto);
    }
  printf("  %-7s %s\n", proto, gFailures == before ? "ok" : "FAILED");
  fflush(stdout);
}

void allocRank(Rank& R, int n) {
  const size_t maxBytes = ((1u << 20) + 3) * 8 * (size_t)n + kGuard;
  CUDA(cudaSetDevice(R.dev));
  CUDA(cudaStreamCreateWithFlags(&R.stream, cudaStreamNonBlocking));
  CUDA(cudaMalloc(&R.send, maxBytes));
  CUDA(cudaMalloc(&R.recv, maxBytes));
}

void freeRank(Rank& R) {
  CUDA(cudaSetDevice(R.dev));
  if (R.premul) ncclRedOpDestroy(R.premul, R.comm);
  NCCL(ncclCommDestroy(R.comm));
  CUDA(cudaFree(R.send));
  CUDA(cudaFree(R.recv));
  CUDA(cudaStreamDestroy(R.stream));
}

void makePremul(Rank& R) {
  float three = 3.0f;
  NCCL(ncclRedOpCreatePreMulSum(&R.premul, &three, ncclFloat32, ncclScalarHostImmediate, R.comm));
}

void streamChecks(int n, const std::vector<int>& devs);

// Threads: one thread drives n ranks (n may exceed the devices: ranks share them).
int checkThreads(int n) {
  const int nd = ndevices();
  printf("check: %d ranks (threads of one process) on %d device(s), device buffers\n", n, nd);
  std::vector<int> devs(n), ids(n);
  for (int r = 0; r < n; ++r) devs[r] = r % nd, ids[r] = r;
  for (const char* proto : {"Simple", "LL", "LL128"}) {
    setenv("NCCL_PROTO", proto, 1);
    std::vector<ncclComm_t> comms(n);
    NCCL(ncclCommInitAll(comms.data(), n, devs.data()));
    std::vector<Rank> ranks(n);
    for (int r = 0; r < n; ++r) {
      ranks[r].comm = comms[r], ranks[r].dev = devs[r];
      allocRank(ranks[r], n);
      makePremul(ranks[r]);
    }
    runMatrix(ranks, ids, n, proto);
    for (Rank& R : ranks) freeRank(R);
  }
  unsetenv("NCCL_PROTO");
  if (n > 1) streamChecks(n, devs);
  printf("check: %d of %d rank-results exact%s\n", gRuns - gFailures, gRuns, gFailures ? "  FAILED" : "");
  return gFailures ? 1 : 0;
}

// Stream semantics: a call returns before its kernel finishes; one thread may drive every rank
// without a group (each call only enqueues); a waiting kernel ends on ncclCommAbort.
void streamChecks(int n, const std::vector<int>& devs) {
  std::vector<ncclComm_t> comms(n);
  NCCL(ncclCommInitAll(comms.data(), n, devs.data()));
  std::vector<Rank> ranks(n);
  for (int r = 0; r < n; ++r) ranks[r].comm = comms[r], ranks[r].dev = devs[r], allocRank(ranks[r], n);
  const Case c = kCases[0];
  const size_t count = 4096;
  {
    std::vector<unsigned char> in(count * 4);
    for (int r = 0; r < n; ++r) {
      for (size_t i = 0; i < count; ++i) put(in, i, c.type, input(c, r, i, n));
      CUDA(cudaSetDevice(devs[r]));
      CUDA(cudaMemcpy(ranks[r].send, in.data(), in.size(), cudaMemcpyHostToDevice));
    }
    CUDA(cudaDeviceSynchronize());  // a pageable copy may still be in flight when cudaMemcpy returns
  }
  CUDA(cudaSetDevice(devs[0]));
  NCCL(ncclAllReduce(ranks[0].send, ranks[0].recv, count, c.type, c.op, ranks[0].comm, ranks[0].stream));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const cudaError_t pending = cudaStreamQuery(ranks[0].stream);
  printf("  stream: rank 0's AllReduce returned and its kernel waits for the others: %s\n",
         pending == cudaErrorNotReady ? "ok" : "FAILED");
  gFailures += pending != cudaErrorNotReady;
  for (int r = 1; r < n; ++r) {
    CUDA(cudaSetDevice(devs[r]));
    NCCL(ncclAllReduce(ranks[r].send, ranks[r].recv, count, c.type, c.op, ranks[r].comm, ranks[r].stream));
  }
  bool same = true;
  for (int r = 0; r < n; ++r) {
    CUDA(cudaSetDevice(devs[r]));
    CUDA(cudaStreamSynchronize(ranks[r].stream));
    std::vector<unsigned char> out(count * 4), want(count * 4);
    CUDA(cudaMemcpy(out.data(), ranks[r].recv, out.size(), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < count; ++i) put(want, i, c.type, reduce(c, i, n));
    same &= out == want;
  }
  printf("  stream: one thread, %d ranks, no group: %s\n", n, same ? "ok" : "FAILED");
  gFailures += !same;
  // Bad input names the argument: a collective with one host and one device buffer.
  std::vector<float> host(count);
  const ncclResult_t mixed =
      ncclAllReduce(host.data(), ranks[0].recv, count, ncclFloat32, ncclSum, ranks[0].comm, ranks[0].stream);
  const std::string mixedMsg = ncclGetLastError(ranks[0].comm);
  const bool errorsOk = mixed == ncclInvalidArgument && mixedMsg.find("sendbuff") != std::string::npos &&
                        mixedMsg.find("host memory") != std::string::npos;
  printf("  errors: mixed buffers -> %d (%s): %s\n", mixed, mixedMsg.c_str(), errorsOk ? "ok" : "FAILED");
  gFailures += !errorsOk;
  // Abort: rank 0 starts an AllReduce nobody joins; ncclCommAbort must end its kernel.
  CUDA(cudaSetDevice(devs[0]));
  NCCL(ncclAllReduce(ranks[0].send, ranks[0].recv, count, c.type, c.op, ranks[0].comm, ranks[0].stream));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto t0 = std::chrono::steady_clock::now();
  NCCL(ncclCommAbort(ranks[0].comm));
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const bool drained = cudaStreamSynchronize(ranks[0].stream) == cudaSuccess;
  printf("  abort: ncclCommAbort ended rank 0's waiting kernel in %.1f ms: %s\n", ms, drained ? "ok" : "FAILED");
  gFailures += !drained;
  for (int r = 1; r < n; ++r) NCCL(ncclCommAbort(ranks[r].comm));
  for (Rank& R : ranks) {
    CUDA(cudaSetDevice(R.dev));
    CUDA(cudaFree(R.send));
    CUDA(cudaFree(R.recv));
    CUDA(cudaStreamDestroy(R.stream));
  }
}

// Processes: this one is rank BATON_RANK of BATON_NRANKS (baton-run sets them and NCCL_COMM_ID,
// with which every rank's ncclGetUniqueId returns the same id).
int checkProcesses() {
  const char* rs = getenv("BATON_RANK");
  const char* ns = getenv("BATON_NRANKS");
  if (!rs || !ns) {
    fprintf(stderr, "check --procs: run under baton-run (BATON_RANK, BATON_NRANKS unset)\n");
    return 2;
  }
  const int r = atoi(rs), n = atoi(ns), nd = ndevices();
  gFewCounts = n > nd;
  if (r == 0) printf("check: %d ranks (processes) on %d device(s), device buffers\n", n, nd);
  for (const char* proto : {"Simple", "LL", "LL128"}) {
    setenv("NCCL_PROTO", proto, 1);
    ncclUniqueId id;
    NCCL(ncclGetUniqueId(&id));
    std::vector<Rank> ranks(1);
    ranks[0].dev = r % nd;
    CUDA(cudaSetDevice(ranks[0].dev));
    NCCL(ncclCommInitRank(&ranks[0].comm, n, id, r));
    allocRank(ranks[0], n);
    makePremul(ranks[0]);
    runMatrix(ranks, {r}, n, proto);
    freeRank(ranks[0]);
  }
  printf("check: rank %d: %d of %d results exact%s\n", r, gRuns - gFailures, gRuns, gFailures ? "  FAILED" : "");
  return gFailures ? 1 : 0;
}

struct Point {
  size_t bytes;
  double us;
};

// One sweep: prints its table, returns each size's time.
std::vector<Point> sweepPoints(int n, size_t maxBytes, const char* proto, Func f) {
  std::vector<Point> points;
  const int nd = ndevices();
  if (proto && *proto) setenv("NCCL_PROTO", proto, 1);
  std::vector<int> devs(n);
  for (int r = 0; r < n; ++r) devs[r] = r % nd;
  std::vector<ncclComm_t> comms(n);
  NCCL(ncclCommInitAll(comms.data(), n, devs.data()));
  std::vector<Rank> ranks(n);
  for (int r = 0; r < n; ++r) {
    ranks[r].comm = comms[r], ranks[r].dev = devs[r];
    CUDA(cudaSetDevice(devs[r]));
    CUDA(cudaStreamCreateWithFlags(&ranks[r].stream, cudaStreamNonBlocking));
    CUDA(cudaMalloc(&ranks[r].send, maxBytes));
    CUDA(cudaMalloc(&ranks[r].recv, maxBytes));
    CUDA(cudaMemset(ranks[r].send, 0, maxBytes));
  }
  const double copyGBs = deviceCopyGBs(devs[0], ranks[0].send, ranks[0].recv, maxBytes);
  printf("# %s float sum, %d rank(s) on %d device(s), NCCL_PROTO=%s\n", kFuncNames[f], n, nd,
         proto && *proto ? proto : "(default)");
  printf("# copy bandwidth (cudaMemcpy device to device, %zu bytes): %.1f GB/s\n", maxBytes, copyGBs);
  // Ranks that share one device share its memory: a ring AllReduce through FIFOs reads and writes
  // 4 bytes per byte of algbw on each of 2 ranks (a copy: 1 and 1), so it tops out near 0.25x copy.
  if (nd == 1 && n == 2 && f == kAllReduce)
    printf("# 2 ranks on one device: the ring's memory traffic bounds busbw near 0.25x copy\n");
  printf("%12s %12s %10s %10s %10s %8s\n", "size", "count", "time(us)", "algbw", "busbw", "bus/copy");
  for (size_t bytes = 8; bytes <= maxBytes; bytes = bytes * 4 > maxBytes && bytes < maxBytes ? maxBytes : bytes * 4) {
    // nccl-tests' size: the whole output of AllGather, the whole input of ReduceScatter.
    const size_t count = f == kAllGather || f == kReduceScatter ? bytes / 4 / n : bytes / 4;
    if (count == 0) continue;
    const int iters = bytes >= (64u << 20) ? 10 : 50, warm = 5;
    auto once = [&] {
      NCCL(ncclGroupStart());
      for (Rank& R : ranks) switch (f) {
          case kAllReduce: NCCL(ncclAllReduce(R.send, R.recv, count, ncclFloat32, ncclSum, R.comm, R.stream)); break;
          case kBroadcast: NCCL(ncclBroadcast(R.send, R.recv, count, ncclFloat32, 0, R.comm, R.stream)); break;
          case kReduce: NCCL(ncclReduce(R.send, R.recv, count, ncclFloat32, ncclSum, 0, R.comm, R.stream)); break;
          case kAllGather: NCCL(ncclAllGather(R.send, R.recv, count, ncclFloat32, R.comm, R.stream)); break;
          case kReduceScatter:
            NCCL(ncclReduceScatter(R.send, R.recv, count, ncclFloat32, ncclSum, R.comm, R.stream));
            break;
        }
      NCCL(ncclGroupEnd());
    };
    auto syncAll = [&] {
      for (Rank& R : ranks) CUDA(cudaStreamSynchronize(R.stream));
    };
    for (int w = 0; w < warm; ++w) once();
    syncAll();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) once();
    syncAll();
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;
    const double factor = f == kAllReduce                          ? 2.0 * (n - 1) / n
                          : f == kAllGather || f == kReduceScatter ? (double)(n - 1) / n
                                                                   : 1.0;
    const double alg = bytes / (us * 1e-6) / 1e9, bus = alg * (n > 1 ? factor : 1.0);
    printf("%12zu %12zu %10.2f %10.2f %10.2f %8.3f\n", bytes, count, us, alg, bus, bus / copyGBs);
    fflush(stdout);
    points.push_back({bytes, us});
  }
  for (Rank& R : ranks) {
    CUDA(cudaSetDevice(R.dev));
    NCCL(ncclCommDestroy(R.comm));
    CUDA(cudaFree(R.send));
    CUDA(cudaFree(R.recv));
  }
  return points;
}

int sweep(int n, size_t maxBytes, const char* proto, Func f) {
  sweepPoints(n, maxBytes, proto, f);
  return 0;
}

// baton's tuner API (include/baton/tuner.h), looked up so the program still runs on NVIDIA's library.
template <typename Fn>
Fn batonSymbol(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

// NCCL's model per protocol: time = steps * hop + bytes / (busBw * busToAlg). Ring AllReduce: 2(n-1)
// steps, algbw = busbw * n / (2(n-1)); tree (a chain: every rank on this host): 2(n-1) steps,
// algbw = busbw / 2. The constants of baton's include/baton/tuner.h are spelled out, since this
// program builds against NVIDIA's nccl.h.
constexpr int kTunerBuckets = 23;                // BATON_TUNER_BUCKETS
constexpr int kAlgoTreeId = 0, kAlgoRingId = 1;  // BATON_ALGO_TREE, BATON_ALGO_RING

int calibrate(int n, size_t maxBytes, const char* out) {
  using FitFn = ncclResult_t (*)(const size_t*, const double*, int, double*, double*);
  using WriteFn = ncclResult_t (*)(const char*, const char*, int, const double*, const double*, const double*,
                                   const double(*)[kTunerBuckets], const char*);
  using PathFn = const char* (*)();
  const auto fit = batonSymbol<FitFn>("batonTunerFitLine");
  const auto write = batonSymbol<WriteFn>("batonTunerWriteFileAlgo");
  const auto defaultPath = batonSymbol<PathFn>("batonTuningFilePath");
  if (!fit || !write || !defaultPath) {
    fprintf(stderr, "calibrate: needs baton's libnccl.so.2 (its tuner API)\n");
    return 2;
  }
  if (n < 2) {
    fprintf(stderr, "calibrate: needs at least 2 ranks (there is no ring to time with 1)\n");
    return 2;
  }
  const std::string path = out && *out ? out : defaultPath();
  const char* protos[3] = {"LL", "LL128", "Simple"};  // BATON_PROTO_* order
  std::string comment = "gpu table written by gpu_collectives calibrate: AllReduce float sum, " + std::to_string(n) +
                        " ranks on " + std::to_string(ndevices()) + " device(s), 8 B.." + std::to_string(maxBytes) +
                        " B";
  for (int algo : {kAlgoRingId, kAlgoTreeId}) {
    setenv("NCCL_ALGO", algo == kAlgoTreeId ? "allreduce:Tree" : "allreduce:Ring", 1);
    double base[3] = {0, 0, 0}, hop[3], busBw[3];
    const int steps = 2 * (n - 1);
    for (int p = 0; p < 3; ++p) {
      const std::vector<Point> pts = sweepPoints(n, maxBytes, protos[p], kAllReduce);
      std::vector<size_t> bytes;
      std::vector<double> us;
      for (const Point& q : pts) bytes.push_back(q.bytes), us.push_back(q.us);
      double lat = 0, algBw = 0;
      NCCL(fit(bytes.data(), us.data(), (int)bytes.size(), &lat, &algBw));
      hop[p] = lat / steps;
      busBw[p] = algo == kAlgoRingId ? algBw * steps / n : algBw * 2;
      printf("# %s %s: latency %.2f us (%.3f us per step), algbw %.1f GB/s -> busbw %.1f GB/s\n",
             algo == kAlgoRingId ? "Ring" : "Tree", protos[p], lat, hop[p], algBw, busBw[p]);
    }
    unsetenv("NCCL_ALGO");
    unsetenv("NCCL_PROTO");
    NCCL(write(path.c_str(), "gpu", algo, base, hop, busBw, nullptr, comment.c_str()));
  }
  printf("# wrote the 'gpu' table to %s\n", path.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr,
            "usage: %s check [-n ranks] [--procs] | sweep [-n ranks] [-e maxbytes] [-p proto] [-c collective] | "
            "calibrate [-n ranks] [-e maxbytes] [-o file]\n",
            argv[0]);
    return 2;
  }
  const std::string mode = argv[1];
  int n = 2;
  size_t maxBytes = 256u << 20;
  const char* proto = "";
  const char* out = "";
  bool procs = false;
  Func coll = kAllReduce;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-n" && i + 1 < argc) n = atoi(argv[++i]);
    else if (a == "-e" && i + 1 < argc) maxBytes = strtoull(argv[++i], nullptr, 0);
    else if (a == "-p" && i + 1 < argc) proto = argv[++i];
    else if (a == "-o" && i + 1 < argc) out = argv[++i];
    else if (a == "--procs") procs = true;
    else if (a == "-c" && i + 1 < argc) {
      const std::string c = argv[++i];
      for (int k = 0; k < 5; ++k) {
        std::string name = kFuncNames[k];
        for (char& ch : name) ch = (char)tolower(ch);
        if (name == c) coll = (Func)k;
      }
    }
  }
  if (ndevices() == 0) {
    fprintf(stderr, "no CUDA device\n");
    return 77;
  }
  if (mode == "check") return procs ? checkProcesses() : checkThreads(n);
  if (mode == "sweep") return sweep(n, maxBytes, proto, coll);
  if (mode == "calibrate") return calibrate(n, maxBytes, out);
  fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}

// The fused operations' communication, every stage (row_exchange.h): naive and decomposed here,
// the window stages in window_exchange.cc.
#include "fused/row_exchange.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "completion.h"
#include "enqueue.h"
#include "fused/fused_trace.h"
#include "fused/window_exchange.h"
#include "misc/debug.h"
#include "misc/param.h"
#include "task.h"

namespace baton {
namespace {

ncclResult_t finish(const std::shared_ptr<Completion>& done) { return done ? done->wait() : ncclSuccess; }

// One step of the decomposed way, handed to the channel workers while this thread computes.
// Then this thread yields: where a rank has one core (tools/bench-fused.sh pins it), the woken
// worker otherwise waits for the scheduler to preempt the GEMM, and the first transfer started
// 4.4 ms late in a 35 ms call (BATON_TRACE); with the yield AllGather+GEMM went from 0.67-0.77 to
// 0.61-0.65 of naive on the slowed link.
ncclResult_t launchPair(const FusedCall& call, Task send, Task recv, std::shared_ptr<Completion>* done) {
  std::vector<Task> tasks = {send, recv};
  const ncclResult_t res = launchTasks(call.comm, tasks, done, /*callerRuns=*/false);
  std::this_thread::yield();
  return res;
}

ncclResult_t runNow(const FusedCall& call, std::vector<Task> tasks) {
  std::shared_ptr<Completion> done;
  // The calling thread runs channel 0's part itself: it has nothing else to do meanwhile.
  BATON_CHECK(launchTasks(call.comm, tasks, &done, /*callerRuns=*/true));
  return finish(done);
}

Task collTask(CollFunc func, const void* send, void* recv, size_t count, ncclDataType_t type, int nRanks) {
  Task t;
  t.kind = Task::kColl;
  t.func = func;
  t.sendbuff = send;
  t.recvbuff = recv;
  t.count = count;
  t.type = type;
  t.op.kind = kOpSum;
  t.op.nRanks = nRanks;
  return t;
}

// Runs a consumer or producer; an exception (out of memory) becomes an error, so the caller still
// drains the steps in flight before the exception could unwind past them.
template <typename Fn>
ncclResult_t safely(const FusedCall& call, Fn fn) {
  try {
    return fn();
  } catch (...) {
    return batonError(ncclSystemError, "%s: out of memory for the operation's working buffers", call.fn);
  }
}

// Waits for every launched step, so no worker still writes a buffer the caller frees on an error.
ncclResult_t drain(std::vector<std::shared_ptr<Completion>>& steps, ncclResult_t first) {
  for (auto& s : steps) {
    ncclResult_t r = finish(s);
    if (first == ncclSuccess) first = r;
  }
  return first;
}

// How a call moves its blocks (row_exchange.h has the stages).
struct ExchangePlan {
  bool naive = false;
  bool window = false;  // through the symmetric window (every rank on this host)
  WindowPlan windowPlan;
  int chunks = 1;  // the decomposed way: sends per block
};

// The optimized stage's chunks off this host: each a send of its own, whose fixed cost over the
// NET transport measured 0.3-0.4 ms on the slowed link (lesson 11's tools/bench-fused.sh: 4 chunks
// of 4 KiB took 2.5 ms where the whole 16 KiB block took 0.9 ms). Chunks of at least 256 KiB keep
// that under a tenth of their transfer at 1 gbit/s; a block too small for two is sent naive.
// BATON_FUSED_MIN_CHUNK_BYTES changes it (the same on every rank, as every such knob).
constexpr size_t kMinChunkBytes = 256 << 10;

ncclResult_t planFor(const FusedCall& call, size_t blockBytes, size_t windowBytes, ExchangePlan* plan) {
  *plan = ExchangePlan{};
  if (call.stage == FusedStage::kNaive || call.nRanks == 1) {
    plan->naive = true;
    return ncclSuccess;
  }
  if (call.stage == FusedStage::kDecomposed) return ncclSuccess;
  const bool optimized = call.stage == FusedStage::kOptimized;
  if (!call.comm->fusedWindow) call.comm->fusedWindow = std::make_shared<FusedWindow>();
  BATON_CHECK(call.comm->fusedWindow->ensure(call.comm, windowBytes, &plan->window));
  // On this host peers are read in place whatever the size (faster than naive at every measured
  // shape, down to one row per rank), each rank starting with a different peer.
  plan->windowPlan.rotate = optimized;
  if (!optimized || plan->window) return ncclSuccess;
  // Off this host a block crosses a link as slow as the GEMM: in chunks, the GEMM of one chunk
  // hides the next one's transfer and only the last chunk's GEMM is exposed (4 measured best of
  // 2, 4, 8, 16).
  const size_t want = (size_t)std::clamp<int64_t>(envInt("BATON_FUSED_CHUNKS", 4), 1, 64);
  const size_t minChunk = (size_t)std::max<int64_t>(1, envInt("BATON_FUSED_MIN_CHUNK_BYTES", kMinChunkBytes));
  plan->chunks = (int)std::max<size_t>(1, std::min(want, blockBytes / minChunk));
  if (want > 1 && blockBytes / minChunk < 2) plan->naive = true;
  return ncclSuccess;
}

}  // namespace

ncclResult_t allGatherBytes(const FusedCall& call, const void* mine, void* all, size_t bytes) {
  return runNow(call, {collTask(kFuncAllGather, mine, all, bytes, ncclInt8, call.nRanks)});
}

ncclResult_t gatherRows(const FusedCall& call, const void* shard, size_t rowBytes, char* gathered, bool wantGathered,
                        const ConsumeRows& untracedConsume) {
  const ConsumeRows consume = tracedGemm(call, untracedConsume);
  const int n = call.nRanks, r = call.rank;
  const size_t rows = call.rowsPerRank, blockBytes = rows * rowBytes;
  ExchangePlan plan;
  BATON_CHECK(planFor(call, blockBytes, blockBytes, &plan));
  if (plan.window)
    return windowGatherRows(call, *call.comm->fusedWindow, plan.windowPlan, shard, rowBytes, gathered, wantGathered,
                            consume);
  char* myBlock = gathered + (size_t)r * blockBytes;
  if (plan.naive) {
    BATON_CHECK(runNow(call, {collTask(kFuncAllGather, shard, gathered, blockBytes, ncclInt8, n)}));
    for (int j = 0; j < n; ++j) BATON_CHECK(consume(j, 0, rows, gathered + (size_t)j * blockBytes));
    return ncclSuccess;
  }
  // Every step's chunks are launched now; channel 0's worker runs them in order while this thread computes.
  const int chunks = (int)std::max<size_t>(1, std::min<size_t>((size_t)plan.chunks, rows));
  std::vector<std::shared_ptr<Completion>> steps((size_t)n * chunks);
  ncclResult_t res = ncclSuccess;
  for (int s = 1; s < n && res == ncclSuccess; ++s) {
    const int to = (r + s) % n, from = (r - s + n) % n;
    for (int c = 0; c < chunks && res == ncclSuccess; ++c) {
      const size_t off = chunkRow(rows, chunks, c) * rowBytes, bytes = chunkRow(rows, chunks, c + 1) * rowBytes - off;
      res = launchPair(
          call, sendRecvTask(Task::kSend, (const char*)shard + off, nullptr, bytes, ncclInt8, to),
          sendRecvTask(Task::kRecv, nullptr, gathered + (size_t)from * blockBytes + off, bytes, ncclInt8, from),
          &steps[(size_t)s * chunks + c]);
    }
  }
  if (res == ncclSuccess && myBlock != shard && blockBytes > 0) memcpy(myBlock, shard, blockBytes);
  if (res == ncclSuccess) res = safely(call, [&] { return consume(r, 0, rows, myBlock); });
  for (int s = 1; s < n && res == ncclSuccess; ++s) {
    const int from = (r - s + n) % n;
    for (int c = 0; c < chunks && res == ncclSuccess; ++c) {
      auto& step = steps[(size_t)s * chunks + c];
      {
        FusedWaitSpan wait(call, from, c);
        res = finish(step);
      }
      step.reset();
      const size_t r0 = chunkRow(rows, chunks, c), r1 = chunkRow(rows, chunks, c + 1);
      if (res == ncclSuccess)
        res = safely(call,
                     [&] { return consume(from, r0, r1 - r0, gathered + (size_t)from * blockBytes + r0 * rowBytes); });
    }
  }
  return drain(steps, res);
}

ncclResult_t reduceScatterRows(const FusedCall& call, size_t rowFloats, const ProduceRows& untracedProduce,
                               float* out) {
  const ProduceRows produce = tracedGemm(call, untracedProduce);
  const int n = call.nRanks, r = call.rank;
  const size_t rows = call.rowsPerRank, blockFloats = rows * rowFloats;
  ExchangePlan plan;
  BATON_CHECK(planFor(call, blockFloats * sizeof(float), blockFloats * sizeof(float) * n, &plan));
  if (plan.window)
    return windowReduceScatterRows(call, *call.comm->fusedWindow, plan.windowPlan, rowFloats, produce, out);
  if (plan.naive) {
    float* partial = (float*)call.scratch->get(FusedScratch::kPartials, blockFloats * n * sizeof(float));
    // Own block last, as in the other stages.
    for (int s = 1; s <= n; ++s) {
      const int j = (r - s + n) % n;
      BATON_CHECK(produce(j, 0, rows, partial + (size_t)j * blockFloats));
    }
    return runNow(call, {collTask(kFuncReduceScatter, partial, out, blockFloats, ncclFloat, n)});
  }
  // Step s: this rank's partial for r-s leaves chunk by chunk while the next chunk is computed;
  // r+s's partial for r arrives into its own slot, and everything is summed once the own block is
  // computed too.
  const int chunks = (int)std::max<size_t>(1, std::min<size_t>((size_t)plan.chunks, rows));
  const size_t stepBytes = blockFloats * (n - 1) * sizeof(float);
  float* sendBuf = (float*)call.scratch->get(FusedScratch::kSendSteps, stepBytes);
  float* recvBuf = (float*)call.scratch->get(FusedScratch::kRecvSteps, stepBytes);
  std::vector<std::shared_ptr<Completion>> steps((size_t)n * chunks);
  ncclResult_t res = ncclSuccess;
  for (int s = 1; s < n && res == ncclSuccess; ++s) {
    const int to = (r - s + n) % n, from = (r + s) % n;
    for (int c = 0; c < chunks && res == ncclSuccess; ++c) {
      const size_t r0 = chunkRow(rows, chunks, c), r1 = chunkRow(rows, chunks, c + 1);
      float* send = sendBuf + (size_t)(s - 1) * blockFloats + r0 * rowFloats;
      float* recv = recvBuf + (size_t)(s - 1) * blockFloats + r0 * rowFloats;
      res = safely(call, [&] { return produce(to, r0, r1 - r0, send); });
      if (res == ncclSuccess)
        res = launchPair(call, sendRecvTask(Task::kSend, send, nullptr, (r1 - r0) * rowFloats, ncclFloat, to),
                         sendRecvTask(Task::kRecv, nullptr, recv, (r1 - r0) * rowFloats, ncclFloat, from),
                         &steps[(size_t)s * chunks + c]);
    }
  }
  if (res == ncclSuccess) res = safely(call, [&] { return produce(r, 0, rows, out); });
  for (int s = 1; s < n && res == ncclSuccess; ++s) {
    for (int c = 0; c < chunks && res == ncclSuccess; ++c) {
      auto& step = steps[(size_t)s * chunks + c];
      {
        FusedWaitSpan wait(call, (r + s) % n, c);
        res = finish(step);
      }
      step.reset();
      const size_t e0 = chunkRow(rows, chunks, c) * rowFloats, e1 = chunkRow(rows, chunks, c + 1) * rowFloats;
      const float* recv = recvBuf + (size_t)(s - 1) * blockFloats;
      for (size_t i = e0; res == ncclSuccess && i < e1; ++i) out[i] += recv[i];
    }
  }
  return drain(steps, res);
}

}  // namespace baton

// The fused operations' communication, every stage (row_exchange.h): the channels' side here, the
// window's side (peers of this host in the fused and optimized stages) in window_exchange.cc.
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
// Then this thread yields: where a rank has one core (tools/scripts/bench-fused.sh pins it), the woken
// worker otherwise waits for the scheduler to preempt the GEMM, and the first transfer started
// 4.4 ms late in a 35 ms call (BATON_TRACE); with the yield AllGather+GEMM went from 0.67-0.77 to
// 0.61-0.65 of naive on the slowed link.
// A step with nothing to move (both peers reached through the window) launches nothing.
ncclResult_t launchStep(const FusedCall& call, std::vector<Task> tasks, std::shared_ptr<Completion>* done) {
  if (tasks.empty()) return ncclSuccess;
  const ncclResult_t res = launchTasks(call.comm, tasks, done, /*callerRuns=*/false);
  std::this_thread::yield();
  return res;
}

ncclResult_t runNow(const FusedCall& call, std::vector<Task> tasks) { return runTasksNow(call.comm, std::move(tasks)); }

// The call's AllGather or ReduceScatter (summing) on the communicator.
Task sumCollTask(const FusedCall& call, CollFunc func, const void* send, void* recv, size_t count,
                 ncclDataType_t type) {
  Task t = collTask(func, send, recv, count, type);
  t.op.kind = kOpSum;
  t.op.nRanks = call.nRanks;
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

// Waits for chunk `chunk` of rank `from`'s step (a span in BATON_TRACE) and lets it go.
ncclResult_t awaitStep(const FusedCall& call, std::shared_ptr<Completion>& step, int from, int chunk) {
  FusedWaitSpan wait(call, from, chunk);
  const ncclResult_t res = finish(step);
  step.reset();
  return res;
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
  FusedWindow* window = nullptr;  // peers of this host through it (fused, optimized), else null
  bool rotate = false;            // peers of this host visited rank-rotated
  int chunks = 1;                 // sends per block to a peer of another host
  bool viaWindow(int peer) const { return window && window->local(peer); }
};

// The optimized stage's chunks off this host: each a send of its own, whose fixed cost over the
// NET transport measured 0.3-0.4 ms on the slowed link (lesson 11's tools/scripts/bench-fused.sh: 4 chunks
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
  bool usable = false;
  BATON_CHECK(call.comm->fusedWindow->ensure(call.comm, windowBytes, &usable));
  if (usable) plan->window = call.comm->fusedWindow.get();
  // Peers of this host are read in place whatever the size (faster than naive at every measured
  // shape, down to one row per rank), each rank starting with a different peer.
  plan->rotate = optimized;
  const bool oneHost = call.comm->fusedWindow->dev().lsaSize == call.nRanks;  // alike on every rank
  if (!optimized || oneHost) return ncclSuccess;
  // Off this host a block crosses a link as slow as the GEMM: in chunks, the GEMM of one chunk
  // hides the next one's transfer and only the last chunk's GEMM is exposed (4 measured best of
  // 2, 4, 8, 16).
  const size_t want = (size_t)std::clamp<int64_t>(envInt("BATON_FUSED_CHUNKS", 4, EnvLog::kQuiet), 1, 64);
  const size_t minChunk =
      (size_t)std::max<int64_t>(1, envInt("BATON_FUSED_MIN_CHUNK_BYTES", kMinChunkBytes, EnvLog::kQuiet));
  plan->chunks = (int)std::max<size_t>(1, std::min(want, blockBytes / minChunk));
  if (want > 1 && blockBytes / minChunk < 2) *plan = ExchangePlan{true};
  return ncclSuccess;
}

}  // namespace

ncclResult_t allGatherBytes(const FusedCall& call, const void* mine, void* all, size_t bytes) {
  return runNow(call, {sumCollTask(call, kFuncAllGather, mine, all, bytes, ncclInt8)});
}

ncclResult_t gatherRows(const FusedCall& call, const void* shard, size_t rowBytes, char* gathered, bool wantGathered,
                        const ConsumeRows& untracedConsume) {
  const ConsumeRows consume = tracedGemm(call, untracedConsume);
  const int n = call.nRanks, r = call.rank;
  const size_t rows = call.rowsPerRank, blockBytes = rows * rowBytes;
  ExchangePlan plan;
  BATON_CHECK(planFor(call, blockBytes, blockBytes, &plan));
  if (plan.naive) {
    BATON_CHECK(runNow(call, {sumCollTask(call, kFuncAllGather, shard, gathered, blockBytes, ncclInt8)}));
    for (int j = 0; j < n; ++j) BATON_CHECK(consume(j, 0, rows, gathered + (size_t)j * blockBytes));
    return ncclSuccess;
  }
  // Peers of this host: this rank's rows into its window, signalled (they read them in place).
  if (plan.window) publishRows(*plan.window, shard, blockBytes);
  // Peers of other hosts: every step's chunks launched now; channel 0's worker runs them in order
  // while this thread computes. At step s this rank sends to r+s and receives from r-s.
  const int chunks = (int)std::max<size_t>(1, std::min<size_t>((size_t)plan.chunks, rows));
  auto chunkRow = [&](int c) { return rows * (size_t)c / (size_t)chunks; };
  std::vector<std::shared_ptr<Completion>> steps((size_t)n * chunks);
  ncclResult_t res = ncclSuccess;
  for (int s = 1; s < n && res == ncclSuccess; ++s) {
    const int to = (r + s) % n, from = (r - s + n) % n;
    for (int c = 0; c < chunks && res == ncclSuccess; ++c) {
      const size_t off = chunkRow(c) * rowBytes, bytes = chunkRow(c + 1) * rowBytes - off;
      std::vector<Task> tasks;
      if (!plan.viaWindow(to))
        tasks.push_back(sendRecvTask(Task::kSend, (const char*)shard + off, nullptr, bytes, ncclInt8, to));
      if (!plan.viaWindow(from))
        tasks.push_back(
            sendRecvTask(Task::kRecv, nullptr, gathered + (size_t)from * blockBytes + off, bytes, ncclInt8, from));
      res = launchStep(call, std::move(tasks), &steps[(size_t)s * chunks + c]);
    }
  }
  // This rank's own block, then its host's peers' (already there), then the others' as they come.
  if (res == ncclSuccess && wantGathered && blockBytes) memcpy(gathered + (size_t)r * blockBytes, shard, blockBytes);
  if (res == ncclSuccess) res = safely(call, [&] { return consume(r, 0, rows, shard); });
  for (int i = 0; i < n - 1 && res == ncclSuccess; ++i) {
    const int j = visitAt(call, plan.rotate, i);
    if (!plan.viaWindow(j)) continue;
    res = waitBlock(call, *plan.window, FusedWindow::kGather, j);
    const char* theirs = plan.window->base(j);
    if (res == ncclSuccess && wantGathered && blockBytes) memcpy(gathered + (size_t)j * blockBytes, theirs, blockBytes);
    if (res == ncclSuccess) res = safely(call, [&] { return consume(j, 0, rows, theirs); });
  }
  for (int s = 1; s < n && res == ncclSuccess; ++s) {
    const int from = (r - s + n) % n;
    if (plan.viaWindow(from)) continue;
    for (int c = 0; c < chunks && res == ncclSuccess; ++c) {
      res = awaitStep(call, steps[(size_t)s * chunks + c], from, c);
      const size_t r0 = chunkRow(c), r1 = chunkRow(c + 1);
      if (res == ncclSuccess)
        res = safely(call,
                     [&] { return consume(from, r0, r1 - r0, gathered + (size_t)from * blockBytes + r0 * rowBytes); });
    }
  }
  res = drain(steps, res);
  if (res == ncclSuccess && plan.window) res = endWindowCall(call, *plan.window, FusedWindow::kGather);
  return res;
}

ncclResult_t reduceScatterRows(const FusedCall& call, size_t rowFloats, const ProduceRows& untracedProduce,
                               float* out) {
  const ProduceRows produce = tracedGemm(call, untracedProduce);
  const int n = call.nRanks, r = call.rank;
  const size_t rows = call.rowsPerRank, blockFloats = rows * rowFloats;
  ExchangePlan plan;
  BATON_CHECK(planFor(call, blockFloats * sizeof(float), blockFloats * sizeof(float) * n, &plan));
  if (plan.naive) {
    float* partial = (float*)call.scratch->get(FusedScratch::kPartials, blockFloats * n * sizeof(float));
    // Own block last, as in the other stages.
    for (int s = 1; s <= n; ++s) {
      const int j = (r - s + n) % n;
      BATON_CHECK(produce(j, 0, rows, partial + (size_t)j * blockFloats));
    }
    return runNow(call, {sumCollTask(call, kFuncReduceScatter, partial, out, blockFloats, ncclFloat)});
  }
  // Peers of other hosts first (their partials have the slowest way to go): at step s this rank's
  // partial for r-s leaves chunk by chunk while the next chunk is computed, and r+s's partial for
  // r arrives into its own slot.
  const int chunks = (int)std::max<size_t>(1, std::min<size_t>((size_t)plan.chunks, rows));
  auto chunkRow = [&](int c) { return rows * (size_t)c / (size_t)chunks; };
  const size_t stepBytes = blockFloats * (n - 1) * sizeof(float);
  float* sendBuf = (float*)call.scratch->get(FusedScratch::kSendSteps, stepBytes);
  float* recvBuf = (float*)call.scratch->get(FusedScratch::kRecvSteps, stepBytes);
  std::vector<std::shared_ptr<Completion>> steps((size_t)n * chunks);
  ncclResult_t res = ncclSuccess;
  for (int s = 1; s < n && res == ncclSuccess; ++s) {
    const int to = (r - s + n) % n, from = (r + s) % n;
    for (int c = 0; c < chunks && res == ncclSuccess; ++c) {
      const size_t r0 = chunkRow(c), r1 = chunkRow(c + 1);
      float* send = sendBuf + (size_t)(s - 1) * blockFloats + r0 * rowFloats;
      float* recv = recvBuf + (size_t)(s - 1) * blockFloats + r0 * rowFloats;
      std::vector<Task> tasks;
      if (!plan.viaWindow(to)) {
        res = safely(call, [&] { return produce(to, r0, r1 - r0, send); });
        tasks.push_back(sendRecvTask(Task::kSend, send, nullptr, (r1 - r0) * rowFloats, ncclFloat, to));
      }
      if (!plan.viaWindow(from))
        tasks.push_back(sendRecvTask(Task::kRecv, nullptr, recv, (r1 - r0) * rowFloats, ncclFloat, from));
      if (res == ncclSuccess) res = launchStep(call, std::move(tasks), &steps[(size_t)s * chunks + c]);
    }
  }
  // Peers of this host: the partial straight into slot r of the owner's window, signalled.
  auto slot = [&](int owner, int from) { return (float*)plan.window->base(owner) + (size_t)from * blockFloats; };
  for (int i = 0; i < n - 1 && res == ncclSuccess; ++i) {
    const int j = visitAt(call, plan.rotate, i);
    if (!plan.viaWindow(j)) continue;
    res = safely(call, [&] { return produce(j, 0, rows, slot(j, r)); });
    if (res == ncclSuccess) plan.window->signalPeer(j, FusedWindow::kReduceScatter);
  }
  if (res == ncclSuccess) res = safely(call, [&] { return produce(r, 0, rows, out); });
  // Sum what the peers of this host wrote into this rank's window, then what the channels brought.
  for (int i = 0; i < n - 1 && res == ncclSuccess; ++i) {
    const int from = sourceAt(call, plan.rotate, i);
    if (!plan.viaWindow(from)) continue;
    res = waitBlock(call, *plan.window, FusedWindow::kReduceScatter, from);
    const float* in = res == ncclSuccess ? slot(r, from) : nullptr;
    for (size_t e = 0; res == ncclSuccess && e < blockFloats; ++e) out[e] += in[e];
  }
  for (int s = 1; s < n && res == ncclSuccess; ++s) {
    const int from = (r + s) % n;
    if (plan.viaWindow(from)) continue;
    for (int c = 0; c < chunks && res == ncclSuccess; ++c) {
      res = awaitStep(call, steps[(size_t)s * chunks + c], from, c);
      const float* recv = recvBuf + (size_t)(s - 1) * blockFloats;
      for (size_t e = chunkRow(c) * rowFloats; res == ncclSuccess && e < chunkRow(c + 1) * rowFloats; ++e)
        out[e] += recv[e];
    }
  }
  res = drain(steps, res);
  if (res == ncclSuccess && plan.window) res = endWindowCall(call, *plan.window, FusedWindow::kReduceScatter);
  return res;
}

}  // namespace baton

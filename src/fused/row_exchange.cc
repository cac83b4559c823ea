// The naive and decomposed stages of the fused operations' communication (row_exchange.h).
#include "fused/row_exchange.h"

#include <cstring>
#include <memory>
#include <vector>

#include "completion.h"
#include "enqueue.h"
#include "misc/debug.h"
#include "task.h"

namespace baton {
namespace {

// Hands tasks to the channel workers; *done completes when they are finished. callerRuns: the
// calling thread may run channel 0's part itself (it has nothing else to do meanwhile).
ncclResult_t launch(const FusedCall& call, std::vector<Task> tasks, std::shared_ptr<Completion>* done,
                    bool callerRuns) {
  BATON_CHECK(launchTasks(call.comm, tasks, done, callerRuns));
  return ncclSuccess;
}

ncclResult_t finish(const std::shared_ptr<Completion>& done) { return done ? done->wait() : ncclSuccess; }

ncclResult_t runNow(const FusedCall& call, std::vector<Task> tasks) {
  std::shared_ptr<Completion> done;
  BATON_CHECK(launch(call, std::move(tasks), &done, /*callerRuns=*/true));
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

}  // namespace

ncclResult_t allGatherBytes(const FusedCall& call, const void* mine, void* all, size_t bytes) {
  return runNow(call, {collTask(kFuncAllGather, mine, all, bytes, ncclInt8, call.nRanks)});
}

ncclResult_t gatherRows(const FusedCall& call, const void* shard, size_t blockBytes, char* gathered,
                        const ConsumeBlock& consume) {
  const int n = call.nRanks, r = call.rank;
  char* myBlock = gathered + (size_t)r * blockBytes;
  if (call.stage == FusedStage::kNaive || n == 1) {
    BATON_CHECK(runNow(call, {collTask(kFuncAllGather, shard, gathered, blockBytes, ncclInt8, n)}));
    for (int j = 0; j < n; ++j) BATON_CHECK(consume(j, gathered + (size_t)j * blockBytes));
    return ncclSuccess;
  }
  // Every step is launched now; channel 0's worker runs them in order while this thread computes.
  std::vector<std::shared_ptr<Completion>> steps(n);
  ncclResult_t res = ncclSuccess;
  for (int s = 1; s < n && res == ncclSuccess; ++s) {
    const int to = (r + s) % n, from = (r - s + n) % n;
    res = launch(call,
                 {sendRecvTask(Task::kSend, shard, nullptr, blockBytes, ncclInt8, to),
                  sendRecvTask(Task::kRecv, nullptr, gathered + (size_t)from * blockBytes, blockBytes, ncclInt8, from)},
                 &steps[s], /*callerRuns=*/false);
  }
  if (res == ncclSuccess && myBlock != shard && blockBytes > 0) memcpy(myBlock, shard, blockBytes);
  if (res == ncclSuccess) res = safely(call, [&] { return consume(r, myBlock); });
  for (int s = 1; s < n && res == ncclSuccess; ++s) {
    res = finish(steps[s]);
    steps[s].reset();
    const int from = (r - s + n) % n;
    if (res == ncclSuccess) res = safely(call, [&] { return consume(from, gathered + (size_t)from * blockBytes); });
  }
  return drain(steps, res);
}

ncclResult_t reduceScatterRows(const FusedCall& call, size_t blockFloats, const ProduceBlock& produce, float* out) {
  const int n = call.nRanks, r = call.rank;
  if (call.stage == FusedStage::kNaive || n == 1) {
    float* partial = (float*)call.scratch->get(FusedScratch::kPartials, blockFloats * n * sizeof(float));
    // Own block last, as in the decomposed stage.
    for (int s = 1; s <= n; ++s) {
      const int j = (r - s + n) % n;
      BATON_CHECK(produce(j, partial + (size_t)j * blockFloats));
    }
    return runNow(call, {collTask(kFuncReduceScatter, partial, out, blockFloats, ncclFloat, n)});
  }
  // Step s: this rank's partial for r-s leaves while the next one is computed; r+s's partial for r
  // arrives into its own slot, and everything is summed once the own block is computed too.
  const size_t stepBytes = blockFloats * (n - 1) * sizeof(float);
  float* sendBuf = (float*)call.scratch->get(FusedScratch::kSendSteps, stepBytes);
  float* recvBuf = (float*)call.scratch->get(FusedScratch::kRecvSteps, stepBytes);
  std::vector<std::shared_ptr<Completion>> steps(n);
  ncclResult_t res = ncclSuccess;
  for (int s = 1; s < n && res == ncclSuccess; ++s) {
    const int to = (r - s + n) % n, from = (r + s) % n;
    float* send = sendBuf + (size_t)(s - 1) * blockFloats;
    float* recv = recvBuf + (size_t)(s - 1) * blockFloats;
    res = safely(call, [&] { return produce(to, send); });
    if (res == ncclSuccess)
      res = launch(call,
                   {sendRecvTask(Task::kSend, send, nullptr, blockFloats, ncclFloat, to),
                    sendRecvTask(Task::kRecv, nullptr, recv, blockFloats, ncclFloat, from)},
                   &steps[s], /*callerRuns=*/false);
  }
  if (res == ncclSuccess) res = safely(call, [&] { return produce(r, out); });
  for (int s = 1; s < n && res == ncclSuccess; ++s) {
    res = finish(steps[s]);
    steps[s].reset();
    const float* recv = recvBuf + (size_t)(s - 1) * blockFloats;
    for (size_t i = 0; res == ncclSuccess && i < blockFloats; ++i) out[i] += recv[i];
  }
  return drain(steps, res);
}

}  // namespace baton

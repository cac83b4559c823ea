// The tuner: for each collective, predict time = latency + bytes / bandwidth for every enabled
// (algorithm, protocol) and pick the fastest (NCCL's model, src/graph/tuning.cc).
//
// The model's numbers come from a tuning file written by `baton-perf --calibrate` (BATON_TUNING_FILE,
// default ~/.cache/baton/tuning.txt) or from built-in defaults; NCCL_ALGO / NCCL_PROTO restrict the
// choice with NCCL's syntax. Rank 0's model and masks are shared at init so every rank decides the
// same way. Introduced in lesson 05 (docs/lessons/05-channels-and-tuning.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "coll_args.h"
#include "nccl.h"

namespace baton {

// The modelled algorithms (kNumTunedAlgos, coll_args.h: Tree for AllReduce only, lesson 07), in the
// order the tuner prefers them when two predictions are equal; tables are indexed by algorithm id.
constexpr CollAlgo kTunedAlgos[kNumTunedAlgos] = {kAlgoRing, kAlgoTree};

// Size buckets of the correction factor: log2(bytes / 64), 64 B .. 256 MiB (NCCL's tree table too).
constexpr int kCorrBuckets = 23;
int corrBucket(size_t bytes);

// Per (algorithm, protocol): a fixed cost, a cost per ring step, the bus bandwidth reached, and a
// measured correction per size bucket for what a line cannot capture (caches, wake-ups).
struct AlgoProtoCost {
  float baseUs = 0;
  float hopUs = 0;
  float busBwGBs = 0;  // 0: unusable
  float corr[kCorrBuckets] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
};

// How the ranks of a communicator run and reach each other: through FIFO copies in shared memory
// (also ranks of one process with BATON_DIRECT=0), the same with more ranks on the host than cores
// (every hand-off may wait for a context switch), through each other's buffers (direct paths), or
// as CUDA kernels on device buffers (the CUDA backend: one block per channel, FIFOs in device or
// pinned memory). They behave so differently that each has its own table.
enum TuningPath : int { kPathShm = 0, kPathDirect = 1, kPathOversub = 2, kPathGpu = 3, kNumPaths = 4 };
const char* tuningPathName(int path);

// AlltoAll across hosts, measured by `baton-perf alltoall --calibrate` (lesson 12): for nRanks
// ranks, Bruck beat direct up to a whole buffer of bruckBytes.
struct AlltoAllCalibration {
  int nRanks = 0;
  uint64_t bruckBytes = 0;
};
constexpr int kMaxAlltoAllCalibrations = 16;

struct TuningModel {
  AlgoProtoCost cost[kNumPaths][kNumTunedAlgos][kNumProtos];
  AlltoAllCalibration alltoall[kMaxAlltoAllCalibrations];  // one per rank count measured
  int nAlltoAll = 0;
  char source[96] = "built-in";  // "built-in" or the tuning file's path (for logs and --explain)
};
// Records (or replaces) the AlltoAll entry for nRanks; false when the table is full.
bool setAlltoAllCalibration(TuningModel* m, int nRanks, uint64_t bruckBytes);
// The entry measured at the rank count nearest nRanks (ties: the smaller), or nullptr.
const AlltoAllCalibration* alltoallCalibrationFor(const TuningModel& m, int nRanks);

// Which (function, algorithm, protocol) triples NCCL_ALGO / NCCL_PROTO leave enabled.
struct AlgoProtoMask {
  uint8_t algo[kFuncCount][kNumTunedAlgos];
  uint8_t proto[kFuncCount][kNumProtos];
};

// The built-in model (measured on a 2-core development machine; see docs/perf.md).
TuningModel defaultTuningModel();
// Loads `path` into *model (entries it names replace those in *model). Missing file: ncclSystemError, *model untouched;
// a malformed line: ncclInvalidArgument naming the file, the line and the field.
ncclResult_t loadTuningFile(const std::string& path, TuningModel* model);
// The same for a file's text; `source` names it in messages (the fuzz target feeds it directly).
ncclResult_t parseTuningText(const std::string& text, const std::string& source, TuningModel* model);
// What a writer of `path` starts from: the file's model, or the built-in one where it is missing
// or unreadable (quietly), so a calibration keeps the entries it does not measure.
TuningModel tuningModelToRewrite(const std::string& path);
ncclResult_t writeTuningFile(const std::string& path, const TuningModel& model, const std::string& comment);
// BATON_TUNING_FILE, or $XDG_CACHE_HOME/baton/tuning.txt, or $HOME/.cache/baton/tuning.txt.
std::string tuningFilePath();
// The model a communicator starts from: the tuning file if it exists and parses (a broken file is a
// WARN and the built-in model), else the built-in one. BATON_TUNING_FILE=none skips the file.
TuningModel initialTuningModel();

// Parses NCCL_ALGO and NCCL_PROTO values (either may be null/empty: everything enabled).
// Syntax: comma-separated names, case-insensitive, a leading '^' excludes, and ';'-separated
// sections prefixed by "function:" apply to one collective, e.g. "^LL128;allreduce:LL128".
ncclResult_t parseAlgoProtoEnv(const char* algoEnv, const char* protoEnv, AlgoProtoMask* mask);

// Steps a ring takes for `func` over n ranks, and the factor from bus bandwidth to algorithm bandwidth.
int ringSteps(int func, int nRanks);
// Hops from a leaf to the root of the tree over nRanks ranks on nNodes nodes: the chain inside a
// node plus the binary tree across nodes (NCCL's estimate: ppn - 1 + log2(nNodes)).
int treeDepth(int nRanks, int nNodes);
// Predicted microseconds for `bytes` (the nccl-tests size: the per-rank buffer, or the whole
// output for AllGather and the whole input for ReduceScatter). < 0: not usable. Ring: base +
// ringSteps * hop + bytes / (busBw * n / steps); Tree (AllReduce only): base + 2 * depth * hop +
// bytes / (busBw / 2), NCCL's factors (every byte goes up and down the same tree).
double predictUs(const TuningModel& m, int path, CollFunc func, CollAlgo algo, Proto proto, int nRanks, int nNodes,
                 size_t bytes);

struct AlgoProtoChoice {
  CollAlgo algo = kAlgoRing;
  Proto proto = kProtoSimple;
  double us = 0;
};
// The fastest enabled pair, or ncclInvalidUsage naming NCCL_ALGO / NCCL_PROTO when none is left.
ncclResult_t chooseAlgoProto(const TuningModel& m, int path, const AlgoProtoMask& mask, CollFunc func, int nRanks,
                             int nNodes, size_t bytes, AlgoProtoChoice* out);
// The CUDA backend's choice for a collective on device buffers: the 'gpu' table, among what the
// GPU communicator has (Tree only when its trees were connected at init; src/gpu/gpu_tree.cc).
ncclResult_t chooseGpuAlgoProto(const TuningModel& m, const AlgoProtoMask& mask, bool haveTrees, CollFunc func,
                                int nRanks, int nNodes, size_t bytes, AlgoProtoChoice* out);

// Channels an operation of `bytes` uses: one per minChannelBytes, at most the communicator's
// (the planner, and the simulator's schedule, cut the same way).
inline int channelsForBytes(int nChannels, size_t minChannelBytes, size_t bytes) {
  const size_t want = bytes / (minChannelBytes ? minChannelBytes : 1);
  return (int)(want < 1 ? 1 : want < (size_t)nChannels ? want : (size_t)nChannels);
}

// FIFO slots an operation may fill ahead (BATON_FIFO_DEPTH, raised where fewer would deadlock). On
// a closed ring every rank first sends a whole chunk, then must find a free slot for each slice it
// forwards before its successor has consumed anything more: with fewer than chunkSteps + 1 slots
// every rank waits for the next one, in a cycle. Chains (Broadcast, Reduce) work with 1 slot;
// cycles get at least chunkSteps + 1 (lesson 03). A tree is no cycle, but its reduce and broadcast
// wait on each other through the root (tree_allreduce.h): AllReduce gets the slack either way.
inline int planFifoDepth(int func, int fifoDepth, int chunkSteps) {
  const bool cycle = func == kFuncAllReduce || func == kFuncAllGather || func == kFuncReduceScatter;
  const int need = cycle ? (chunkSteps + 1 < kSteps ? chunkSteps + 1 : kSteps) : 1;
  return fifoDepth > need ? fifoDepth : need;
}

// "allreduce", "broadcast", "reduce", "allgather", "reducescatter" (any case) -> CollFunc, else -1.
int funcByName(const char* name);

// The names of what the tuner chooses among: "AllReduce", ... (a CollFunc, "?" for another value)
// and "LL", "LL128", "Simple".
const char* funcName(int func);
const char* protoName(int proto);

}  // namespace baton

// The step schedule of one collective, as the library would execute it: the planner's channel
// count and chunking, the graph's rings and trees, the protocol's step sizes, and the algorithm's
// own body run with recording primitives (recorded_primitives.h). The simulator's input (sim.h).
#pragma once

#include <cstddef>

#include "coll_args.h"
#include "sim/sim.h"
#include "topo/graph.h"

namespace baton {

struct ScheduleSpec {
  CollFunc func = kFuncAllReduce;
  CollAlgo algo = kAlgoRing;  // kAlgoRing or kAlgoTree (AllReduce only)
  Proto proto = kProtoSimple;
  size_t bytes = 0;  // nccl-tests' size (AllGather: the whole output; ReduceScatter: the whole input)
  int root = 0;
  int nChannels = 1;                  // channels the communicator has (the planner may use fewer)
  size_t minChannelBytes = 64 << 10;  // BATON_MIN_CHANNEL_BYTES
  FifoLayout layout;                  // step bytes per protocol (NCCL_BUFFSIZE, ...)
  int chunkSteps = 4;
  int fifoDepth = kSteps;  // BATON_FIFO_DEPTH (the planner raises it where it must: planFifoDepth)
  // Trees: false (baton): each rank alternates its reduce and broadcast in one stream, as
  // tree_allreduce.h does on both backends; true: two concurrent streams, as NCCL's runTreeSplit
  // runs them in two thread groups (what baton's tree would gain from splitting).
  bool splitTree = false;
};

// Fills `out` for every rank and every channel the planner would use; float data, sum.
ncclResult_t buildSchedule(const CommGraph& graph, int nRanks, const ScheduleSpec& spec, SimSchedule* out);

}  // namespace baton

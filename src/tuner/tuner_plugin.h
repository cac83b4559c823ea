// NCCL's tuner plugins (NCCL_TUNER_PLUGIN, versions 2 to 5 of NCCL 2.28.9's interface) steering
// baton's choice of algorithm, protocol and channels. Lesson 16 (docs/lessons/16-plugins.md).
//
// As in NCCL (its enqueue.cc getAlgoInfo): baton fills a cost table (microseconds per algorithm and
// protocol, from its own model; NCCL_ALGO_PROTO_IGNORE where NCCL_ALGO / NCCL_PROTO disable a pair
// or baton does not run it), the plugin may rewrite it (0 forces a pair, -1 forbids one) and set a
// channel count, and the cheapest entry left is taken. Where baton differs from NCCL, it says so in
// an INFO or WARN line: a plugin whose init fails leaves the communicator on baton's own tuner
// (NCCL fails the init), and a pick of an algorithm baton does not build (CollNet, NVLS, PAT) is
// not taken. Every rank asks its own plugin, so a plugin must answer alike on every rank.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "baton/plugin_tuner.h"
#include "tuner/tuner.h"

namespace baton {

// The algorithms baton runs for `func`: Ring always, Tree for AllReduce where trees exist.
bool tunerAlgoRuns(int algo, CollFunc func, bool treesAvailable);

// baton's model as NCCL's cost table for one collective.
void fillCostTable(const TuningModel& m, int path, const AlgoProtoMask& mask, CollFunc func, int nRanks, int nNodes,
                   size_t bytes, bool treesAvailable, float table[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS]);

// NCCL's pick from a cost table: the cheapest entry >= 0 (first in algorithm, then protocol order
// on a tie). Entries of algorithms baton does not run for `func` are passed over; *passedOver gets
// the first such algorithm that would have won (-1: none). false: no entry left.
bool pickFromCostTable(const float table[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS], CollFunc func, bool treesAvailable,
                       AlgoProtoChoice* out, int* passedOver);

// NCCL's number for a collective (ncclFuncAllReduce = 4, ...).
ncclFunc_t ncclFuncOf(CollFunc func);

// One communicator's use of the process's tuner plugin (loaded with the first, closed with the last).
class TunerPlugin {
 public:
  // Loads NCCL_TUNER_PLUGIN if not yet loaded and calls its init for this communicator; nullptr when
  // there is none, NCCL_TUNER_PLUGIN=none, or init failed (each said in an INFO or WARN line).
  // A v5 plugin sees baton's latencies in NCCL's constants; what it changes there goes into *model.
  static std::unique_ptr<TunerPlugin> start(uint64_t commId, int nRanks, int nNodes, int path, TuningModel* model);
  ~TunerPlugin();  // the plugin's finalize
  TunerPlugin(const TunerPlugin&) = delete;
  TunerPlugin& operator=(const TunerPlugin&) = delete;

  struct Verdict {
    bool tableChanged = false;  // the plugin rewrote the table (the pick is NCCL's over its table)
    int channels = 0;           // the plugin's channel count (0: baton's)
    bool failed = false;        // getCollInfo failed: baton's choice stands
  };
  // Asks the plugin about one collective whose baton choice is *choice over *nch channels (at most
  // maxChannels), and applies its answer to both.
  Verdict revise(const TuningModel& m, int path, const AlgoProtoMask& mask, CollFunc func, int nRanks, int nNodes,
                 size_t bytes, bool regBuff, bool treesAvailable, int maxChannels, AlgoProtoChoice* choice, int* nch);

  const std::string& name() const { return name_; }
  int version() const { return version_; }

 private:
  TunerPlugin() = default;
  void* ctx_ = nullptr;
  std::string name_;
  int version_ = 0;
  bool warnedFailure_ = false, warnedAlgo_ = false;
};

}  // namespace baton

// baton-topo: what the library sees of a machine and what it would do on it (lessons 06 and 07).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "topo/graph.h"
#include "topo/topo.h"

namespace batontopo {

struct Options {
  std::string topoFile;      // --topo, else NCCL_TOPO_FILE, else hwloc discovery
  bool topoFromEnv = false;  // topoFile came from NCCL_TOPO_FILE (error messages say so)
  int nodes = 1;             // --nodes: identical hosts joined by their NICs
  int ranksPerNode = 0;      // --ranks: CPU ranks per host when the topology has no GPUs (0: 2)
  int channels = 0;          // --channels: 0 = 16 for GPUs, 1 for CPU ranks (the library's default here)
  std::string dotFile;       // --dot
  std::string treesDotFile;  // --dot-trees
  std::string dumpFile;      // --dump: NCCL's XML of host 0
  bool tuner = false;        // --tuner
  bool paths = true;         // --no-paths turns the rank-by-rank path matrix off
  std::string simulate;      // --simulate COLLECTIVE
  size_t minBytes = 8, maxBytes = size_t(256) << 20;
  int stepFactor = 2;
  std::string algo, proto;               // --algo / --proto for the simulation (default: every pair, best shown)
  bool allPairs = false;                 // --all: one row per (algo, proto) instead of the best
  bool splitTree = false;                // --split-tree: trees as NCCL runs them (reduce and broadcast concurrent)
  std::vector<std::string> fusedShapes;  // --shape M:N:K for --simulate ag_gemm / gemm_rs
  double gemmTflops = 600;               // --gemm-tflops: the GEMM throughput model (bf16, per GPU)
};

struct Machine {
  baton::TopoSystem sys;
  baton::CommGraph graph;
  std::string source;
  std::string notes;      // discovery notes
  bool cpuRanks = false;  // ranks sit on CPU nodes (no GPU in the topology)
  int nRanks = 0;
};

int parseOptions(int argc, char** argv, Options* opt);  // 0 ok, else exit status
int loadMachine(const Options& opt, Machine* m);        // 0 ok, else exit status (message printed)
void printTopology(const Machine& m);
void printPaths(const Machine& m);
void printGraph(const Machine& m);
void printTuner(const Machine& m);
int writeDot(const Machine& m, const std::string& path);
int writeTreesDot(const Machine& m, const std::string& path);
int simulateSweep(const Options& opt, const Machine& m);
// The fastest simulated (algorithm, protocol) for one collective of `bytes` (nccl-tests' size), in µs.
ncclResult_t simulateBestUs(const Machine& m, baton::CollFunc func, size_t bytes, bool splitTree, double* us);
// --simulate ag_gemm / gemm_rs: the fused operations' stages predicted from the collective's
// simulated time and a GEMM throughput model (simulate_fused.cc, lesson 11).
int simulateFused(const Options& opt, const Machine& m);

}  // namespace batontopo

// baton-topo: prints the discovered (or loaded) topology, the paths between ranks, the rings and
// trees per channel and the tuner's table; --dot draws it; --simulate predicts a collective's
// time on the topology with baton's own schedule (lessons 06 and 07).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>

#include "baton_topo.h"

namespace batontopo {

namespace {
bool parseSize(const std::string& s, size_t* out) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (end == s.c_str()) return false;
  std::string suf(end);
  int shift = suf.empty() || suf == "B" ? 0 : suf[0] == 'K' ? 10 : suf[0] == 'M' ? 20 : suf[0] == 'G' ? 30 : -1;
  if (shift < 0 || (suf.size() > 1 && suf.substr(1) != "B" && suf.substr(1) != "iB")) return false;
  if (v > (~0ull >> (shift + 1))) return false;  // would overflow (or leave no room to step)
  *out = size_t(v) << shift;
  return true;
}
}  // namespace

int parseOptions(int argc, char** argv, Options* opt) {
  CLI::App app{
      "baton-topo: the topology baton sees, its rings and trees, and a simulator for machines you do not have.\n"
      "Examples:\n"
      "  baton-topo                                   # this machine (hwloc), 2 CPU ranks\n"
      "  baton-topo --topo tests/topo/fixtures/dgx-h100.xml --dot dgx.dot\n"
      "  baton-topo --topo FILE --nodes 4 --simulate allreduce -b 8 -e 1G"};
  std::string minB = "8", maxB = "256M";
  app.add_option("--topo", opt->topoFile, "NCCL topology XML to load (default: NCCL_TOPO_FILE, else discovery)");
  app.add_option("--nodes", opt->nodes, "identical hosts, joined by their NICs")->check(CLI::Range(1, 1024));
  app.add_option("--ranks", opt->ranksPerNode, "CPU ranks per host when the topology has no GPU (default 2)")
      ->check(CLI::Range(1, 4096));
  app.add_option("--channels", opt->channels, "channels to search (default: 16 with GPUs, 1 for CPU ranks)")
      ->check(CLI::Range(1, 64));
  app.add_option("--dot", opt->dotFile, "write a Graphviz picture of the topology and the rings");
  app.add_option("--dot-trees", opt->treesDotFile, "write a Graphviz picture of the two trees (double binary tree)");
  app.add_option("--dump", opt->dumpFile, "write host 0's topology as NCCL XML (as NCCL_TOPO_DUMP_FILE)");
  app.add_flag("--tuner", opt->tuner, "print the tuner's predicted time per algorithm and protocol");
  bool noPaths = false;
  app.add_flag("--no-paths", noPaths, "do not print the rank-by-rank path matrix");
  app.add_option("--simulate", opt->simulate,
                 "simulate a collective: allreduce, allgather, reducescatter, broadcast, reduce; or a fused "
                 "operation's stages: ag_gemm, gemm_rs");
  app.add_option("--shape", opt->fusedShapes,
                 "M:N:K for --simulate ag_gemm|gemm_rs (repeatable; default: "
                 "the shapes of the published 8xH100 figures)");
  app.add_option("--gemm-tflops", opt->gemmTflops,
                 "GEMM throughput model for --simulate ag_gemm|gemm_rs "
                 "(TFLOP/s per rank, default 600: what cuBLAS reaches in the published H100 figures)")
      ->check(CLI::Range(0.001, 1e6));
  app.add_option("-b,--minbytes", minB, "smallest size (nccl-tests' size), e.g. 8, 64K");
  app.add_option("-e,--maxbytes", maxB, "largest size, e.g. 256M, 1G");
  app.add_option("-f,--stepfactor", opt->stepFactor, "multiply the size by this each step")->check(CLI::Range(2, 1024));
  app.add_option("--algo", opt->algo, "simulate only this algorithm (Ring, Tree)");
  app.add_option("--proto", opt->proto, "simulate only this protocol (LL, LL128, Simple)");
  app.add_flag("--all", opt->allPairs, "one row per algorithm and protocol instead of the fastest");
  app.add_flag("--split-tree", opt->splitTree,
               "simulate trees as NCCL runs them (reduce and broadcast in concurrent thread groups) instead of "
               "baton's alternating schedule");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? -1 : 2;
  }
  opt->paths = !noPaths;
  if (!parseSize(minB, &opt->minBytes) || !parseSize(maxB, &opt->maxBytes) || opt->minBytes == 0 ||
      opt->maxBytes < opt->minBytes) {
    std::fprintf(stderr, "baton-topo: bad size range -b %s -e %s (expected 1 <= min <= max, e.g. -b 8 -e 256M)\n",
                 minB.c_str(), maxB.c_str());
    return 2;
  }
  if (opt->topoFile.empty())
    if (const char* f = std::getenv("NCCL_TOPO_FILE"); f && *f) opt->topoFile = f, opt->topoFromEnv = true;
  return 0;
}

}  // namespace batontopo

int main(int argc, char** argv) {
  using namespace batontopo;
  Options opt;
  if (int rc = parseOptions(argc, argv, &opt)) return rc < 0 ? 0 : rc;
  Machine m;
  if (int rc = loadMachine(opt, &m)) return rc;
  if (opt.simulate == "ag_gemm" || opt.simulate == "gemm_rs") return simulateFused(opt, m);
  if (!opt.simulate.empty()) return simulateSweep(opt, m);
  printTopology(m);
  if (opt.paths) printPaths(m);
  printGraph(m);
  if (opt.tuner) printTuner(m);
  if (!opt.dotFile.empty())
    if (int rc = writeDot(m, opt.dotFile)) return rc;
  if (!opt.treesDotFile.empty()) return writeTreesDot(m, opt.treesDotFile);
  return 0;
}

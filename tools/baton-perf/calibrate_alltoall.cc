// alltoall --calibrate (lesson 12): up to which size Bruck beats direct across this machine's hosts.
//
// The sweep times direct and Bruck at every size (the --compare stages, in that order). The
// threshold is the largest size at which Bruck was faster and, counting every size up to it, won at
// least as often as it lost, so one noisy point neither starts nor ends the range; 0 if Bruck never
// won. It goes into the tuning file as `alltoall <nranks> bruck_bytes <bytes>`, which new
// communicators read: auto then sends with Bruck across hosts up to it (the entry of the nearest
// rank count serves other counts). On one host auto never takes Bruck (direct's transfers overlap
// there), so a calibration there prints its table and writes nothing.
#include <cstdio>
#include <string>

#include "baton/tuner.h"
#include "baton_perf.h"

namespace batonperf {

int writeAlltoAllCalibration(const Options& opt, const World& w, const std::vector<std::vector<Row>>& perStage,
                             ncclComm_t comm) {
  const int nodes = batonTunerNodes(comm);
  std::printf("# alltoall calibration: %d ranks on %d host%s, direct against Bruck per size\n", w.nranks, nodes,
              nodes == 1 ? "" : "s");
  std::printf("#        size    direct(us)     bruck(us)   faster  wins-losses\n");
  const std::vector<Row>& direct = perStage[0];
  const std::vector<Row>& bruck = perStage[1];
  size_t threshold = 0;
  int balance = 0;
  for (size_t i = 0; i < direct.size() && i < bruck.size(); ++i) {
    const bool bruckWins = bruck[i].oop.timeUs < direct[i].oop.timeUs;
    balance += bruckWins ? 1 : -1;
    if (bruckWins && balance >= 0) threshold = direct[i].bytes;
    std::printf("  %12zu  %12.2f  %12.2f   %-6s  %+d\n", direct[i].bytes, direct[i].oop.timeUs, bruck[i].oop.timeUs,
                bruckWins ? "bruck" : "direct", balance);
  }
  std::printf("# Bruck threshold for %d ranks: %zu bytes (the largest size Bruck won with wins >= losses up to it)\n",
              w.nranks, threshold);
  if (nodes < 2) {
    std::printf(
        "# one host: auto never takes Bruck here, so nothing is written; run it across hosts "
        "(tools/scripts/bench-alltoall.sh --calibrate)\n");
    return 0;
  }
  char comment[256];
  std::snprintf(comment, sizeof comment,
                "alltoall bruck_bytes written by baton-perf alltoall --calibrate: %d ranks on %d hosts, %zu..%zu B, "
                "%d iterations per size",
                w.nranks, nodes, opt.minBytes, opt.maxBytes, opt.iters);
  const char* path = batonTuningFilePath();
  if (std::string(path) == "none") {
    std::printf("# BATON_TUNING_FILE=none: nothing written\n");
    return 0;
  }
  if (batonTunerWriteFileAlltoAll(path, w.nranks, threshold, comment) != ncclSuccess) {
    std::fprintf(stderr, "baton-perf --calibrate: %s\n", ncclGetLastError(nullptr));
    return 1;
  }
  std::printf(
      "# wrote 'alltoall %d bruck_bytes %zu' to %s (new communicators load it; BATON_TUNING_FILE=none "
      "ignores it)\n",
      w.nranks, threshold, path);
  return 0;
}

}  // namespace batonperf

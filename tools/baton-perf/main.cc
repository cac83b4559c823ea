// baton-perf's main: ranks from the environment, the memcpy reference, communicators, threads.
//
// Ranks = processes x threads. Under baton-run each process has BATON_RANK / BATON_NRANKS and
// NCCL_COMM_ID, so ncclGetUniqueId returns the same id everywhere without any exchange; alone, one
// process is rank 0 of 1 and ncclGetUniqueId starts a root of its own. As in nccl-tests, the main
// thread creates all local communicators inside one group, then one thread per local rank runs the
// sweep. These "control" communicators also carry barriers, the combining of times and #wrong, and,
// for --compare, the broadcast of each stage's fresh unique id (the role MPI plays in nccl-tests).
#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "baton/launch.h"
#include "baton/tuner.h"
#include "baton_perf.h"

using namespace batonperf;

namespace {

// -x sets the config's CTA policy (validated by the library); -p: each thread creates its own
// communicator at the same time instead of one thread creating all of them in a group.
void initComms(std::vector<ncclComm_t>* comms, const ncclUniqueId& id, const World& w, const Options& opt) {
  auto init = [&](int t) {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    if (opt.ctaPolicy >= 0) config.CTAPolicy = opt.ctaPolicy;
    PERFCHECK(ncclCommInitRankConfig(&(*comms)[t], w.nranks, id, w.proc * w.nthreads + t, &config));
  };
  if (opt.parallelInit && w.nthreads > 1) {
    std::vector<std::thread> threads;
    for (int t = 0; t < w.nthreads; ++t) threads.emplace_back(init, t);
    for (std::thread& th : threads) th.join();
    return;
  }
  PERFCHECK(ncclGroupStart());
  for (int t = 0; t < w.nthreads; ++t) init(t);
  PERFCHECK(ncclGroupEnd());
}

// NCCL_DEBUG asks for INFO lines (INFO or TRACE, any case).
bool infoLogging() {
  const char* d = std::getenv("NCCL_DEBUG");
  return d && (strcasecmp(d, "INFO") == 0 || strcasecmp(d, "TRACE") == 0);
}

void destroyComms(std::vector<ncclComm_t>* comms) {
  for (ncclComm_t& c : *comms) {
    PERFCHECK(ncclCommDestroy(c));
    c = nullptr;
  }
}

std::vector<RankInfo> gatherRankInfo(const std::vector<ncclComm_t>& ctrl, const World& w) {
  std::vector<RankInfo> mine(w.nthreads);
  std::vector<std::vector<RankInfo>> all(w.nthreads, std::vector<RankInfo>(w.nranks));
  for (int t = 0; t < w.nthreads; ++t) {
    mine[t].pid = int32_t(getpid());
    mine[t].device = w.localRank * w.nthreads + t;
    gethostname(mine[t].host, sizeof mine[t].host - 1);
  }
  PERFCHECK(ncclGroupStart());
  for (int t = 0; t < w.nthreads; ++t)
    PERFCHECK(ncclAllGather(&mine[t], all[t].data(), sizeof(RankInfo), ncclUint8, ctrl[t], nullptr));
  PERFCHECK(ncclGroupEnd());
  return all[0];
}

// A fresh unique id made by rank 0 and broadcast over the control communicators.
ncclUniqueId stageId(const std::vector<ncclComm_t>& ctrl, const World& w) {
  std::vector<ncclUniqueId> ids(w.nthreads);
  std::memset(ids.data(), 0, ids.size() * sizeof(ncclUniqueId));
  if (w.proc == 0) PERFCHECK(ncclGetUniqueId(&ids[0]));
  PERFCHECK(ncclGroupStart());
  for (int t = 0; t < w.nthreads; ++t)
    PERFCHECK(ncclBroadcast(&ids[t], &ids[t], sizeof(ncclUniqueId), ncclUint8, 0, ctrl[t], nullptr));
  PERFCHECK(ncclGroupEnd());
  return ids[0];
}

// Runs the sweep on every local rank; returns rank-local thread 0's rows (the same on every rank).
std::vector<Row> runThreads(const Options& opt, const World& w, const std::vector<ncclComm_t>& comms,
                            const std::vector<ncclComm_t>& ctrl, Report* report) {
  std::vector<Worker> workers(w.nthreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < w.nthreads; ++t) {
    Worker& wk = workers[t];
    wk.thread = t;
    wk.rank = w.proc * w.nthreads + t;
    wk.comm = comms[t];
    wk.ctrl = ctrl[t];
    wk.report = wk.rank == 0 ? report : nullptr;
    threads.emplace_back([&opt, &w, &wk] { runSweep(opt, w, &wk); });
  }
  for (std::thread& th : threads) th.join();
  return workers[0].rows;
}

double wrongIn(const std::vector<Row>& rows) {
  double n = 0;
  for (const Row& r : rows) n += r.oop.wrong + r.ip.wrong;
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && isFusedOp(argv[1])) return runFusedBench(argc, argv);
  if (argc > 1 && std::string(argv[1]) == "moe") return runMoeBench(argc, argv);
  if (isWireRun(argc, argv)) return runWireBench(argc, argv);
  Options opt;
  if (int rc = parseOptions(argc, argv, &opt); rc >= 0) return rc;

  World w;
  batonLaunchInfo launch;  // baton-run, mpirun, PMI or srun (include/baton/launch.h)
  if (batonGetLaunchInfo(&launch) != ncclSuccess) {
    std::fprintf(stderr, "baton-perf: %s\n", ncclGetLastError(nullptr));
    return 2;
  }
  w.nprocs = launch.nranks, w.proc = launch.rank, w.localRank = launch.localRank;
  if (w.nprocs > 1 && !std::getenv("NCCL_COMM_ID")) {
    std::fprintf(stderr,
                 "baton-perf: %s started %d processes but NCCL_COMM_ID is not set; start it with baton-run, or set "
                 "NCCL_COMM_ID=<rank 0's host>:<free port> for every process (mpirun -x NCCL_COMM_ID=...)\n",
                 launch.launcher, w.nprocs);
    return 2;
  }
  // One process holds every rank: its sockets (bootstrap, and NET when P2P and SHM are disabled) need
  // nothing but loopback, so a sweep on one machine never addresses a network interface.
  if (w.nprocs == 1 && !std::getenv("NCCL_COMM_ID")) setenv("NCCL_SOCKET_IFNAME", "lo", 0);
  w.nthreads = opt.nthreads;
  w.nranks = w.nprocs * w.nthreads;
  if (collDesc(opt.coll).rooted && opt.root >= w.nranks) {
    std::fprintf(stderr, "baton-perf: -r/--root %d is not a rank (nranks %d)\nRun with --help for more information.\n",
                 opt.root, w.nranks);
    return 2;
  }
  const bool reporter = w.proc == 0;
  if (opt.timeoutSec > 0) setenv("BATON_WAIT_TIMEOUT", std::to_string(opt.timeoutSec).c_str(), 1);

  // Under an nccl-tests name the header has no memcpy line: skip the 64 MiB measurement.
  const double memcpyGBs = opt.testsMode && !opt.memcpyOnly ? 0.0 : measureMemcpy();
  if (opt.memcpyOnly) {
    if (reporter) printMemcpyLine(memcpyGBs);
    return 0;
  }

  ncclUniqueId id;
  PERFCHECK(ncclGetUniqueId(&id));
  std::vector<ncclComm_t> ctrl(w.nthreads);
  initComms(&ctrl, id, w, opt);
  const std::vector<RankInfo> infos = gatherRankInfo(ctrl, w);
  Report report(opt, w);
  JsonReport json;
  if (reporter && !opt.jsonPath.empty()) {
    int version = 0;
    PERFCHECK(ncclGetVersion(&version));
    if (json.open(opt.jsonPath, opt, version)) report.setJson(&json);
  }
  if (reporter) report.header(memcpyGBs, infos);
  if (reporter && infoLogging())
    std::printf(
        "# NCCL_DEBUG=%s: besides the measured operations, INFO lines show baton-perf's own small collectives on its "
        "control communicator (the rank table's AllGather, a 1-float AllReduce as a barrier around each timing, "
        "AllReduces of 2 doubles that agree on times and wrong elements)\n",
        std::getenv("NCCL_DEBUG"));
  if (reporter && !opt.jsonPath.empty()) json.config(opt, w, infos);

  double wrong = 0;
  if (opt.explain) {
    if (reporter) printExplain(opt, ctrl[0], w.nranks);
    destroyComms(&ctrl);
    return 0;
  }
  int calibrateRc = 0;
  const bool hyperCubeSkips = opt.coll == Coll::HyperCube && (w.nranks & (w.nranks - 1)) != 0;
  bool belowMinBw = false;
  if (!opt.compare()) {
    if (reporter) report.tableHeader();
    if (hyperCubeSkips) {  // recursive doubling needs a power of two, as in nccl-tests
      if (reporter) report.skipped("nRanks " + std::to_string(w.nranks) + " is not a power of 2, skipping");
    } else {
      wrong = wrongIn(runThreads(opt, w, ctrl, ctrl, reporter ? &report : nullptr));
    }
    if (reporter) report.footer(wrong);
    const char* minBw = std::getenv("NCCL_TESTS_MIN_BW");  // nccl-tests fails a run below 0.9x of it
    belowMinBw = reporter && minBw && report.avgBusBw() < std::atof(minBw) * 0.9;
    if (reporter) json.close("");
  } else {
    unsetenv("NCCL_COMM_ID");  // from here on, ncclGetUniqueId makes fresh ids
    std::vector<std::vector<Row>> perStage;
    for (const Stage& stage : opt.stages) {
      // The environment changes while no library thread of ours may read it (setenv racing a
      // getenv can crash): before stageId starts this stage's bootstrap root.
      applyStageEnv(opt.stages, stage);
      const ncclUniqueId sid = stageId(ctrl, w);
      std::vector<ncclComm_t> comms(w.nthreads);
      initComms(&comms, sid, w, opt);
      Options so = opt;
      if (stage.localRegister >= 0) so.localRegister = stage.localRegister;
      perStage.push_back(runThreads(so, w, comms, ctrl, nullptr));
      destroyComms(&comms);
      wrong += wrongIn(perStage.back());
    }
    if (reporter) report.compareTable(perStage);
    if (opt.calibrate && reporter && wrong == 0 && opt.coll == Coll::AlltoAll)
      calibrateRc = writeAlltoAllCalibration(opt, w, perStage, ctrl[0]);
    else if (opt.calibrate && reporter && wrong == 0)  // the table the measured communicators used
      calibrateRc = writeCalibration(opt, w, perStage, memcpyGBs, batonTunerPathName(ctrl[0]), ctrl[0]);
  }
  destroyComms(&ctrl);
  return wrong > 0 || belowMinBw ? 1 : calibrateRc;
}

// Creating a communicator object: validate ncclConfig_t as NCCL does, read the environment knobs
// (docs/env.md), register it as live. The collective part of init is commInitJob (init.cc).
#include <strings.h>
#include <algorithm>
#include <cstring>
#include <string>

#include "alltoall.h"
#include "comm.h"
#include "comm_registry.h"
#include "cuda_backend.h"
#include "misc/debug.h"
#include "misc/param.h"
#include "proxy.h"
#include "symmetric.h"

namespace baton {
namespace {

int intOrUndef(int v, int def) { return v == NCCL_CONFIG_UNDEF_INT ? def : v; }

// One FIFO step of a buffer of `buffBytes`: an NCCL_STEPS-th of it, at least `minimum`, in whole `grain`s.
size_t stepOf(int64_t buffBytes, int64_t minimum, int64_t grain) {
  return (size_t)(std::max<int64_t>(buffBytes / kSteps, minimum) / grain * grain);
}

}  // namespace

ncclResult_t readTunables(const ncclConfig_t& cfg, int rank, Tunables* t) {
  t->stepBytes = stepOf(envInt("NCCL_BUFFSIZE", 4 << 20), 4096, 4096);
  // LL steps are whole 16-byte lines, LL128 steps whole 128-byte lines (algorithms/protocols.h).
  t->llStepBytes = stepOf(envInt("NCCL_LL_BUFFSIZE", 512 << 10), 1024, 1024);
  t->ll128StepBytes = stepOf(envInt("NCCL_LL128_BUFFSIZE", 4915200), 1024, 128);
  t->sendrecvStepBytes = (size_t)(std::max<int64_t>(envInt("NCCL_P2P_CHUNKSIZE", 128 << 10), 4096) / 4096 * 4096);
  t->fifoDepth = (int)std::clamp<int64_t>(envInt("BATON_FIFO_DEPTH", kSteps), 1, kSteps);
  t->chunkSteps = (int)std::clamp<int64_t>(envInt("BATON_CHUNK_STEPS", 4), 1, kSteps);
  // auto: the tuner, with the one-shot AllReduce for small messages; NCCL_ALGO makes it the ring's.
  const std::string algo = envStr("BATON_ALLREDUCE_ALGO", envSet("NCCL_ALGO") ? "ring" : "auto");
  t->allreduceAlgo = strcasecmp(algo.c_str(), "naive") == 0     ? kAlgoNaive
                     : strcasecmp(algo.c_str(), "oneshot") == 0 ? kAlgoOneShot
                     : strcasecmp(algo.c_str(), "ring") == 0    ? kAlgoRing
                                                                : kAlgoUndef;
  t->oneShotStepBytes = (size_t)std::max<int64_t>(envInt("BATON_ONESHOT_STEP", 16 << 10), 1024) / 1024 * 1024;
  t->oneShotBytes = (size_t)std::max<int64_t>(envInt("BATON_ONESHOT_BYTES", 64), 0);
  t->proxyAssistBytes = (size_t)std::max<int64_t>(envInt("BATON_PROXY_ASSIST", 65536), 0);
  // Unset: 2 ranks only, whose one-shot runs over the ring's connectors (enqueue.cc oneShotProto).
  const int64_t netBytes = envInt("BATON_ONESHOT_NET_BYTES", -1);
  t->oneShotNetBytes = netBytes < 0 ? kOneShotNetUnset : (size_t)netBytes;
  t->oneShotSimpleBytes = (size_t)std::max<int64_t>(envInt("BATON_ONESHOT_SIMPLE_BYTES", 2048), 0);
  t->minChannelBytes = (size_t)envInt("BATON_MIN_CHANNEL_BYTES", 64 << 10);
  t->direct = envInt("BATON_DIRECT", 1) != 0;
  t->ranksPerNode = (int)std::max<int64_t>(envInt("BATON_RANKS_PER_NODE", 0), 0);
  t->atomicCollectives = envInt("BATON_ATOMIC_COLLECTIVES", 0) != 0;
  t->failTimeoutNs = (uint64_t)(std::max(envSeconds("BATON_TIMEOUT", 5.0), 0.0) * 1e9);
  BATON_CHECK(parseAlgoProtoEnv(envStr("NCCL_ALGO").c_str(), envStr("NCCL_PROTO").c_str(), &t->mask));
  t->symmetric = envInt("BATON_SYMMETRIC", envSet("NCCL_ALGO") ? 0 : 1) != 0;
  t->symOneShotBytes = (size_t)std::clamp<int64_t>(envInt("BATON_SYM_ONESHOT_BYTES", 64 << 10), 0, kSymScratchBytes);
  t->symTwoShot = (int)std::clamp<int64_t>(envInt("BATON_SYM_TWOSHOT", -1), -1, 1);
  t->singleCopy = (int)std::clamp<int64_t>(envInt("BATON_SINGLE_COPY", -1), -1, 1);
  t->singleCopyBytes = (size_t)std::max<int64_t>(envInt("BATON_SINGLE_COPY_BYTES", 64 << 10), 0);
  const std::string a2a = envStr("BATON_ALLTOALL_ALGO", "auto");
  t->alltoallAlgo = -1;
  for (int a = 0; a < kAlltoAllNumAlgos; ++a)
    if (strcasecmp(a2a.c_str(), alltoallAlgoName(a)) == 0) t->alltoallAlgo = a;
  if (t->alltoallAlgo < 0)
    return batonError(ncclInvalidArgument,
                      "BATON_ALLTOALL_ALGO=%s is not an AlltoAll algorithm (auto, direct, pairwise, bruck or window)",
                      a2a.c_str());
  t->alltoallBruckBytes = envSet("BATON_ALLTOALL_BRUCK_BYTES")
                              ? (size_t)std::max<int64_t>(envInt("BATON_ALLTOALL_BRUCK_BYTES", 0), 0)
                              : kAlltoAllBruckUnset;
  const std::string checkMode = envStr("BATON_CHECK_MODE", "default");
  if (strcasecmp(checkMode.c_str(), "default") != 0 && strcasecmp(checkMode.c_str(), "debug") != 0)
    return batonError(ncclInvalidArgument, "BATON_CHECK_MODE=%s is not a check mode (default or debug)",
                      checkMode.c_str());
  t->checkArgs = strcasecmp(checkMode.c_str(), "debug") == 0;
  // Every rank uses rank 0's model (shared at init), so only rank 0 reads the tuning file.
  t->model = rank == 0 ? initialTuningModel() : defaultTuningModel();

  t->waitTimeoutNs = (uint64_t)(std::max(envSeconds("BATON_WAIT_TIMEOUT", 300), 0.0) * 1e9);
  t->waitSpin = (int)envInt("BATON_WAIT_SPIN", -1);
  t->jitter = (int)envInt("BATON_JITTER", 0);
  t->netZeroCopy = envInt("BATON_NET_ZERO_COPY", 1) != 0;
  t->p2pDisable = envInt("NCCL_P2P_DISABLE", 0) != 0;
  t->shmDisable = envInt("NCCL_SHM_DISABLE", 0) != 0;
  t->streamStores = envInt("BATON_STREAM_STORES", 1) != 0;
  const int minCh = (int)envInt("NCCL_MIN_NCHANNELS", envInt("NCCL_MIN_CTAS", intOrUndef(cfg.minCTAs, 1)));
  const int maxCh = (int)envInt("NCCL_MAX_NCHANNELS", envInt("NCCL_MAX_CTAS", intOrUndef(cfg.maxCTAs, kMaxChannels)));
  t->minChannels = std::clamp(minCh, 1, kMaxChannels);
  t->maxChannels = std::clamp(maxCh, t->minChannels, kMaxChannels);
  return ncclSuccess;
}

ncclResult_t commAlloc(ncclComm** out, int nranks, int rank, const ncclConfig_t* config, const char* fn) {
  showVersion(backendsInUse);
  if (!out) return batonError(ncclInvalidArgument, "%s: comm (the output pointer) is NULL", fn);
  if (nranks < 1) return batonError(ncclInvalidArgument, "%s: nranks %d must be at least 1", fn, nranks);
  if (rank < 0 || rank >= nranks)
    return batonError(ncclInvalidArgument, "%s: rank %d is outside [0, nranks=%d)", fn, rank, nranks);
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  if (config) {
    if (config->magic != 0xcafebeef)
      return batonError(ncclInvalidArgument,
                        "%s: config->magic 0x%x: config was not initialized with NCCL_CONFIG_INITIALIZER", fn,
                        config->magic);
    if (config->size < offsetof(ncclConfig_t, blocking) + sizeof(int) || config->size > (1 << 16))
      return batonError(ncclInvalidArgument, "%s: config->size %zu is not a plausible ncclConfig_t size", fn,
                        config->size);
    memcpy(&cfg, config, std::min(config->size, sizeof cfg));
    cfg.size = sizeof cfg;
  }
  auto check01 = [&](int v, const char* field) -> ncclResult_t {
    if (v != NCCL_CONFIG_UNDEF_INT && v != 0 && v != 1)
      return batonError(ncclInvalidArgument, "%s: config->%s is %d; expected 0 or 1", fn, field, v);
    return ncclSuccess;
  };
  BATON_CHECK(check01(cfg.blocking, "blocking"));
  BATON_CHECK(check01(cfg.splitShare, "splitShare"));
  BATON_CHECK(check01(cfg.collnetEnable, "collnetEnable"));
  BATON_CHECK(check01(cfg.shrinkShare, "shrinkShare"));
  BATON_CHECK(check01(cfg.nvlinkCentricSched, "nvlinkCentricSched"));
  if (cfg.minCTAs != NCCL_CONFIG_UNDEF_INT && cfg.minCTAs <= 0)
    return batonError(ncclInvalidArgument, "%s: config->minCTAs is %d; must be > 0", fn, cfg.minCTAs);
  if (cfg.maxCTAs != NCCL_CONFIG_UNDEF_INT && cfg.maxCTAs <= 0)
    return batonError(ncclInvalidArgument, "%s: config->maxCTAs is %d; must be > 0", fn, cfg.maxCTAs);
  if (cfg.minCTAs != NCCL_CONFIG_UNDEF_INT && cfg.maxCTAs != NCCL_CONFIG_UNDEF_INT && cfg.minCTAs > cfg.maxCTAs)
    return batonError(ncclInvalidArgument, "%s: config->minCTAs %d > config->maxCTAs %d", fn, cfg.minCTAs, cfg.maxCTAs);
  if (cfg.CTAPolicy != NCCL_CONFIG_UNDEF_INT && (cfg.CTAPolicy < 0 || cfg.CTAPolicy > 2))
    return batonError(ncclInvalidArgument, "%s: config->CTAPolicy is %d; expected 0..2", fn, cfg.CTAPolicy);
  if (cfg.cgaClusterSize != NCCL_CONFIG_UNDEF_INT && cfg.cgaClusterSize < 0)
    return batonError(ncclInvalidArgument, "%s: config->cgaClusterSize is %d; must be >= 0", fn, cfg.cgaClusterSize);

  ncclComm* comm = new ncclComm();
  comm->proxy = std::make_unique<Proxy>(comm);
  comm->rank = rank;
  comm->nRanks = nranks;
  comm->config = cfg;
  comm->blocking = envInt("NCCL_COMM_BLOCKING", intOrUndef(cfg.blocking, 1)) != 0;
  if (readTunables(cfg, rank, &comm->tun) != ncclSuccess) {
    const std::string why = lastError();
    delete comm;
    return batonError(ncclInvalidArgument, "%s: %s", fn, why.c_str());
  }
  comm->nChannels = comm->tun.minChannels;  // the default depends on cores per local rank: commInitJob

  if (!registerComm(comm)) {
    delete comm;
    return batonError(ncclSystemError, "%s: too many live communicators in this process; destroy some", fn);
  }
  *out = comm;
  return ncclSuccess;
}

}  // namespace baton

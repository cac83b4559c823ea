// include/baton/launch.h: rank, size and rendezvous from the environment of the launcher that
// started this process (baton-run, OpenMPI, PMI, Slurm), and a communicator made from them.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "baton/launch.h"
#include "misc/debug.h"
#include "misc/param.h"

using namespace baton;

namespace {

// One launcher's variables; the first launcher whose marker variable is set wins. Slurm's marker
// is a job-step variable: a batch script also has SLURM_PROCID=0 and SLURM_NTASKS, but a program
// run directly from it is one process, not one task of an srun step.
struct LauncherVars {
  const char* name;
  const char* marker;
  const char* rank;
  const char* size;
  const char* local;  // may be null
};
constexpr LauncherVars kLaunchers[] = {
    {"baton-run", "BATON_RANK", "BATON_RANK", "BATON_NRANKS", "BATON_LOCAL_RANK"},
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"pmi", "PMI_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
    {"pmi", "PMIX_RANK", "PMIX_RANK", "PMI_SIZE", nullptr},
    {"slurm", "SLURM_STEP_NUM_TASKS", "SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID"},
};

ncclResult_t readInt(const char* var, bool required, int dflt, int* out) {
  const std::string value = envStr(var);
  const char* s = value.c_str();
  if (value.empty()) {
    if (required) return batonError(ncclInvalidArgument, "batonGetLaunchInfo: %s is not set", var);
    *out = dflt;
    return ncclSuccess;
  }
  errno = 0;
  char* end = nullptr;
  const long v = strtol(s, &end, 10);
  if (errno || *end || v < 0 || v > (1 << 30))
    return batonError(ncclInvalidArgument, "batonGetLaunchInfo: %s=\"%s\" is not a non-negative integer", var, s);
  *out = (int)v;
  return ncclSuccess;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) ncclResult_t batonGetLaunchInfo(batonLaunchInfo* info) {
  if (!info) return batonError(ncclInvalidArgument, "batonGetLaunchInfo: info is NULL");
  *info = batonLaunchInfo{0, 1, 0, "none"};
  for (const LauncherVars& l : kLaunchers) {
    if (!envSet(l.marker)) continue;
    BATON_CHECK(readInt(l.rank, true, 0, &info->rank));
    BATON_CHECK(readInt(l.size, true, 1, &info->nranks));
    if (l.local) BATON_CHECK(readInt(l.local, false, 0, &info->localRank));
    if (info->nranks < 1)
      return batonError(ncclInvalidArgument, "batonGetLaunchInfo: %s=%d (expected at least 1)", l.size, info->nranks);
    if (info->rank >= info->nranks)
      return batonError(ncclInvalidArgument, "batonGetLaunchInfo: %s=%d is not below %s=%d", l.rank, info->rank, l.size,
                        info->nranks);
    snprintf(info->launcher, sizeof info->launcher, "%s", l.name);
    return ncclSuccess;
  }
  return ncclSuccess;
}

extern "C" __attribute__((visibility("default"))) ncclResult_t batonCommInitFromEnv(ncclComm_t* comm,
                                                                                    ncclConfig_t* config) {
  if (!comm) return batonError(ncclInvalidArgument, "batonCommInitFromEnv: comm is NULL");
  batonLaunchInfo li;
  BATON_CHECK(batonGetLaunchInfo(&li));
  if (li.nranks > 1 && !envSet("NCCL_COMM_ID"))
    return batonError(ncclInvalidArgument,
                      "batonCommInitFromEnv: %s started %d processes but NCCL_COMM_ID is not set; set it to "
                      "<rank 0's host>:<free port> for every process (mpirun -x NCCL_COMM_ID=..., srun "
                      "--export=ALL,NCCL_COMM_ID=...) or start the job with baton-run",
                      li.launcher, li.nranks);
  ncclUniqueId uid;
  BATON_CHECK(ncclGetUniqueId(&uid));
  return config ? ncclCommInitRankConfig(comm, li.nranks, uid, li.rank, config)
                : ncclCommInitRank(comm, li.nranks, uid, li.rank);
}

/* baton's launcher helpers, a public extra (not part of NCCL's API): a process started by a job
 * launcher finds its rank, the job size and the rendezvous in its environment and makes its
 * communicator in one call. Launchers read, first match wins:
 *   baton-run   BATON_RANK, BATON_NRANKS, BATON_LOCAL_RANK
 *   OpenMPI     OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK
 *   PMI/PMIx    PMI_RANK, PMI_SIZE (MPICH, Intel MPI, Hydra); PMIX_RANK with PMI_SIZE
 *   Slurm       SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_LOCALID (inside an srun step only: a batch
 *               script's own SLURM_PROCID/SLURM_NTASKS describe the allocation, not this process)
 * The rendezvous is NCCL_COMM_ID=host:port (baton-run sets it; with mpirun pass
 * `-x NCCL_COMM_ID=<rank 0's host>:<port>`, with srun `--export=ALL,NCCL_COMM_ID=...`): rank 0
 * starts the bootstrap root there and every rank's ncclGetUniqueId returns the same id. */
#ifndef BATON_LAUNCH_H
#define BATON_LAUNCH_H

#include <stddef.h>

#include "nccl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  int rank;          /* this process's rank in the job */
  int nranks;        /* processes in the job */
  int localRank;     /* rank among the job's processes on this host (0 when the launcher does not say) */
  char launcher[16]; /* "baton-run", "openmpi", "pmi", "slurm", or "none" (a single process) */
} batonLaunchInfo;

/* Reads the environment. Without any launcher variables: a single process (rank 0 of 1,
 * launcher "none"). Malformed or inconsistent values (a rank outside [0, nranks), a size below 1,
 * text that is not a number) are ncclInvalidArgument naming the variable and its value. */
ncclResult_t batonGetLaunchInfo(batonLaunchInfo* info);

/* ncclCommInitRankConfig for this process from batonGetLaunchInfo and NCCL_COMM_ID (config may be
 * NULL). A job of more than one process without NCCL_COMM_ID is ncclInvalidArgument, with a
 * message that says what to set. */
ncclResult_t batonCommInitFromEnv(ncclComm_t* comm, ncclConfig_t* config);

#ifdef __cplusplus
}
#endif

#endif /* BATON_LAUNCH_H */

/* baton's tuner, as a public extra (not part of NCCL's API): what the cost model predicts for a
 * communicator, and the tuning file that `baton-perf --calibrate` writes.
 * Lesson: docs/lessons/05-channels-and-tuning.md. */
#ifndef BATON_TUNER_H
#define BATON_TUNER_H

#include <stddef.h>

#include "nccl.h"

#ifdef __cplusplus
extern "C" {
#endif

#define BATON_NUM_PROTOCOLS 3  /* 0 LL, 1 LL128, 2 Simple: NCCL's protocol indices */
#define BATON_TUNER_BUCKETS 23 /* correction buckets: log2(bytes / 64), 64 B .. 256 MiB */
#define BATON_ALGO_TREE     0  /* NCCL's algorithm indices (NCCL_ALGO_TREE, NCCL_ALGO_RING) */
#define BATON_ALGO_RING     1

/* Predicted microseconds of one `collective` ("allreduce", "allgather", "reducescatter",
 * "broadcast", "reduce") of `bytes` (nccl-tests' size) on `comm` with the Ring algorithm, per
 * protocol (-1 where the protocol is disabled by NCCL_PROTO or unusable), and the protocol of the
 * tuner's overall choice, which may be a Tree (batonTunerChoose says which algorithm). */
ncclResult_t batonTunerPredict(ncclComm_t comm, const char* collective, size_t bytes,
                               double predictedUs[BATON_NUM_PROTOCOLS], int* chosenProtocol);
/* The same for one algorithm (BATON_ALGO_RING or BATON_ALGO_TREE): -1 where the pair is disabled or
 * unusable (Tree is only for allreduce). */
ncclResult_t batonTunerPredictAlgo(ncclComm_t comm, const char* collective, size_t bytes, int algorithm,
                                   double predictedUs[BATON_NUM_PROTOCOLS]);
/* The (algorithm, protocol) the tuner picks, and its predicted time. */
ncclResult_t batonTunerChoose(ncclComm_t comm, const char* collective, size_t bytes, int* algorithm, int* protocol,
                              double* predictedUs);
/* NCCL_TUNER_PLUGIN's say on the same collective (docs/lessons/16-plugins.md): *algorithm and
 * *protocol as the plugin leaves baton's choice, *channels its channel count (0: baton's), *name
 * "<plugin name> (v<N>)" or NULL when no tuner plugin is loaded for comm (then the first three are
 * baton's own choice and 0). name may be NULL. */
ncclResult_t batonTunerChoosePlugin(ncclComm_t comm, const char* collective, size_t bytes, int* algorithm,
                                    int* protocol, int* channels, const char** name);
/* The AlltoAll algorithm ("direct", "pairwise" or "bruck") ncclAlltoAll runs on comm for
 * bytesPerPeer bytes to each peer with buffers outside windows, and in *reason (may be NULL; static
 * storage) the rule that decided: BATON_ALLTOALL_ALGO, else Bruck across hosts with more than 2
 * ranks while the whole buffer is at most batonTunerAlltoAllBruckBytes, else direct. (A receive
 * buffer in a symmetric window of a one-host communicator takes "window".) */
ncclResult_t batonTunerChooseAlltoAll(ncclComm_t comm, size_t bytesPerPeer, const char** algorithm,
                                      const char** reason);
/* The Bruck threshold (bytes of the whole buffer) and where it came from: "BATON_ALLTOALL_BRUCK_BYTES",
 * the tuning file's path (what `baton-perf alltoall --calibrate` measured at the nearest rank
 * count), or "built-in" (64 KiB). */
size_t batonTunerAlltoAllBruckBytes(ncclComm_t comm);
const char* batonTunerAlltoAllBruckSource(ncclComm_t comm);
/* Records in a tuning file, keeping everything else it holds, that across hosts with nRanks ranks
 * Bruck beat direct up to a whole buffer of bruckBytes (0: never). `comment` may be NULL. */
ncclResult_t batonTunerWriteFileAlltoAll(const char* path, int nRanks, size_t bruckBytes, const char* comment);
/* The hosts ("nodes") the communicator spans as the tuner sees them (BATON_RANKS_PER_NODE makes
 * groups of thread ranks nodes); -1 for a bad communicator. */
int batonTunerNodes(ncclComm_t comm);
/* Steps the model charges its per-step cost for: a ring's 2(n-1) for allreduce, a tree's 2 * depth. */
int batonTunerSteps(ncclComm_t comm, const char* collective, int algorithm);
const char* batonAlgorithmName(int algorithm);
/* "built-in" or the path of the tuning file the communicator's model came from. */
const char* batonTunerModelSource(ncclComm_t comm);
/* The table the communicator uses for host buffers: "direct" (every rank a thread of this process,
 * direct paths on), "shm" (ranks reach each other through FIFO copies) or "oversub" (the same, with
 * more ranks on the host than cores). Collectives on device buffers use the "gpu" table. */
const char* batonTunerPathName(ncclComm_t comm);
const char* batonProtocolName(int protocol);
/* Where the library looks for the tuning file: BATON_TUNING_FILE, else ~/.cache/baton/tuning.txt. */
const char* batonTuningFilePath(void);
/* Writes the Ring algorithm's entries for one table (`pathKind`: "shm", "direct", "oversub" or "gpu") into a tuning
 * file, keeping the other table's entries if the file exists: per protocol, a fixed cost, a cost
 * per ring step, the bus bandwidth, and (corr, may be NULL: all 1) a measured/model factor per size
 * bucket. `comment` (may be NULL) is written as comment lines. */
ncclResult_t batonTunerWriteFile(const char* path, const char* pathKind, const double baseUs[BATON_NUM_PROTOCOLS],
                                 const double hopUs[BATON_NUM_PROTOCOLS], const double busBwGBs[BATON_NUM_PROTOCOLS],
                                 const double corr[BATON_NUM_PROTOCOLS][BATON_TUNER_BUCKETS], const char* comment);
/* The same for one algorithm's entries (batonTunerWriteFile writes BATON_ALGO_RING's). */
ncclResult_t batonTunerWriteFileAlgo(const char* path, const char* pathKind, int algorithm,
                                     const double baseUs[BATON_NUM_PROTOCOLS], const double hopUs[BATON_NUM_PROTOCOLS],
                                     const double busBwGBs[BATON_NUM_PROTOCOLS],
                                     const double corr[BATON_NUM_PROTOCOLS][BATON_TUNER_BUCKETS], const char* comment);
/* The correction bucket of a size (what the corr rows of the tuning file are indexed by). */
int batonTunerBucket(size_t bytes);
/* Fits time = latency + bytes / bandwidth to `n` measured points (bytes[i], us[i] microseconds;
 * points with us <= 0 are skipped) by least squares on the relative error, so the small sizes count
 * as much as the large ones, with both terms kept non-negative: *latencyUs and *algBwGBs (GB/s),
 * what a calibration turns into a tuning file's entries. Fewer than 2 usable points:
 * ncclInvalidArgument. */
ncclResult_t batonTunerFitLine(const size_t* bytes, const double* us, int n, double* latencyUs, double* algBwGBs);

#ifdef __cplusplus
}
#endif

#endif /* BATON_TUNER_H */

/* NCCL's tuner plugin interface (NCCL 2.28.9: versions 2 to 5), for tuner plugins built against
 * baton. A plugin is a shared library exporting one of the symbols below; NCCL_TUNER_PLUGIN names
 * it (docs/plugins.md). The layouts are NCCL's, so one plugin binary serves NVIDIA's NCCL and baton.
 * Public sources: NCCL's src/include/plugin/tuner/tuner_v*.h and plugins/tuner/README.md. */
#ifndef BATON_PLUGIN_TUNER_H
#define BATON_PLUGIN_TUNER_H

#include <stddef.h>
#include <stdint.h>

#include "baton/plugin_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The cost table's rows and columns: NCCL's algorithm and protocol numbers. baton runs Tree (for
 * AllReduce) and Ring with each protocol; a plugin's choice of another algorithm is not taken. */
#define NCCL_ALGO_UNDEF          -1
#define NCCL_ALGO_TREE           0
#define NCCL_ALGO_RING           1
#define NCCL_ALGO_COLLNET_DIRECT 2
#define NCCL_ALGO_COLLNET_CHAIN  3
#define NCCL_ALGO_NVLS           4
#define NCCL_ALGO_NVLS_TREE      5
#define NCCL_ALGO_PAT            6
#define NCCL_NUM_ALGORITHMS      7
#define NCCL_PROTO_UNDEF         -1
#define NCCL_PROTO_LL            0
#define NCCL_PROTO_LL128         1
#define NCCL_PROTO_SIMPLE        2
#define NCCL_NUM_PROTOCOLS       3
/* A table entry the core will not consider (disabled by NCCL_ALGO / NCCL_PROTO, or not built). A
 * plugin forbids a pair by writing this, and forces one by writing 0. */
#define NCCL_ALGO_PROTO_IGNORE -1.0

#define NCCL_HW_NVLINK           0
#define NCCL_HW_PCI              1
#define NCCL_HW_NET              2
#define NCCL_NUM_HW_LINKS        3
#define NCCL_NUM_COMPCAPS        4 /* Volta, Ampere, Hopper, Blackwell */
#define NCCL_NUM_TUNING_SCALES   3 /* 1, 2, 4 nodes */
#define NCCL_TUNER_PLUGIN_SYMBOL "ncclTunerPlugin_v5"

typedef struct {
  int nNvlDomains;
  int minRanksPerNvlDomain;
  int maxRanksPerNvlDomain;
} ncclNvlDomainInfo_v5_t;

/* The core's model constants, which a v5 plugin may read and change in init (in microseconds and
 * GB/s). baton fills the latencies of Tree and Ring from its own model and reads them back. */
typedef struct {
  double baseLatencies[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
  double hwLatencies[NCCL_NUM_HW_LINKS][NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
  double llMaxBws[NCCL_NUM_COMPCAPS][NCCL_NUM_TUNING_SCALES];
  double perChMaxRingLL128Bws[NCCL_NUM_COMPCAPS][NCCL_NUM_TUNING_SCALES];
  double perChMaxTreeLL128Bws[NCCL_NUM_COMPCAPS][NCCL_NUM_TUNING_SCALES];
  double perChMaxTreeBws[NCCL_NUM_COMPCAPS][NCCL_NUM_TUNING_SCALES];
  double perChMaxNVLSTreeBws[NCCL_NUM_COMPCAPS][NCCL_NUM_TUNING_SCALES];
} ncclTunerConstants_v5_t;

/* getCollInfo's collCostTable is a float[numAlgo][numProto] passed as float**: entry (a, p) is
 * ((float*)collCostTable)[a * numProto + p], the predicted microseconds, or NCCL_ALGO_PROTO_IGNORE.
 * *nChannels: 0 keeps the core's channel count. A failing getCollInfo leaves the core's choice. */
typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                       ncclNvlDomainInfo_v5_t* nvlDomainInfo, ncclTunerConstants_v5_t* constants);
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps, float** collCostTable,
                              int numAlgo, int numProto, int regBuff, int* nChannels);
  ncclResult_t (*finalize)(void* context);
} ncclTuner_v5_t;

typedef struct { /* v4: no commId, constants or NVL domains; "destroy" for finalize */
  const char* name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void** context);
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps, float** collCostTable,
                              int numAlgo, int numProto, int regBuff, int* nChannels);
  ncclResult_t (*destroy)(void* context);
} ncclTuner_v4_t;

typedef struct { /* v3: v4 without regBuff */
  const char* name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void** context);
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps, float** collCostTable,
                              int numAlgo, int numProto, int* nChannels);
  ncclResult_t (*destroy)(void* context);
} ncclTuner_v3_t;

typedef struct { /* v2: no cost table; the plugin names the algorithm and protocol (-1: core's) */
  const char* name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void** context);
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int collNetSupport, int nvlsSupport,
                              int numPipeOps, int* algorithm, int* protocol, int* nChannels);
  ncclResult_t (*destroy)(void* context);
} ncclTuner_v2_t;

#ifdef __cplusplus
}
#endif

#endif /* BATON_PLUGIN_TUNER_H */

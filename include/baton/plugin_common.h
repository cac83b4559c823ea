/* What every NCCL plugin interface shares (NCCL 2.28.9's nccl_common.h): the log function the core
 * hands a plugin at init, its levels and subsystem bits, and the collective numbers. The values
 * are NCCL's, so a plugin built against NCCL's headers loads into baton unchanged.
 * Public source: NCCL's src/include/nccl_common.h. */
#ifndef BATON_PLUGIN_COMMON_H
#define BATON_PLUGIN_COMMON_H

#include "nccl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  NCCL_LOG_NONE = 0,
  NCCL_LOG_VERSION = 1,
  NCCL_LOG_WARN = 2,
  NCCL_LOG_INFO = 3,
  NCCL_LOG_ABORT = 4,
  NCCL_LOG_TRACE = 5
} ncclDebugLogLevel;

typedef enum {
  NCCL_INIT = 0x1,
  NCCL_COLL = 0x2,
  NCCL_P2P = 0x4,
  NCCL_SHM = 0x8,
  NCCL_NET = 0x10,
  NCCL_GRAPH = 0x20,
  NCCL_TUNING = 0x40,
  NCCL_ENV = 0x80,
  NCCL_ALLOC = 0x100,
  NCCL_CALL = 0x200,
  NCCL_PROXY = 0x400,
  NCCL_NVLS = 0x800,
  NCCL_BOOTSTRAP = 0x1000,
  NCCL_REG = 0x2000,
  NCCL_PROFILE = 0x4000,
  NCCL_RAS = 0x8000,
  NCCL_ALL = ~0
} ncclDebugLogSubSys;

/* The core's logger: printf-style, honouring NCCL_DEBUG and NCCL_DEBUG_SUBSYS. */
typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                                  const char* fmt, ...);

#define NCCL_NUM_FUNCTIONS 5 /* the collectives a tuner is asked about */
typedef enum {
  ncclFuncBroadcast = 0,
  ncclFuncReduce = 1,
  ncclFuncAllGather = 2,
  ncclFuncReduceScatter = 3,
  ncclFuncAllReduce = 4,
  ncclFuncSendRecv = 5,
  ncclFuncSend = 6,
  ncclFuncRecv = 7,
  ncclFuncAlltoAll = 8,
  ncclFuncScatter = 9,
  ncclFuncGather = 10,
  ncclNumFuncs = 11
} ncclFunc_t;

#ifdef __cplusplus
}
#endif

#endif /* BATON_PLUGIN_COMMON_H */

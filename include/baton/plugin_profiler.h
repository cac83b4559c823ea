/* NCCL's profiler plugin interface (NCCL 2.28.9: versions 4 and 5), for profiler plugins built
 * against baton. A plugin is a shared library exporting ncclProfiler_v5 (or ncclProfiler_v4);
 * NCCL_PROFILER_PLUGIN names it (docs/plugins.md). The layouts and numbers are NCCL's, so one
 * plugin binary serves NVIDIA's NCCL and baton. Lesson 13 (docs/lessons/13-profiling.md) reads it.
 * Public sources: NCCL's src/include/plugin/nccl_profiler.h, profiler/profiler_v4.h and _v5.h, and
 * ext-profiler/README.md (the event tree and the states). */
#ifndef BATON_PLUGIN_PROFILER_H
#define BATON_PLUGIN_PROFILER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "baton/plugin_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Event types: one bit each, so a plugin's init answers with the mask of those it wants. */
enum {
  ncclProfileGroup = (1 << 0),         /* a group's launch on one communicator (plan) */
  ncclProfileColl = (1 << 1),          /* one collective as launched */
  ncclProfileP2p = (1 << 2),           /* one send or receive as launched */
  ncclProfileProxyOp = (1 << 3),       /* a network operation of one channel */
  ncclProfileProxyStep = (1 << 4),     /* one step of it */
  ncclProfileProxyCtrl = (1 << 5),     /* the proxy thread's sleep / wake / append */
  ncclProfileKernelCh = (1 << 6),      /* one channel's part of an operation */
  ncclProfileNetPlugin = (1 << 7),     /* events a network plugin defines */
  ncclProfileGroupApi = (1 << 8),      /* ncclGroupStart .. ncclGroupEnd (explicit or implicit) */
  ncclProfileCollApi = (1 << 9),       /* the collective call itself */
  ncclProfileP2pApi = (1 << 10),       /* the send / receive call itself */
  ncclProfileKernelLaunch = (1 << 11), /* handing the operations to the device (baton: to the channels) */
};

typedef enum {
  ncclProfilerProxyOpSendPosted = 0, /* 0-7: deprecated in v4 */
  ncclProfilerProxyOpSendRemFifoWait = 1,
  ncclProfilerProxyOpSendTransmitted = 2,
  ncclProfilerProxyOpSendDone = 3,
  ncclProfilerProxyOpRecvPosted = 4,
  ncclProfilerProxyOpRecvReceived = 5,
  ncclProfilerProxyOpRecvTransmitted = 6,
  ncclProfilerProxyOpRecvDone = 7,
  ncclProfilerProxyOpInProgress_v4 = 19,

  ncclProfilerProxyStepSendGPUWait = 8,
  ncclProfilerProxyStepSendPeerWait_v4 = 20,
  ncclProfilerProxyStepSendWait = 9,
  ncclProfilerProxyStepRecvWait = 10,
  ncclProfilerProxyStepRecvFlushWait = 11,
  ncclProfilerProxyStepRecvGPUWait = 12,

  ncclProfilerProxyCtrlIdle = 13,
  ncclProfilerProxyCtrlActive = 14,
  ncclProfilerProxyCtrlSleep = 15,
  ncclProfilerProxyCtrlWakeup = 16,
  ncclProfilerProxyCtrlAppend = 17,
  ncclProfilerProxyCtrlAppendEnd = 18,

  ncclProfilerNetPluginUpdate = 21,
  ncclProfilerKernelChStop = 22,
  ncclProfilerGroupStartApiStop = 23,
  ncclProfilerGroupEndApiStart = 24
} ncclProfilerEventState_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v4_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v5_t;

/* What an event is, given to startEvent. parentObj is the handle the plugin returned for the
 * parent event (NULL: none or not profiled). */
typedef struct {
  uint64_t type; /* one ncclProfile* bit */
  void* parentObj;
  int rank;
  union {
    struct {
      bool graphCaptured;
      int groupDepth;
    } groupApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      int root;
      void* stream;
      bool graphCaptured;
    } collApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      void* stream;
      bool graphCaptured;
    } p2pApi;
    struct {
      void* stream;
    } kernelLaunch;
    struct {
      uint64_t seqNumber;
      const char* func;
      void const* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
      void* parentGroup; /* the Group event (v4's parent); parentObj is the CollApi event */
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
      void* parentGroup;
    } p2p;
    struct {
      pid_t pid;
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      uint8_t channelId;
      uint64_t pTimer; /* start time (NCCL: the GPU's globaltimer; baton: CLOCK_MONOTONIC ns) */
    } kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
  };
} ncclProfilerEventDescr_v5_t;

typedef union {
  struct {
    size_t transSize;
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void* data;
  } netPlugin;
  struct {
    uint64_t pTimer;
  } kernelCh;
} ncclProfilerEventStateArgs_v5_t;
typedef ncclProfilerEventStateArgs_v5_t ncclProfilerEventStateArgs_v4_t;

typedef struct {
  const char* name;
  /* Once per communicator; *eActivationMask: the ncclProfile* bits the plugin wants. */
  ncclResult_t (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes,
                       int nranks, int rank, ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v5_t* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_v5_t eState,
                                   ncclProfilerEventStateArgs_v5_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
} ncclProfiler_v5_t;

/* v4: no API or launch events, an 8-bit type, and the Group event as a collective's parent. */
typedef struct {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      uint64_t seqNumber;
      const char* func;
      void const* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
    } p2p;
    struct {
      pid_t pid;
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      uint8_t channelId;
      uint64_t pTimer;
    } kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
  };
} ncclProfilerEventDescr_v4_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, int* eActivationMask, const char* commName, uint64_t commHash, int nNodes,
                       int nranks, int rank, ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v4_t* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_v4_t eState,
                                   ncclProfilerEventStateArgs_v4_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
} ncclProfiler_v4_t;

typedef ncclProfiler_v5_t ncclProfiler_t;
typedef ncclProfilerEventDescr_v5_t ncclProfilerEventDescr_t;
typedef ncclProfilerEventStateArgs_v5_t ncclProfilerEventStateArgs_t;

/* A network plugin's own events (ncclProfileNetPlugin): their descriptor's netPlugin.id says which
 * plugin kind and which version of its data (netPlugin.data) they carry. NCCL's socket transport,
 * and baton's socket plugin, report one event per request with this data.
 * Public source: NCCL's src/include/plugin/nccl_profiler.h and profiler/net_socket_v1.h. */
#define NCCL_PROFILER_NET_VER_BITS  (16)
#define NCCL_PROFILER_NET_VER_MASK  (~0U >> NCCL_PROFILER_NET_VER_BITS)
#define NCCL_PROFILER_NET_TYPE_MASK (~0U << NCCL_PROFILER_NET_VER_BITS)
typedef enum {
  NCCL_PROFILER_NET_TYPE_IB = (1U << NCCL_PROFILER_NET_VER_BITS),
  NCCL_PROFILER_NET_TYPE_SOCK = (2U << NCCL_PROFILER_NET_VER_BITS)
} ncclProfilerNetType;

#define NCCL_PROFILER_NET_SOCKET_VER 1
enum { ncclProfileSocket = (1 << 0) };
typedef struct {
  uint8_t type; /* ncclProfileSocket */
  union {
    struct {
      int fd;        /* the socket, or -1 where the plugin does not say */
      int op;        /* 0 receive, 1 send */
      size_t length; /* bytes of the request */
    } sock;
  };
} ncclProfilerNetSockDescr_v1_t;

#ifdef __cplusplus
}
#endif

#endif /* BATON_PLUGIN_PROFILER_H */

/*
 * nccl.h -- baton's public header: the NCCL 2.28.9 host API.
 *
 * baton is a from-scratch collective library that is a drop-in for NVIDIA's libnccl.so.2. This
 * header is baton's own text; what it must share with NVIDIA's nccl.h is the ABI: the version
 * macros, every enum value, the handle types, the layout of ncclUniqueId (128 bytes) and of
 * ncclConfig_t (80 bytes on LP64), and the signature of each of the 41 host functions. A program
 * built against either header runs against either library.
 *
 * Every function exists twice: `ncclX` (a weak alias) and `pncclX` (the strong symbol), so a
 * profiling layer can define `ncclX` itself and forward to `pncclX`.
 *
 * Unlike NVIDIA's header, this one needs no CUDA: it includes no CUDA header and, when the CUDA
 * runtime headers have not been included first, declares `cudaStream_t` exactly as CUDA does.
 * Including it after <cuda_runtime.h> is fine too.
 *
 * Host mode: when baton runs without a GPU, buffers passed to collectives and point-to-point calls
 * are host pointers, and the `cudaStream_t` argument is accepted and ignored (the call completes
 * before it returns).
 *
 * C99 and C++ both compile this header.
 */
#ifndef NCCL_H_
#define NCCL_H_

/* Lets code tell baton's header from NVIDIA's. */
#define BATON_NCCL_H 1

#include <limits.h> /* INT_MIN */
#include <stddef.h> /* size_t, NULL */

/* ---- CUDA stream type, without CUDA ----------------------------------------------------------- */

#if !defined(__CUDA_RUNTIME_H__) && !defined(CUDART_VERSION) && !defined(__DRIVER_TYPES_H__)
/* The same declaration as CUDA's driver_types.h, so the two agree when both are seen. */
typedef struct CUstream_st* cudaStream_t;
#endif

/* ---- Version ---------------------------------------------------------------------------------- */

#define NCCL_MAJOR  2
#define NCCL_MINOR  28
#define NCCL_PATCH  9
#define NCCL_SUFFIX ""

/* Versions up to 2.8 used X*1000 + Y*100 + Z; later ones use X*10000 + Y*100 + Z. */
#define NCCL_VERSION(X, Y, Z) (((X) <= 2 && (Y) <= 8) ? (X)*1000 + (Y)*100 + (Z) : (X)*10000 + (Y)*100 + (Z))
#define NCCL_VERSION_CODE     22809

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Handles ---------------------------------------------------------------------------------- */

/* A communicator: one rank's membership in a group of ranks. */
typedef struct ncclComm* ncclComm_t;
/* A registered window (symmetric memory). */
typedef struct ncclWindow_vidmem* ncclWindow_t;
#define NCCL_COMM_NULL NULL

/* Opaque bootstrap token: rank 0 creates it, the application hands it to every rank. */
#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

/* ---- Result codes ----------------------------------------------------------------------------- */

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclNumResults = 8
} ncclResult_t;

/* ---- Constants -------------------------------------------------------------------------------- */

/* "Not set" markers in ncclConfig_t: the library picks its default. */
#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
/* ncclCommSplit color meaning "this rank joins no new communicator". */
#define NCCL_SPLIT_NOCOLOR -1
#define NCCL_UNDEF_FLOAT   -1.0f

/* ncclCommWindowRegister winFlags. */
#define NCCL_WIN_DEFAULT            0x00
#define NCCL_WIN_COLL_SYMMETRIC     0x01
#define NCCL_WIN_REQUIRED_ALIGNMENT 4096

/* ncclConfig_t.CTAPolicy values. */
#define NCCL_CTA_POLICY_DEFAULT    0x00
#define NCCL_CTA_POLICY_EFFICIENCY 0x01
#define NCCL_CTA_POLICY_ZERO       0x02

/* ncclCommShrink shrinkFlags: DEFAULT shrinks a healthy parent, ABORT first stops its work. */
#define NCCL_SHRINK_DEFAULT 0x00
#define NCCL_SHRINK_ABORT   0x01

/* ncclCommRevoke revokeFlags: reserved, must be 0. */
#define NCCL_REVOKE_DEFAULT 0x00

/* ---- Communicator configuration --------------------------------------------------------------- */

/* Always start from NCCL_CONFIG_INITIALIZER, then set the fields you care about. The first three
 * fields identify the struct; the library ignores fields newer than `version`. Offsets (LP64) are
 * part of the ABI and are noted on the right. */
typedef struct ncclConfig_v22800 {
  size_t size;             /*  0: sizeof(ncclConfig_t) as the caller saw it */
  unsigned int magic;      /*  8: 0xcafebeef */
  unsigned int version;    /* 12: NCCL_VERSION of the caller's header */
  int blocking;            /* 16: 0 = calls may return ncclInProgress */
  int cgaClusterSize;      /* 20 */
  int minCTAs;             /* 24 */
  int maxCTAs;             /* 28 */
  const char* netName;     /* 32: network plugin to use, NULL = automatic */
  int splitShare;          /* 40: ncclCommSplit children share resources with the parent */
  int trafficClass;        /* 44: passed to the network */
  const char* commName;    /* 48: name shown in logs */
  int collnetEnable;       /* 56 */
  int CTAPolicy;           /* 60: NCCL_CTA_POLICY_* */
  int shrinkShare;         /* 64: ncclCommShrink children share resources with the parent */
  int nvlsCTAs;            /* 68 */
  int nChannelsPerNetPeer; /* 72 */
  int nvlinkCentricSched;  /* 76 */
} ncclConfig_t;

#define NCCL_CONFIG_INITIALIZER                                                     \
  {                                                                                 \
    sizeof(ncclConfig_t),                                 /* size */                \
        0xcafebeef,                                       /* magic */               \
        NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), /* version */             \
        NCCL_CONFIG_UNDEF_INT,                            /* blocking */            \
        NCCL_CONFIG_UNDEF_INT,                            /* cgaClusterSize */      \
        NCCL_CONFIG_UNDEF_INT,                            /* minCTAs */             \
        NCCL_CONFIG_UNDEF_INT,                            /* maxCTAs */             \
        NCCL_CONFIG_UNDEF_PTR,                            /* netName */             \
        NCCL_CONFIG_UNDEF_INT,                            /* splitShare */          \
        NCCL_CONFIG_UNDEF_INT,                            /* trafficClass */        \
        NCCL_CONFIG_UNDEF_PTR,                            /* commName */            \
        NCCL_CONFIG_UNDEF_INT,                            /* collnetEnable */       \
        NCCL_CONFIG_UNDEF_INT,                            /* CTAPolicy */           \
        NCCL_CONFIG_UNDEF_INT,                            /* shrinkShare */         \
        NCCL_CONFIG_UNDEF_INT,                            /* nvlsCTAs */            \
        NCCL_CONFIG_UNDEF_INT,                            /* nChannelsPerNetPeer */ \
        NCCL_CONFIG_UNDEF_INT,                            /* nvlinkCentricSched */  \
  }

/* Result of ncclGroupSimulateEnd; start from NCCL_SIM_INFO_INITIALIZER. */
typedef struct ncclSimInfo_v22200 {
  size_t size;          /*  0 */
  unsigned int magic;   /*  8: 0x74685283 */
  unsigned int version; /* 12 */
  float estimatedTime;  /* 16: model's estimate in microseconds */
} ncclSimInfo_t;

#define NCCL_SIM_INFO_INITIALIZER                                             \
  {                                                                           \
    sizeof(ncclSimInfo_t),                                /* size */          \
        0x74685283,                                       /* magic */         \
        NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), /* version */       \
        NCCL_UNDEF_FLOAT                                  /* estimatedTime */ \
  }

/* ---- Reduction operators and data types ------------------------------------------------------- */

/* Exists only so that sizeof(ncclRedOp_t) stays that of a plain int-sized enum. */
typedef enum { ncclNumOps_dummy = 5 } ncclRedOp_dummy_t;

typedef enum {
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
  ncclAvg = 4,
  /* Number of built-in operators; operators made by ncclRedOpCreatePreMulSum are >= this. */
  ncclNumOps = 5,
  /* Largest valid operator value: INT_MAX keeps the enum 4 bytes wide. */
  ncclMaxRedOp = 0x7fffffff
} ncclRedOp_t;

typedef enum {
  ncclInt8 = 0,
  ncclChar = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclInt = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclHalf = 6,
  ncclFloat32 = 7,
  ncclFloat = 7,
  ncclFloat64 = 8,
  ncclDouble = 8,
  ncclBfloat16 = 9,
  ncclFloat8e4m3 = 10,
  ncclFloat8e5m2 = 11,
  ncclNumTypes = 12
} ncclDataType_t;

/* Where ncclRedOpCreatePreMulSum's scalar lives. */
typedef enum {
  ncclScalarDevice = 0,       /* read through the pointer each time the operation runs */
  ncclScalarHostImmediate = 1 /* copied before ncclRedOpCreatePreMulSum returns */
} ncclScalarResidence_t;

/* ---- Memory ----------------------------------------------------------------------------------- */

/* Allocates memory suited to registration and windows (size may be rounded up). */
ncclResult_t ncclMemAlloc(void** ptr, size_t size);
ncclResult_t pncclMemAlloc(void** ptr, size_t size);

/* Frees memory from ncclMemAlloc. */
ncclResult_t ncclMemFree(void* ptr);
ncclResult_t pncclMemFree(void* ptr);

/* ---- Version and bootstrap -------------------------------------------------------------------- */

/* Stores NCCL_VERSION_CODE of the library (not of this header) in *version. */
ncclResult_t ncclGetVersion(int* version);
ncclResult_t pncclGetVersion(int* version);

/* Creates the bootstrap root and its id; call once and send the id to every rank. */
ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId);
ncclResult_t pncclGetUniqueId(ncclUniqueId* uniqueId);

/* ---- Communicator lifetime -------------------------------------------------------------------- */

/* Joins rank `rank` of `nranks` to the communicator named by commId, with options (NULL = defaults). */
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config);
ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config);

/* Joins rank `rank` of `nranks` to the communicator named by commId (blocking). */
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);

/* Creates all `ndev` ranks of a communicator in this process (devlist NULL = devices 0..ndev-1). */
ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist);
ncclResult_t pncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist);

/* Finishes issued work and makes the communicator quiescent on every rank. */
ncclResult_t ncclCommFinalize(ncclComm_t comm);
ncclResult_t pncclCommFinalize(ncclComm_t comm);

/* Frees this rank's resources of the communicator. */
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t pncclCommDestroy(ncclComm_t comm);

/* Stops in-flight work and frees this rank's resources. */
ncclResult_t ncclCommAbort(ncclComm_t comm);
ncclResult_t pncclCommAbort(ncclComm_t comm);

/* Stops in-flight work but keeps the resources; revokeFlags must be NCCL_REVOKE_DEFAULT. */
ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags);
ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags);

/* Collectively splits comm: ranks with the same color form a new communicator, ordered by key. */
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config);
ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config);

/* Creates a communicator from comm without the listed ranks (shrinkFlags: NCCL_SHRINK_*). */
ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
                            ncclConfig_t* config, int shrinkFlags);
ncclResult_t pncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
                             ncclConfig_t* config, int shrinkFlags);

/* Growing a communicator (NCCL 2.29's API). One existing rank gets an id from its communicator
 * (one outstanding id per communicator, usable once) and hands it to the new processes out of band.
 * Then every existing rank calls ncclCommGrow(comm, nRanks, id or NULL, -1, ...) (only the rank
 * that got the id passes it) and every new rank ncclCommGrow(NULL, nRanks, &id, itsRank, ...) with
 * a rank from comm's size up: existing ranks keep their numbers. comm must be healthy and idle. */
ncclResult_t ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId* uniqueId);
ncclResult_t pncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId* uniqueId);
ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank, ncclComm_t* newcomm,
                          ncclConfig_t* config);
ncclResult_t pncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank, ncclComm_t* newcomm,
                           ncclConfig_t* config);

/* Like ncclCommInitRankConfig, but bootstraps through nId roots (commIds[0..nId-1]). */
ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds,
                                      ncclConfig_t* config);
ncclResult_t pncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds,
                                       ncclConfig_t* config);

/* ---- Errors and diagnostics ------------------------------------------------------------------- */

/* A fixed description of a result code. */
const char* ncclGetErrorString(ncclResult_t result);
const char* pncclGetErrorString(ncclResult_t result);

/* The message of the last error in this process (comm is unused). */
const char* ncclGetLastError(ncclComm_t comm);
const char* pncclGetLastError(ncclComm_t comm);

/* Deprecated: re-reads the logging environment variables (NCCL_DEBUG, ...). */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((deprecated("ncclResetDebugInit is deprecated and will be removed")))
#endif
void ncclResetDebugInit(void);
#if defined(__GNUC__) || defined(__clang__)
__attribute__((deprecated("pncclResetDebugInit is deprecated and will be removed")))
#endif
void pncclResetDebugInit(void);

/* Reports the communicator's asynchronous state: ncclSuccess, ncclInProgress or an error. */
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError);
ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError);

/* ---- Communicator queries --------------------------------------------------------------------- */

/* Number of ranks. */
ncclResult_t ncclCommCount(const ncclComm_t comm, int* count);
ncclResult_t pncclCommCount(const ncclComm_t comm, int* count);

/* CUDA device of this rank. */
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device);
ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* device);

/* This rank's index. */
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank);
ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank);

/* ---- Buffer registration ---------------------------------------------------------------------- */

/* Registers a local buffer for zero-copy use and returns its handle. */
ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle);
ncclResult_t pncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle);

/* Releases a handle from ncclCommRegister. */
ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle);
ncclResult_t pncclCommDeregister(const ncclComm_t comm, void* handle);

/* Collectively registers a window over buff on every rank (winFlags: NCCL_WIN_*). */
ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags);
ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags);

/* Collectively releases a window. */
ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win);
ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win);

/* ---- Custom reduction operators --------------------------------------------------------------- */

/* Creates an operator that multiplies each input by *scalar and then sums, for this comm and type. */
ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                      ncclScalarResidence_t residence, ncclComm_t comm);
ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                       ncclScalarResidence_t residence, ncclComm_t comm);

/* Destroys an operator from ncclRedOpCreatePreMulSum. */
ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm);
ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm);

/* ---- Collectives -------------------------------------------------------------------------------
 * Counts are elements per rank. Each call returns once the work is enqueued on `stream`; in host
 * mode buffers are host pointers, the stream is accepted and ignored, and the call has completed
 * when it returns (outside a group). */

/* Reduces every rank's sendbuff into recvbuff on root (recvbuff may be NULL elsewhere). */
ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                        int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                         int root, ncclComm_t comm, cudaStream_t stream);

/* Deprecated in-place broadcast of root's buff. */
ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream);
ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                        cudaStream_t stream);

/* Copies root's sendbuff into every rank's recvbuff. */
ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                            ncclComm_t comm, cudaStream_t stream);

/* Reduces every rank's sendbuff into every rank's recvbuff. */
ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                            ncclComm_t comm, cudaStream_t stream);

/* Reduces, then leaves block r (recvcount elements) of the result on rank r. */
ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                                ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);

/* Gathers every rank's sendcount elements, in rank order, into every rank's recvbuff. */
ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                            ncclComm_t comm, cudaStream_t stream);

/* Sends block j (count elements) of sendbuff to rank j, receiving block i from rank i. */
ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,
                          cudaStream_t stream);
ncclResult_t pncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,
                           cudaStream_t stream);

/* Gathers every rank's count elements, in rank order, into root's recvbuff. */
ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                        ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                         ncclComm_t comm, cudaStream_t stream);

/* Sends block r (count elements) of root's sendbuff to rank r. */
ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                         ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                          ncclComm_t comm, cudaStream_t stream);

/* ---- Point to point ----------------------------------------------------------------------------
 * Same host-mode rules as the collectives. A send completes only with its matching receive, so
 * sends and receives between the same ranks must share a group to avoid deadlock. */

/* Sends count elements to rank peer. */
ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream);
ncclResult_t pncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                       cudaStream_t stream);

/* Receives count elements from rank peer. */
ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream);
ncclResult_t pncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                       cudaStream_t stream);

/* ---- Groups ----------------------------------------------------------------------------------- */

/* Opens a group: calls until the matching ncclGroupEnd are only queued. Groups nest. */
ncclResult_t ncclGroupStart(void);
ncclResult_t pncclGroupStart(void);

/* Closes the outermost group and launches everything queued in it. */
ncclResult_t ncclGroupEnd(void);
ncclResult_t pncclGroupEnd(void);

/* Closes the group without running it and reports the model's time estimate in simInfo. */
ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo);
ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t* simInfo);

#ifdef __cplusplus
} /* extern "C" */
#endif

/* ---- Layout checks ---------------------------------------------------------------------------- */

#if defined(__LP64__) || defined(_LP64)
#if defined(__cplusplus) && __cplusplus >= 201103L
static_assert(sizeof(ncclConfig_t) == 80, "ncclConfig_t must be 80 bytes (NCCL 2.28 ABI)");
static_assert(sizeof(ncclUniqueId) == 128, "ncclUniqueId must be 128 bytes (NCCL ABI)");
static_assert(sizeof(ncclSimInfo_t) == 24, "ncclSimInfo_t must be 24 bytes (NCCL ABI)");
#elif !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(sizeof(ncclConfig_t) == 80, "ncclConfig_t must be 80 bytes (NCCL 2.28 ABI)");
_Static_assert(sizeof(ncclUniqueId) == 128, "ncclUniqueId must be 128 bytes (NCCL ABI)");
_Static_assert(sizeof(ncclSimInfo_t) == 24, "ncclSimInfo_t must be 24 bytes (NCCL ABI)");
#endif
#endif

#endif /* NCCL_H_ */

// The CUDA backend's boundary: what libnccl.so.2 asks of libbaton-cuda.so, the part built by nvcc.
//
// libnccl.so.2 has no link-time dependency on CUDA: the first communicator opens libbaton-cuda.so
// (beside libnccl.so.2, or BATON_CUDA_PLUGIN) and takes this table from it. The plugin links the
// CUDA runtime statically, so it needs only the driver (libcuda.so.1); on a machine without one
// probe() says why and every communicator stays on the CPU backend.
//
// Computes nothing itself. Both compilers read this header, so it holds plain types only; the
// table carries the sizes of the structs it passes (a plugin built from other sources is refused).
// Memory-ordering contract: none here (launchColl's kernels: src/cuda/coll_kernels.cuh).
#pragma once

#include <cstddef>
#include <cstdint>

#include "coll_args.h"
#include "exec_model.h"
#include "reduce_ops.h"
#include "sendrecv_progress.h"

namespace baton {

constexpr int kCudaBackendVersion = 10;
constexpr int kGpuMaxThreads = 512;     // threads of a collective's block (NCCL_NTHREADS' default)
constexpr size_t kIpcHandleBytes = 64;  // cudaIpcMemHandle_t
// A channel's tree connectors in GpuChannelDev::treeConns: to the parent, from it, from each
// child, to each child.
constexpr int kGpuTreeUpSend = 0, kGpuTreeDownRecv = 1, kGpuTreeUpRecv = 2;
constexpr int kGpuTreeDownSend = kGpuTreeUpRecv + kTreeMaxArity;
constexpr int kGpuTreeConns = kGpuTreeDownSend + kTreeMaxArity;

// One channel of a GPU communicator, in device memory: its ring position and connectors. The
// kernels keep the connectors' step counters here between launches, as NCCL keeps them in its
// device-side channel structs.
struct GpuChannelDev {
  ConnDev send;  // to the next ring position (its FIFO lies at that rank, gpu_fifo.cc)
  ConnDev recv;  // from the previous one (the FIFO is ours)
  int ringIndex = 0;
  const int* userRanks = nullptr;  // device memory: position -> user rank
  // The channel's tree (only the tree channels of a communicator whose NCCL_ALGO leaves AllReduce
  // to Tree, gpu_tree.cc): parent and children, its connector pointers aimed at treeConns below.
  TreeDev tree;
  ConnDev treeConns[kGpuTreeConns];
};

// A kernel that gave up (a wait timed out or saw the abort flag) says so here: pinned host memory
// the device writes and the host reads without a synchronisation.
struct GpuStatus {
  int claimed;  // the first failing block takes it (atomicCAS), so one failure is reported
  int failed;   // written last (after failure), with a system fence before it
  WaitFailure failure;
};

// One collective's launch: every block is one channel of the operation.
struct GpuCollLaunch {
  CollArgs base;                      // everything but the ring and tree, which each block takes from channels
  GpuChannelDev* channels = nullptr;  // device memory, at least base.nChannels of them
  int device = 0;                     // the communicator's CUDA device
  int threads = kGpuMaxThreads;
  int depth = kSteps;           // FIFO slots the sender may fill ahead for this operation
  int dtype = 0;                // ncclDataType_t
  OpParams op;                  // the operator, as the CPU kernels take it (PreMulSum's scalar may be device memory)
  ExecCtx ctx;                  // rank, abort flag (device-visible), timeout
  GpuStatus* status = nullptr;  // device-visible pointer to the communicator's status
  // The symmetric kernels (isSymmetric(base.algo): both buffers in windows of device memory):
  // every rank's window base as this device reaches it (device memory, by rank), the buffers'
  // offsets in their windows, and every rank's pad (device memory, by rank), where the kernels
  // also count their epochs (block.cuh).
  char* const* symSendBases = nullptr;
  char* const* symRecvBases = nullptr;
  size_t symSendOffset = 0, symRecvOffset = 0;
  SymPad* const* symPads = nullptr;
};

// A group's device sends and receives for one communicator, as one kernel (sendrecv_kernel.cu).
// Its transfers travel as a table the plugin copies to the device on the stream (stream-ordered
// allocation, freed after the kernel), so a group may hold any number of them:
//   int32 first[nBlocks + 1]   block b runs transfers first[b] .. first[b + 1] - 1, round-robin
//   int32 after[nOps]          the transfer before this one on its connector, relative to first[b]; -1: none
//   SendRecvTransfer xs[nOps]  at xsOffset; each block's progress lives here while the kernel runs
// A connector's transfers all go to one block, so they keep their order.
struct GpuP2pLaunch {
  const void* table = nullptr;  // host memory, read before launchP2p returns
  size_t tableBytes = 0;
  size_t xsOffset = 0;
  int nOps = 0;
  int nBlocks = 0;
  int threads = kGpuMaxThreads;
  int device = 0;
  ExecCtx ctx;                  // rank, abort flag (device-visible), timeout
  GpuStatus* status = nullptr;  // device-visible pointer to the communicator's status
  // The stream is being captured into a CUDA graph, which may run many times: the table then
  // belongs to the graph, a pinned host copy that the graph copies onto a device copy before each
  // kernel (the kernel writes its progress there), freed once no graph holds it (releaseGraphMemory).
  int captured = 0;
};

// Where each part of the table lies for `nBlocks` blocks and `nOps` transfers.
inline void gpuP2pTableLayout(int nBlocks, int nOps, size_t* xsOffset, size_t* bytes) {
  *xsOffset = ((sizeof(int32_t) * ((size_t)nBlocks + 1 + nOps)) + 15) / 16 * 16;
  *bytes = *xsOffset + sizeof(SendRecvTransfer) * (size_t)nOps;
}

// The plugin's table. Calls return 0 or the CUDA error code; lastError() describes the last failed
// call of this thread ("cudaMalloc(1048576 bytes) on device 0: out of memory").
struct CudaBackend {
  int version;
  size_t collArgsBytes, execCtxBytes, connDevBytes, launchBytes, p2pLaunchBytes, transferBytes, channelBytes;
  // Whether this thread has a usable current device; *dev is it, `desc` names it or says why not.
  int (*probe)(int* dev, char* desc, size_t descBytes);
  int (*deviceCount)(int* n);
  int (*multiProcessors)(int dev, int* n);  // SMs of `dev`
  // 1: memory the device reaches by this pointer (cudaMalloc, cuMem, managed), 0: host memory.
  int (*isDevicePointer)(const void* p);
  int (*deviceAlloc)(int dev, void** p, size_t bytes);  // zeroed
  int (*deviceFree)(int dev, void* p);
  int (*hostAlloc)(void** host, void** devView, size_t bytes);  // pinned, mapped, zeroed
  int (*hostFree)(void* host);
  int (*copyToDevice)(int dev, void* dst, const void* src, size_t bytes);  // synchronous
  // A CUDA IPC handle names the whole allocation that holds p (cudaMalloc may sub-allocate from a
  // larger block, and the handle then opens at that block's start): *offset is p's place in it.
  int (*ipcHandle)(int dev, void* p, unsigned char handle[kIpcHandleBytes], uint64_t* offset);
  int (*ipcOpen)(int dev, const unsigned char handle[kIpcHandleBytes], void** base);  // the allocation's start
  int (*ipcClose)(int dev, void* p);
  int (*enablePeerAccess)(int dev, int peerDev);     // 0 also when already enabled or the same device
  int (*pciBusId)(int dev, char* id, size_t bytes);  // "0000:3b:00.0"
  // *can = 1 when kernels on `dev` can load and store in the memory of the device with PCI bus id
  // `peer` (the same device, or peer access between them); 0 when not, or `peer` is not visible.
  int (*canReach)(int dev, const char* peer, int* can);
  // Pins and maps host memory (mmap'd shared memory, say) for every device: *devView is its address
  // in kernels.
  int (*hostRegister)(int dev, void* host, size_t bytes, void** devView);
  int (*hostUnregister)(void* host);
  int (*eventCreate)(int dev, void** ev);
  int (*eventDestroy)(void* ev);
  // Whether `stream` (of device `dev`) is being captured into a CUDA graph: *status 0 no, 1 yes
  // (*id names the capture, unique in the process), 2 its capture was invalidated by an error.
  int (*streamCapture)(int dev, void* stream, int* status, unsigned long long* id);
  // external = 1 in a capture: an event node that waits for / records the event itself each time
  // the graph runs (cudaEventWaitExternal / cudaEventRecordExternal), not an edge inside the graph.
  int (*streamWaitEvent)(int dev, void* stream, void* ev, int external);
  int (*eventRecord)(int dev, void* ev, void* stream, int external);
  int (*eventSynchronize)(void* ev);
  int (*launchColl)(const GpuCollLaunch* launch, void* stream);
  // Copies launch->table to the device on `stream`, launches the send/recv kernel, frees the copy
  // (in a capture: the graph keeps it, see GpuP2pLaunch::captured).
  int (*launchP2p)(const GpuP2pLaunch* launch, void* stream);
  int (*copyAsync)(int dev, void* dst, const void* src, size_t bytes, void* stream);  // device to device
  // Stream-ordered scratch on `stream` (cudaMallocFromPoolAsync / cudaFreeAsync), from a pool that
  // never makes one stream wait for another's pending free: no wait on other work, which thread
  // ranks sharing a device could deadlock on (sendrecv_kernel.cu's rankSafePool).
  int (*allocAsync)(int dev, void** p, size_t bytes, void* stream);
  int (*freeAsync)(int dev, void* p, void* stream);
  // Frees the captured tables of graphs destroyed since the last call (CUDA runs a graph's
  // destructor callbacks on a thread that may not call CUDA, so they only queue the memory).
  void (*releaseGraphMemory)();
  // ncclMemAlloc's device memory as NCCL makes it (cuMem): `bytes` rounded up to the device's
  // granularity (*mapped), zeroed, readable and writable by `dev` and every device with peer access
  // to it, and exported as a POSIX descriptor (*fd, the caller's to close) that peers import. Fails
  // where the driver cannot export cuMem memory as descriptors (the caller then takes deviceAlloc's).
  int (*vmmAlloc)(int dev, size_t bytes, void** p, size_t* mapped, int* fd);
  // Maps another process's exported allocation (its descriptor, its mapped size) for `dev`.
  int (*vmmImport)(int dev, int fd, size_t mapped, void** p);
  int (*vmmFree)(void* p, size_t mapped);  // unmaps either (the memory goes with its last mapping)
  const char* (*lastError)();
};

}  // namespace baton

// The plugin's one exported symbol.
extern "C" const baton::CudaBackend* batonCudaBackend(void);

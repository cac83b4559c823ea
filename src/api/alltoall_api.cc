// ncclAlltoAll and batonAlltoAllv (include/baton/alltoallv.h): validate, describe every block as a
// (bytes, offset) pair per peer, and queue either the grouped sends and receives of the direct
// algorithm or one task that runs its rounds (pairwise, Bruck: src/alltoall/alltoall_executor.cc).
#include <memory>
#include <vector>

#include "alltoall.h"
#include "alltoall/alltoall_choice.h"
#include "alltoall/alltoall_executor.h"
#include "api/api.h"
#include "api/argcheck.h"
#include "api/submit.h"
#include "baton/alltoallv.h"
#include "cuda_backend.h"
#include "gpu/gpu_comm.h"
#include "misc/debug.h"

namespace baton {
namespace {

using Layout = std::vector<size_t>;  // sendBytes[n], sendOffset[n], recvBytes[n], recvOffset[n] (task.h)

// Device buffers (the CUDA backend): ncclAlltoAll into a window of device memory by stores into
// the peers' windows, anything else as copies and send/recv kernels (alltoall_steps.h) in the
// algorithm host buffers would take: direct on one host, Bruck across hosts up to the Bruck
// threshold, or what BATON_ALLTOALL_ALGO forces (Bruck needs blocks of one size: a forced Bruck
// runs an AlltoAllv pairwise). Both are one task, launched before the group's
// sends and receives on every rank (gpu_alltoall.cc). In place, every rank must be (as nccl-tests
// calls it): an in-place rank sends from a copy and never takes the window kernel.
ncclResult_t submitDeviceAlltoAll(ncclComm* comm, const char* fn, const void* sendbuff, void* recvbuff,
                                  std::shared_ptr<const Layout> layout, bool uniform, cudaStream_t stream) {
  const size_t block = (*layout)[2 * comm->nRanks];  // uniform: every block alike
  const size_t total = block * comm->nRanks;
  const bool inPlace = sendbuff && sendbuff == recvbuff;
  std::vector<Task> tasks = alltoallTasks(comm, kAlltoAllDirect, sendbuff, recvbuff, layout, uniform);
  ARGCHECK(gpuClassifyP2p(comm, tasks, stream, fn));
  if (tasks.empty() || !tasks[0].onDevice) return submit(comm, tasks);  // not a GPU call after all
  if (uniform && !inPlace && comm->gpu->alltoallByWindow(comm, recvbuff, total)) {
    tasks = alltoallTasks(comm, kAlltoAllWindow, sendbuff, recvbuff, std::move(layout), uniform);
    tasks[0].onDevice = true, tasks[0].stream = stream;
    return submit(comm, tasks);  // its INFO line comes at the launch
  }
  // The host buffers' choice (alltoall_choice.cc) by size and hosts, the window case settled above.
  const char* why = nullptr;
  int algo = chooseAlltoAll(comm, block, uniform, kWindowOutside, &why);  // Outside: a forced window lands below
  if (algo == kAlltoAllWindow)
    algo = kAlltoAllDirect, why = "window forced, but in place or recvbuff not in a window of device memory: direct";
  if (algo == kAlltoAllBruck && !uniform) algo = kAlltoAllPairwise, why = "Bruck forced, but block sizes differ";
  Task t = sendRecvTask(Task::kAlltoAll, sendbuff, recvbuff, 0, ncclInt8, -1);
  t.alltoallAlgo = algo, t.layout = std::move(layout), t.uniform = uniform;
  t.onDevice = true, t.stream = stream;
  BATON_INFO(kSubColl, "%s: comm %p [nranks=%d] algorithm %s (%s) on device buffers", fn, (void*)comm, comm->nRanks,
             alltoallAlgoName(algo), why);
  return submit(comm, {t});  // its steps' INFO line comes at the launch
}

bool anyDeviceMemory(const void* a, const void* b) { return isDeviceMemory(a) || isDeviceMemory(b); }

ncclResult_t submitAlltoAll(ncclComm* comm, const char* fn, const void* sendbuff, void* recvbuff,
                            std::shared_ptr<const Layout> layout, bool uniform, ncclDataType_t type) {
  const int n = comm->nRanks;
  const size_t* l = layout->data();
  size_t largest = 0;
  for (int p = 0; p < n; ++p) largest = std::max(largest, l[p]);
  const char* why = nullptr;
  // ncclAlltoAll's whole buffer (the same extent on every rank); an AlltoAllv's start (its extent
  // differs per rank, and the window algorithm checks each block).
  const size_t extent = uniform ? largest * n : 1;
  const int algo = chooseAlltoAll(comm, largest, uniform, alltoallWindowFit(comm, recvbuff, extent), &why);
  BATON_INFO(kSubColl,
             "%s: sendbuff %p recvbuff %p largest block %zu bytes datatype %s comm %p [nranks=%d] algorithm %s (%s)",
             fn, sendbuff, recvbuff, largest, typeName(type), (void*)comm, n, alltoallAlgoName(algo), why);
  return submit(comm, alltoallTasks(comm, algo, sendbuff, recvbuff, std::move(layout), uniform));
}

// One direction's counts and displacements (elements) as bytes and byte offsets into `out`.
ncclResult_t checkSide(const char* fn, int n, const void* buf, const size_t* counts, const size_t* displs,
                       ncclDataType_t type, const char* bufName, const char* countsName, const char* displsName,
                       size_t* bytesOut, size_t* offOut) {
  if (!counts) return batonError(ncclInvalidArgument, "%s: %s is NULL", fn, countsName);
  if (!displs) return batonError(ncclInvalidArgument, "%s: %s is NULL", fn, displsName);
  const size_t es = typeSize(type);
  for (int p = 0; p < n; ++p) {
    size_t end, bytes;
    if (__builtin_add_overflow(displs[p], counts[p], &end) || __builtin_mul_overflow(end, es, &bytes) ||
        bytes > (size_t)PTRDIFF_MAX)
      return batonError(ncclInvalidArgument,
                        "%s: %s[%d]=%zu plus %s[%d]=%zu elements of %s overflows the address space", fn, displsName, p,
                        displs[p], countsName, p, counts[p], typeName(type));
    if (counts[p] && !buf)
      return batonError(ncclInvalidArgument, "%s: %s is NULL but %s[%d] holds count %zu", fn, bufName, countsName, p,
                        counts[p]);
    bytesOut[p] = counts[p] * es;
    offOut[p] = displs[p] * es;
  }
  return ncclSuccess;
}

}  // namespace
}  // namespace baton

using namespace baton;

NCCL_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,
                           cudaStream_t stream) {
  const char* fn = "ncclAlltoAll";
  ARGCHECK(checkCommReady(comm, fn));
  ARGCHECK(checkDatatype(datatype, fn));
  ARGCHECK(checkCount(count, datatype, comm->nRanks, fn));
  ARGCHECK(checkCollPtr(sendbuff, count, fn, "sendbuff"));
  ARGCHECK(checkCollPtr(recvbuff, count, fn, "recvbuff"));
  const int n = comm->nRanks;
  const size_t block = count * typeSize(datatype);
  const char* src = static_cast<const char*>(sendbuff);
  const bool onDevice = count > 0 && anyDeviceMemory(sendbuff, recvbuff);
  if (!onDevice && sendbuff == recvbuff && block) {
    // In place: every block is both read and overwritten, so send from a snapshot, which must
    // outlive the operation: hence only for calls that complete before returning. On device
    // buffers the stream orders a copy into scratch first (submitDeviceAlltoAll).
    if (!comm->blocking || inGroup())
      return groupRecordError(batonError(ncclInvalidUsage,
                                         "%s: in-place AlltoAll (sendbuff == recvbuff) is supported only outside a "
                                         "group on a blocking communicator",
                                         fn));
    static thread_local std::vector<char> snapshot;
    snapshot.assign(src, src + block * n);
    src = snapshot.data();
  }
  auto layout = std::make_shared<Layout>(4 * (size_t)n);
  for (int p = 0; p < n; ++p)
    (*layout)[p] = (*layout)[2 * n + p] = block, (*layout)[n + p] = (*layout)[3 * n + p] = p * block;
  // Every rank passes the same count (NCCL's rule), so every rank knows every block's size.
  if (onDevice) return submitDeviceAlltoAll(comm, fn, src, recvbuff, std::move(layout), /*uniform=*/true, stream);
  return submitAlltoAll(comm, fn, src, recvbuff, std::move(layout), /*uniform=*/true, datatype);
}

extern "C" __attribute__((visibility("default"))) ncclResult_t batonAlltoAllv(
    const void* sendbuff, const size_t sendcounts[], const size_t sdispls[], void* recvbuff, const size_t recvcounts[],
    const size_t rdispls[], ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  const char* fn = "batonAlltoAllv";
  ARGCHECK(checkCommReady(comm, fn));
  ARGCHECK(checkDatatype(datatype, fn));
  const int n = comm->nRanks;
  auto layout = std::make_shared<Layout>(4 * (size_t)n);
  size_t* l = layout->data();
  ARGCHECK(checkSide(fn, n, sendbuff, sendcounts, sdispls, datatype, "sendbuff", "sendcounts", "sdispls", l, l + n));
  ARGCHECK(checkSide(fn, n, recvbuff, recvcounts, rdispls, datatype, "recvbuff", "recvcounts", "rdispls", l + 2 * n,
                     l + 3 * n));
  if (sendbuff && sendbuff == recvbuff)
    return groupRecordError(
        batonError(ncclInvalidArgument,
                   "%s: sendbuff == recvbuff (%p): AlltoAllv has no in-place form; pass two buffers", fn, sendbuff));
  if (anyDeviceMemory(sendbuff, recvbuff))
    return submitDeviceAlltoAll(comm, fn, sendbuff, recvbuff, std::move(layout), /*uniform=*/false, stream);
  return submitAlltoAll(comm, fn, sendbuff, recvbuff, std::move(layout), /*uniform=*/false, datatype);
}

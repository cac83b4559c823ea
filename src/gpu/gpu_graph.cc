// A GPU communicator's launches in call order, whether they run now or in a CUDA graph.
//
// Every kernel of a communicator uses the same FIFOs and step counters, so two of them must never
// run at once, and each rank must run them in the order of its calls. Eager launches keep that
// order with one event: each waits for `lastWork_`, recorded after the one before.
//
// A call made while its stream is being captured (cudaStreamBeginCapture) runs only when the graph
// is launched, perhaps many times, and between eager calls. As NCCL (2.9 and later; its user guide,
// "Using NCCL with CUDA Graphs") supports any mix of captured and eager work on one communicator,
// a captured launch gets:
//   - an external event-wait node on lastWork_: each replay starts after the communicator's work
//     enqueued before the graph was launched;
//   - an external event-record node of lastWork_ after the kernel: eager calls and later graph
//     launches follow the replay;
//   - an edge from the previous captured launch of the same capture (through an event recorded
//     inside that capture, one per capture in progress): two calls captured on different streams
//     of one graph still run one after the other, in call order.
// The kernels keep their step counters, and the symmetric kernels their barrier epochs (in the
// ranks' pads), in device memory, so a replay continues from where the previous kernel left them,
// as an eager launch does. As in NCCL, a graph holding a symmetric kernel needs its windows
// registered and their memory allocated for as long as it is launched.
#include "comm.h"
#include "cuda_backend.h"
#include "gpu/gpu_comm.h"
#include "misc/debug.h"
#include "proxy.h"

namespace baton {

ncclResult_t GpuComm::beforeLaunch(ncclComm* comm, cudaStream_t stream, LaunchOrder* o) {
  const CudaBackend* b = b_;
  int status = 0;
  o->id = 0;
  GPU_CALL(b->streamCapture(dev_, stream, &status, &o->id), "asking whether the stream is being captured");
  if (status == 2)
    return batonError(ncclInvalidUsage,
                      "rank %d: stream %p is in a CUDA graph capture that an earlier call invalidated; end the "
                      "capture (cudaStreamEndCapture) and start again",
                      comm->rank, (void*)stream);
  o->captured = status == 1;
  if (!o->captured) {
    if (launched_)
      GPU_CALL(b->streamWaitEvent(dev_, stream, lastWork_, 0), "ordering after the communicator's last kernel");
    return ncclSuccess;
  }
  GPU_CALL(b->streamWaitEvent(dev_, stream, lastWork_, 1),
           "ordering a captured kernel after the communicator's last one");
  for (const CaptureTail& c : captures_)
    if (c.id == o->id)
      GPU_CALL(b->streamWaitEvent(dev_, stream, c.event, 0), "ordering after the previous kernel of this capture");
  return ncclSuccess;
}

ncclResult_t GpuComm::afterLaunch(ncclComm* comm, cudaStream_t stream, const LaunchOrder& o) {
  const CudaBackend* b = b_;
  GPU_CALL(b->eventRecord(dev_, lastWork_, stream, o.captured ? 1 : 0), "recording the kernel's completion");
  launched_ = true;
  if (netFifos_) comm->proxy->kernelLaunched();  // its NET steps come soon: the proxy stops napping
  if (!o.captured) return ncclSuccess;
  // This capture's slot, or the least recently used one (its capture has most likely ended).
  CaptureTail* slot = &captures_[0];
  for (CaptureTail& c : captures_) {
    if (c.id == o.id) {
      slot = &c;
      break;
    }
    if (c.used < slot->used) slot = &c;
  }
  slot->id = o.id;
  slot->used = ++capturedLaunches_;
  GPU_CALL(b->eventRecord(dev_, slot->event, stream, 0), "recording the kernel's completion in the capture");
  return ncclSuccess;
}

ncclResult_t GpuComm::sameCapture(ncclComm* comm, cudaStream_t first, const std::vector<cudaStream_t>& others) {
  const CudaBackend* b = b_;
  int status = 0;
  unsigned long long id = 0;
  GPU_CALL(b->streamCapture(dev_, first, &status, &id), "asking whether the stream is being captured");
  for (cudaStream_t s : others) {
    int st = 0;
    unsigned long long sid = 0;
    GPU_CALL(b->streamCapture(dev_, s, &st, &sid), "asking whether the stream is being captured");
    if (st != status || sid != id)
      return batonError(ncclInvalidUsage,
                        "rank %d: the streams of one group must all be outside CUDA graph capture or all in the "
                        "same capture, but stream %p is %s and stream %p is %s",
                        comm->rank, (void*)first, status ? "being captured" : "not", (void*)s,
                        st == 0        ? "not"
                        : st != status ? "being captured"
                                       : "in another capture");
  }
  return ncclSuccess;
}

ncclResult_t refuseHostCapture(ncclComm* comm, cudaStream_t stream, const char* fn) {
  const CudaBackend* b = cudaBackend();
  if (!b || !stream) return ncclSuccess;
  int dev = comm->gpu ? comm->gpu->device() : comm->gpuDev;
  char why[256];
  if (dev < 0 && (dev = currentCudaDevice(why, sizeof why)) < 0) return ncclSuccess;
  int status = 0;
  unsigned long long id = 0;
  GPU_CALL(b->streamCapture(dev, stream, &status, &id), "asking whether the stream is being captured");
  if (status == 0) return ncclSuccess;
  return batonError(ncclInvalidUsage,
                    "%s: stream %p is being captured into a CUDA graph, but the buffers are host memory, which runs "
                    "on the CPU now and could not run again when the graph is launched; use device buffers",
                    fn, (void*)stream);
}

}  // namespace baton

// Where a GPU communicator's FIFOs lie. A FIFO is written by its sender's kernel and read by its
// receiver's, so the receiver puts it where the sender's device can store:
//   - in the receiver's device memory, when the sender's device is the same device or has peer
//     access to it (NVLink or PCIe P2P); a sender in the same process uses the pointer, one in
//     another process maps it through a CUDA IPC handle;
//   - otherwise in host memory both devices reach over PCIe, as NCCL's SHM transport does when P2P
//     is not possible (consumer cards without P2P, some cloud VMs) or NCCL_P2P_DISABLE=1 asks for it:
//     pinned memory for a sender in the same process, a shared-memory segment both processes pin
//     and map (cudaHostRegister) for one in another;
//   - for a sender on another host (or with NCCL_SHM_DISABLE=1 where P2P does not reach), as NCCL's
//     NET transport without GPUDirect RDMA: the CPU backend's NET connection (transports/net/), its
//     two staging FIFOs in host memory, pinned and mapped for each end's device. The sender's
//     kernel writes steps into its staging FIFO, its proxy thread sends them, the receiver's proxy
//     writes them into the receiver's FIFO and its kernel reads them there (lesson 08).
// The protocols need nothing else: their flags and counters are system-scope atomics, which host
// memory mapped into both devices serves (slower than device memory, and correct); a proxy reads
// and writes the same words with the host's acquire loads and release stores.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <random>
#include <string>

#include "comm.h"
#include "gpu/gpu_comm.h"
#include "gpu/gpu_fifo_placement.h"
#include "misc/debug.h"
#include "shm/shm_segment.h"
#include "transport.h"

namespace baton {

ncclResult_t GpuComm::findReach(ncclComm* comm, bool* ringsInHost) {
  const CudaBackend* b = b_;
  const int n = comm->nRanks, me = comm->rank;
  // First every rank's device by PCI bus id (ordinals differ between processes), then which of
  // them each rank's device can store into: only the sender's own answer decides a FIFO's place.
  struct Bus {
    char id[32];
  };
  std::vector<Bus> bus(n);
  GPU_CALL(b->pciBusId(dev_, bus[me].id, sizeof bus[me].id), "the device's PCI bus id");
  BATON_CHECK(comm->bootstrap->allGather(bus.data(), sizeof(Bus)));
  reach_.assign((size_t)n * n, 0);
  for (int p = 0; p < n; ++p) {
    int can = 0;
    // Another host's bus ids name devices there (the same id may exist here): never reachable.
    const bool here = comm->peers[p].hostHash == comm->peers[me].hostHash;
    if (here && (!comm->tun.p2pDisable || p == me))
      GPU_CALL(b->canReach(dev_, bus[p].id, &can), "peer access between devices");
    reach_[(size_t)me * n + p] = (uint8_t)can;
  }
  BATON_CHECK(comm->bootstrap->allGather(reach_.data(), (size_t)n));
  allReach_ = std::all_of(reach_.begin(), reach_.end(), [](uint8_t c) { return c != 0; });
  // Every rank sees the same matrix and rings, so all reach the same answer without a message.
  std::vector<std::vector<int>> rings;
  for (int c = 0; c < comm->nChannels; ++c) rings.push_back(comm->channels[c]->ringUserRanks);
  *ringsInHost = ringsThroughHost(reach_, n, rings);
  return ncclSuccess;
}

ncclResult_t GpuComm::makeFifo(ncclComm* comm, int sender, const FifoLayout& layout, int channel, FifoMem* out,
                               FifoInfo* info) {
  const CudaBackend* b = b_;
  const size_t bytes = fifoBytes(layout);
  *out = FifoMem{};
  *info = FifoInfo{};
  const uint64_t myPid = comm->peers[comm->rank].pidHash;
  const bool sameProcess = comm->peers[sender].pidHash == myPid;
  const bool otherHost = comm->peers[sender].hostHash != comm->peers[comm->rank].hostHash;
  const FifoPlace place =
      placeFifo(reach_, comm->nRanks, sender, comm->rank, sameProcess, otherHost, comm->tun.shmDisable);
  info->pidHash = myPid;
  info->bytes = bytes;
  info->dev = dev_;
  out->bytes = bytes;
  if (place == FifoPlace::kNet) {
    std::unique_ptr<Connection> conn;
    BATON_CHECK(
        transports()[kTransportNet]->createRecv(connSetupFor(comm, sender, channel), layout, &info->net, &conn));
    info->net.transport = kTransportNet;
    BATON_CHECK(pinNetFifo(comm, std::move(conn), out));
  } else if (place == FifoPlace::kDevice) {
    GPU_CALL(b->deviceAlloc(dev_, &out->base, bytes), "a FIFO in device memory");
    out->view = out->base, out->where = kFifoDevice;
    if (!sameProcess) {
      GPU_CALL(b->ipcHandle(dev_, out->base, info->handle, &info->ipcOffset), "cudaIpcGetMemHandle of a FIFO");
      info->hasHandle = 1;
      ipcInside_ += info->ipcOffset != 0;
    }
  } else if (place == FifoPlace::kPinned) {
    out->where = kFifoPinned;
    GPU_CALL(b->hostAlloc(&out->base, &out->view, bytes), "a FIFO in pinned host memory");
    ++hostFifos_;
  } else {
    static std::atomic<uint64_t> seq{0};
    snprintf(info->shmName, sizeof info->shmName, "/%s%d-g%llu-%08x", kShmPrefix, (int)getpid(),
             (unsigned long long)seq.fetch_add(1), (unsigned)std::random_device{}());
    sweepStaleShmSegments();
    BATON_CHECK(shmCreate(info->shmName, bytes, &out->base));  // a new segment's pages are zero
    out->where = kFifoShared;
    out->shmName = info->shmName;
    if (b->hostRegister(dev_, out->base, bytes, &out->view) != 0) {
      munmap(out->base, bytes);
      shm_unlink(info->shmName);
      *out = FifoMem{};
      return gpuCallFailed(b, "pinning a shared-memory FIFO (cudaHostRegister)", comm->rank);
    }
    ++hostFifos_;
  }
  info->where = out->where;
  info->ptr = reinterpret_cast<uint64_t>(out->view);
  return ncclSuccess;
}

ncclResult_t GpuComm::pinNetFifo(ncclComm* comm, std::unique_ptr<Connection> conn, FifoMem* out) {
  const CudaBackend* b = b_;
  out->where = kFifoNet;
  out->bytes = (fifoBytes(conn->layout) + 4095) / 4096 * 4096;  // the HostFifo's whole pages
  void* base = conn->fifo;
  out->net = std::move(conn);
  GPU_CALL(b->hostRegister(dev_, base, out->bytes, &out->view), "pinning a NET staging FIFO (cudaHostRegister)");
  out->base = base;  // registered: freeFifo unregisters it
  ++netFifos_;
  return ncclSuccess;
}

ncclResult_t GpuComm::openFifo(ncclComm* comm, const FifoInfo& theirs, int peer, const FifoLayout& layout, int channel,
                               void** fifo, bool* ipc) {
  const CudaBackend* b = b_;
  const size_t bytes = fifoBytes(layout);
  const bool sameProcess = theirs.pidHash == comm->peers[comm->rank].pidHash;
  if (theirs.bytes != bytes)
    return batonError(ncclInvalidUsage,
                      "rank %d: rank %d's FIFO is %llu bytes but this rank lays it out in %zu (do NCCL_BUFFSIZE or "
                      "NCCL_P2P_CHUNKSIZE differ between ranks?)",
                      comm->rank, peer, (unsigned long long)theirs.bytes, bytes);
  if (theirs.where == kFifoNet) {  // our end of the connection: a staging FIFO our proxy sends from
    std::unique_ptr<Connection> conn;
    BATON_CHECK(transports()[kTransportNet]->connectSend(connSetupFor(comm, peer, channel), theirs.net, &conn));
    FifoMem m;
    const ncclResult_t res = pinNetFifo(comm, std::move(conn), &m);
    mapped_.push_back(m);  // released with the communicator, also after a failure
    BATON_CHECK(res);
    *fifo = m.view;
    return ncclSuccess;
  }
  if (theirs.where == kFifoPinned) {  // pinned and mapped for every device of its process
    if (!sameProcess)
      return batonError(ncclInternalError, "rank %d: rank %d offered pinned memory of another process", rank_, peer);
    *fifo = reinterpret_cast<void*>(theirs.ptr);
    return ncclSuccess;
  }
  if (theirs.where == kFifoShared) {
    char name[sizeof theirs.shmName];
    memcpy(name, theirs.shmName, sizeof name);
    name[sizeof name - 1] = 0;
    FifoMem m;
    m.bytes = theirs.bytes, m.where = kFifoShared;
    BATON_CHECK(shmOpen(name, m.bytes, &m.base));
    shm_unlink(name);  // both sides have it mapped: nothing stays in /dev/shm
    if (b->hostRegister(dev_, m.base, m.bytes, &m.view) != 0) {
      munmap(m.base, m.bytes);
      return batonError(ncclUnhandledCudaError, "rank %d: pinning rank %d's shared-memory FIFO: %s", comm->rank, peer,
                        b->lastError());
    }
    mapped_.push_back(m);
    *fifo = m.view;
    return ncclSuccess;
  }
  if (sameProcess) {
    GPU_CALL(b->enablePeerAccess(dev_, theirs.dev), "peer access to another rank's device");
    *fifo = reinterpret_cast<void*>(theirs.ptr);
    return ncclSuccess;
  }
  if (!theirs.hasHandle) return batonError(ncclInternalError, "rank %d: rank %d sent no CUDA IPC handle", rank_, peer);
  void* base = nullptr;
  GPU_CALL(b->ipcOpen(dev_, theirs.handle, &base), "cudaIpcOpenMemHandle of another rank's FIFO");
  opened_.push_back(base);
  *fifo = static_cast<char*>(base) + theirs.ipcOffset;
  *ipc = true;
  return ncclSuccess;
}

ncclResult_t GpuComm::offerFifo(ncclComm* comm, int sender, uint64_t tag, const FifoLayout& layout, int channel,
                                std::vector<FifoMem>* keep, ConnDev* conn) {
  FifoMem mem;
  FifoInfo info;
  const ncclResult_t res = makeFifo(comm, sender, layout, channel, &mem, &info);
  keep->push_back(mem);  // freed with the communicator, also after a failure
  BATON_CHECK(res);
  *conn = makeConnDev(static_cast<ConnFifo*>(mem.view), layout, sender, comm->tun.fifoDepth);
  return sender == comm->rank ? ncclSuccess : comm->bootstrap->send(sender, tag, &info, sizeof info);
}

ncclResult_t GpuComm::takeFifo(ncclComm* comm, int receiver, uint64_t tag, const FifoLayout& layout, int channel,
                               ConnDev* conn, bool* ipc) {
  FifoInfo theirs{};
  BATON_CHECK(comm->bootstrap->recv(receiver, tag, &theirs, sizeof theirs));
  void* fifo = nullptr;
  BATON_CHECK(openFifo(comm, theirs, receiver, layout, channel, &fifo, ipc));
  *conn = makeConnDev(static_cast<ConnFifo*>(fifo), layout, receiver, comm->tun.fifoDepth);
  return ncclSuccess;
}

void GpuComm::freeFifo(const FifoMem& f) {
  if (!f.base) return;
  switch (f.where) {
    case kFifoDevice: b_->deviceFree(dev_, f.base); break;
    case kFifoPinned: b_->hostFree(f.base); break;
    case kFifoNet: b_->hostUnregister(f.base); break;  // the memory is the connection's
    default:
      b_->hostUnregister(f.base);
      munmap(f.base, f.bytes);
      if (!f.shmName.empty()) shm_unlink(f.shmName.c_str());  // ENOENT once the sender removed it
      break;
  }
}

}  // namespace baton

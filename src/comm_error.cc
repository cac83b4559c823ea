// A communicator's error state: the first failure's code and message, and how a failure stops this
// rank's other work and tells the ring neighbours (lesson 10).
#include "comm_error.h"

#include <mutex>

#include "comm.h"
#include "comm_dump.h"
#include "proxy.h"

namespace baton {

void commAnnounceFailure(ncclComm* comm) {
  // Ring connections only: they exist from init on (tree and p2p ones appear while other threads
  // run), and every collective uses one; their neighbours pass it on when they fail in turn.
  const uint64_t word = ((uint64_t)comm->rank + 1) | (uint64_t)comm->failureCause.load() << 32;
  for (auto& ch : comm->channels)
    for (Connection* c : {ch->sendConn.get(), ch->recvConn.get()})
      if (c && c->fifo && !loadAcquire(&c->fifo->abortedBy)) storeRelease(&c->fifo->abortedBy, word);
}

void commNoteFailureCause(ncclComm* comm, int peer) {
  int none = 0;
  if (peer >= 0 && peer != comm->rank) comm->failureCause.compare_exchange_strong(none, peer + 1);
}

void commSetError(ncclComm* comm, ncclResult_t err, const char* message) {
  bool first = false;
  {
    // Under the lock, so a reader that sees asyncError set and then asks commFirstError (which
    // takes the lock) gets the message, not the empty string.
    std::lock_guard<std::mutex> lock(comm->firstErrorMu);
    int expected = ncclSuccess;
    if (comm->asyncError.compare_exchange_strong(expected, err))
      comm->firstError = message ? message : "", first = true;
    // The GPU's kernels' waits read their own (pinned) flag: GpuComm::abort's store.
    if (comm->gpuAbortFlag) storeFlag(comm->gpuAbortFlag, 1);
  }
  // Let this rank's other channels drain instead of waiting for a peer that will not come, and
  // tell the ring neighbours, whose waits would otherwise last until BATON_WAIT_TIMEOUT.
  storeFlag(&comm->abortFlag, 1);
  commAnnounceFailure(comm);
  comm->proxy->kick();  // a sleeping proxy wakes and ends the NET connections
  // The first failure leaves its flight recorder where BATON_DUMP_DIR says (lesson 14).
  if (first) commDumpIfAsked(comm, "failure");
}

std::string commFirstError(ncclComm* comm) {
  std::lock_guard<std::mutex> lock(comm->firstErrorMu);
  return comm->firstError;
}

}  // namespace baton

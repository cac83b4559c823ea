// Put-with-signal to ranks of other hosts (include/baton/device.h's batonPutSignal, lesson 11): the
// device communicator's NET connections, one each way per pair of ranks on different hosts.
//
// The sender is the thread that calls batonPutSignal: it sends a header (window, offset, size,
// signal) and the bytes on its connection to the peer, and returns once the back-end has them.
// The receiver is the communicator's proxy thread (src/proxy.h): a task per peer receives each
// header, then the bytes straight into the named window at the offset, and only then adds 1 to the
// signal with a release fetch-add, so a rank whose batonWaitSignal sees the add sees the bytes (the
// same contract as a store and batonSignalAdd on this host). One stream per pair keeps puts in order.
// Closing: every rank sends an end marker after its last put and waits for every peer's, so a put
// sent before batonDevCommDestroy is applied before it returns.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "baton/device.h"
#include "net/net_backend.h"

struct ncclComm;

namespace baton {

class NetPutRecvTask;

class NetPuts {
 public:
  // Collective: listens for and connects to every rank not in dev's LSA team.
  static ncclResult_t create(ncclComm* comm, const batonDevComm& dev, std::unique_ptr<NetPuts>* out);
  ~NetPuts();  // local: closes what is still open

  // The calling thread's put to world rank `peer` (another host's).
  ncclResult_t put(int peer, uint64_t windowSerial, size_t offset, const void* src, size_t bytes, int signal);
  // Collective: sends the end marker to every remote peer and waits for theirs.
  ncclResult_t finish();

 private:
  struct Peer {
    NetSendComm* send = nullptr;
    std::mutex mu;  // one put at a time on a connection
    std::shared_ptr<NetPutRecvTask> recv;
  };
  ncclResult_t sendAll(Peer& p, int peer, void* data, size_t bytes);
  ncclComm* comm_ = nullptr;
  NetBackend* net_ = nullptr;
  const volatile int* abortFlag_ = nullptr;
  std::vector<std::unique_ptr<Peer>> peers_;  // by world rank; null for this host's ranks
};

}  // namespace baton

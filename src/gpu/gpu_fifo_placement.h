// Where a GPU communicator puts a FIFO, and whether its rings cross host memory: the decisions of
// gpu_fifo.cc as plain functions of the reach matrix, so a CPU test can check them.
//
// reach[r * n + q] != 0: rank r's device can store into rank q's device memory (the same device,
// or peer access between the two). A FIFO is written by its sender and lies at its receiver.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace baton {

enum class FifoPlace { kDevice, kPinned, kShared, kNet };

// Where the FIFO that `sender` writes for `receiver` lies, as NCCL picks its transports for GPUs
// (P2P, then SHM, then NET):
//   - the receiver's device memory when the sender's device can store there (P2P);
//   - else host memory on this host (SHM): pinned when the sender is a thread of the receiver's
//     process, a shared-memory segment when it is not;
//   - else, for a sender on another host or with NCCL_SHM_DISABLE (`shmOff`), NET: a FIFO in
//     pinned host memory at each end and the proxies moving the steps between them (lesson 08).
inline FifoPlace placeFifo(const std::vector<uint8_t>& reach, int n, int sender, int receiver, bool sameProcess,
                           bool otherHost, bool shmOff) {
  if (sender == receiver) return FifoPlace::kDevice;
  if (otherHost) return FifoPlace::kNet;  // reach says nothing about another host's bus ids
  if (reach[(size_t)sender * n + receiver]) return FifoPlace::kDevice;
  if (shmOff) return FifoPlace::kNet;
  return sameProcess ? FifoPlace::kPinned : FifoPlace::kShared;
}

// Whether some edge of these rings (position -> user rank) has a FIFO in host memory.
inline bool ringsThroughHost(const std::vector<uint8_t>& reach, int n, const std::vector<std::vector<int>>& rings) {
  for (const std::vector<int>& ring : rings)
    for (int i = 0; i < n; ++i) {
      const int from = ring[i], to = ring[(i + 1) % n];
      if (from != to && !reach[(size_t)from * n + to]) return true;
    }
  return false;
}

}  // namespace baton

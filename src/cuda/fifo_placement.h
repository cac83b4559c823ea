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

enum class FifoPlace { kDevice, kPinned, kShared };

// The receiver's device memory when the sender can store there; else host memory: pinned when
// the sender is a thread of the receiver's process, a shared-memory segment when it is not.
inline FifoPlace placeFifo(const std::vector<uint8_t>& reach, int n, int sender, int receiver, bool sameProcess) {
  if (sender == receiver || reach[(size_t)sender * n + receiver]) return FifoPlace::kDevice;
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

// Where the collective suites' buffers live (lesson 09): BATON_TEST_MEMORY=plain (the default: the
// heap), registered (ncclMemAlloc + ncclCommRegister) or window (ncclMemAlloc + a symmetric
// window). For the last two every rank of a communicator gets one arena, registered once, and each
// GuardedBuffer takes a first-fit block of it. Ranks allocate the same sizes in the same order, so
// a block has the same offset on every rank, as NCCL_WIN_COLL_SYMMETRIC requires.
//
// Public API only.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "nccl.h"

namespace bt {

enum class TestMemory { Plain, Registered, Window };

inline TestMemory testMemory() {
  const char* v = std::getenv("BATON_TEST_MEMORY");
  if (!v || !*v || !strcmp(v, "plain")) return TestMemory::Plain;
  if (!strcmp(v, "registered")) return TestMemory::Registered;
  if (!strcmp(v, "window")) return TestMemory::Window;
  fprintf(stderr, "BATON_TEST_MEMORY=%s: expected plain, registered or window\n", v);
  std::abort();
}

class Arena {
 public:
  static constexpr size_t kBytes = size_t(64) << 20;
  static constexpr size_t kAlign = 4096;

  // Allocates and registers; on a window the call is collective (the caller arranges that every
  // rank makes it, in a group when one thread drives them all).
  ncclResult_t attach(ncclComm_t comm, TestMemory kind) {
    comm_ = comm;
    ncclResult_t r = ncclMemAlloc(&base_, kBytes);
    if (r != ncclSuccess) return r;
    if (kind == TestMemory::Registered) return ncclCommRegister(comm, base_, kBytes, &handle_);
    return ncclCommWindowRegister(comm, base_, kBytes, &win_, NCCL_WIN_COLL_SYMMETRIC);
  }
  ncclResult_t detach() {
    ncclResult_t r = ncclSuccess;
    if (win_) r = ncclCommWindowDeregister(comm_, win_);
    if (handle_ && r == ncclSuccess) r = ncclCommDeregister(comm_, handle_);
    if (r == ncclSuccess) r = ncclMemFree(base_);
    return r;
  }
  char* alloc(size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    bytes = (bytes + kAlign - 1) / kAlign * kAlign;
    size_t at = 0;
    for (const auto& [off, len] : live_) {
      if (off - at >= bytes) break;
      at = off + len;
    }
    if (at + bytes > kBytes) {
      fprintf(stderr, "test arena: %zu bytes do not fit in %zu (raise Arena::kBytes)\n", bytes, kBytes);
      std::abort();
    }
    live_[at] = bytes;
    return static_cast<char*>(base_) + at;
  }
  void free(void* p) {
    std::lock_guard<std::mutex> lock(mu_);
    live_.erase(static_cast<size_t>(static_cast<char*>(p) - static_cast<char*>(base_)));
  }

 private:
  ncclComm_t comm_ = nullptr;
  void* base_ = nullptr;
  void* handle_ = nullptr;
  ncclWindow_t win_ = nullptr;
  std::mutex mu_;
  std::map<size_t, size_t> live_;  // offset -> bytes
};

inline std::mutex& arenaMu() {
  static std::mutex m;
  return m;
}
inline std::map<ncclComm_t, Arena*>& arenas() {
  static std::map<ncclComm_t, Arena*> m;
  return m;
}
// The arena of `comm`, or nullptr (plain memory, or a communicator the suite made for one test).
inline Arena* arenaOf(ncclComm_t comm) {
  std::lock_guard<std::mutex> lock(arenaMu());
  auto it = arenas().find(comm);
  return it == arenas().end() ? nullptr : it->second;
}

// Gives every communicator of `comms` (all ranks of one communicator) an arena, if
// BATON_TEST_MEMORY asks for one. One thread may drive all ranks: a window joins a group.
inline ncclResult_t attachTestMemory(const std::vector<ncclComm_t>& comms) {
  const TestMemory kind = testMemory();
  if (kind == TestMemory::Plain || comms.empty()) return ncclSuccess;
  std::vector<Arena*> made;
  ncclResult_t r = ncclGroupStart();
  for (ncclComm_t c : comms) {
    made.push_back(new Arena);
    if (r == ncclSuccess) r = made.back()->attach(c, kind);
  }
  const ncclResult_t end = ncclGroupEnd();
  if (r == ncclSuccess) r = end;
  if (r != ncclSuccess) return r;
  std::lock_guard<std::mutex> lock(arenaMu());
  for (size_t i = 0; i < comms.size(); ++i) arenas()[comms[i]] = made[i];
  return ncclSuccess;
}
inline ncclResult_t detachTestMemory(const std::vector<ncclComm_t>& comms) {
  ncclResult_t r = ncclSuccess;
  for (ncclComm_t c : comms) {
    Arena* a = arenaOf(c);
    if (!a) continue;
    {
      std::lock_guard<std::mutex> lock(arenaMu());
      arenas().erase(c);
    }
    if (ncclResult_t e = a->detach(); e != ncclSuccess && r == ncclSuccess) r = e;
    delete a;
  }
  return r;
}

}  // namespace bt

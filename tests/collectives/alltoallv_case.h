// One rank's side of an AlltoAllv check, shared by the threads suite (alltoall_test.cc) and the
// process workers (tests/process/coll_check.cc): rank s sends count(s, d) uint32 elements to rank
// d, zero for some pairs and `unit` times a small factor otherwise; its send blocks lie in reverse
// peer order with 3 elements between them, its receive blocks in peer order with 5 between; every
// element names (s, d, i) and every gap must stay untouched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "baton/alltoallv.h"
#include "collectives/test_memory.h"

namespace bt {

struct AlltoAllvRank {
  std::vector<size_t> sendCounts, sendDispls, recvCounts, recvDispls;
  std::vector<uint32_t> send, recv, want;

  static constexpr uint32_t kGap = 0xdeadbeef;
  static size_t count(int s, int d, size_t unit) { return (size_t)((s * 7 + d * 3) % 5) * unit; }
  static uint32_t value(int s, int d, size_t i) { return (uint32_t)(s * 1000003u + d * 10007u + i * 13u + 1u); }

  AlltoAllvRank(int rank, int n, size_t unit) : sendCounts(n), sendDispls(n), recvCounts(n), recvDispls(n) {
    size_t off = 0;
    for (int d = n - 1; d >= 0; --d)
      sendDispls[d] = off, sendCounts[d] = count(rank, d, unit), off += sendCounts[d] + 3;
    send.assign(off, kGap);
    for (int d = 0; d < n; ++d)
      for (size_t i = 0; i < sendCounts[d]; ++i) send[sendDispls[d] + i] = value(rank, d, i);
    off = 0;
    for (int s = 0; s < n; ++s) recvDispls[s] = off, recvCounts[s] = count(s, rank, unit), off += recvCounts[s] + 5;
    recv.assign(off, kGap);
    want = recv;
    for (int s = 0; s < n; ++s)
      for (size_t i = 0; i < recvCounts[s]; ++i) want[recvDispls[s] + i] = value(s, rank, i);
  }

  // batonAlltoAllv on this rank's side, from `send` into `recv`; with an arena (registered memory or
  // a window, test_memory.h) from and into copies in it, and finish() (after the call completed: a
  // group's end) brings `recv` back.
  ncclResult_t run(ncclComm_t comm, Arena* arena) {
    arena_ = arena;
    if (!arena)
      return batonAlltoAllv(send.data(), sendCounts.data(), sendDispls.data(), recv.data(), recvCounts.data(),
                            recvDispls.data(), ncclUint32, comm, nullptr);
    const size_t sb = send.size() * sizeof(uint32_t), rb = recv.size() * sizeof(uint32_t);
    s_ = arena->alloc(sb + 1);  // +1: a rank with nothing to send still passes a buffer
    r_ = arena->alloc(rb + 1);
    memcpy(s_, send.data(), sb);
    memcpy(r_, recv.data(), rb);
    return batonAlltoAllv(s_, sendCounts.data(), sendDispls.data(), r_, recvCounts.data(), recvDispls.data(),
                          ncclUint32, comm, nullptr);
  }
  void finish() {
    if (!arena_) return;
    memcpy(recv.data(), r_, recv.size() * sizeof(uint32_t));
    arena_->free(s_);
    arena_->free(r_);
    arena_ = nullptr;
  }

 private:
  Arena* arena_ = nullptr;
  char *s_ = nullptr, *r_ = nullptr;
};

}  // namespace bt

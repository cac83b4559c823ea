// One collective test case as one rank sees it: which buffers to allocate and fill, which NCCL call
// to issue, and how to check this rank's buffers afterwards. Ranks-as-threads (harness.cc) and
// ranks-as-processes (tests/process/coll_check.cc) both drive cases through these three steps.
//
// `count` is NCCL's count argument (AllGather: sendcount, ReduceScatter: recvcount, AlltoAll/Gather/
// Scatter: elements per rank block). In-place follows NCCL: AllReduce/Reduce/Broadcast send == recv;
// AllGather send = recv + rank*count; ReduceScatter recv = send + rank*count; AlltoAll send == recv;
// Gather send = recv + rank*count; Scatter recv = send + rank*count. SendRecv (rank r sends to r+1 and
// receives from r-1 in one group) has no in-place form. Every buffer is guarded; out-of-place send
// buffers must be unchanged; a receive buffer NCCL does not write (Reduce/Gather at non-roots) must
// keep its poison.
//
// Header-only, public API only (see data.h).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "collectives/data.h"
#include "collectives/test_memory.h"
#include "nccl.h"

namespace bt {

enum class Coll { AllReduce, Reduce, ReduceScatter, AllGather, Broadcast, AlltoAll, Gather, Scatter, SendRecv };

inline const char* collName(Coll c) {
  static const char* const k[] = {"AllReduce", "Reduce", "ReduceScatter", "AllGather", "Broadcast",
                                  "AlltoAll",  "Gather", "Scatter",       "SendRecv"};
  return k[(int)c];
}
inline bool reduces(Coll c) { return c == Coll::AllReduce || c == Coll::Reduce || c == Coll::ReduceScatter; }
inline bool rooted(Coll c) {
  return c == Coll::Reduce || c == Coll::Broadcast || c == Coll::Gather || c == Coll::Scatter;
}
// Collectives whose `count` is one rank's block of an nranks-block buffer.
inline bool blocked(Coll c) {
  return c == Coll::AllGather || c == Coll::ReduceScatter || c == Coll::AlltoAll || c == Coll::Gather ||
         c == Coll::Scatter;
}

constexpr size_t kLargeBytes = size_t(4) << 20;
// The "large" count: >= 4 MiB and odd. For blocked collectives it is the whole nranks-block buffer
// that is >= 4 MiB (as nccl-tests sizes them), so 8 ranks do not move 8x 4 MiB per rank.
inline size_t largeCount(Coll c, ncclDataType_t t, int nranks) {
  const size_t elems = kLargeBytes / typeSize(t);
  return ((blocked(c) ? elems / nranks : elems) + 3) | 1;
}

struct CollCase {
  Coll coll = Coll::AllReduce;
  ncclDataType_t type = ncclFloat32;
  Op op = Op::Sum;
  size_t count = 0;
  int root = 0;
  bool inPlace = false;
  bool scalarDevice = false;  // PreMulSum scalar by pointer (ncclScalarDevice) instead of by value
  uint64_t seed = 1;
};

inline std::string describe(const CollCase& c, int nranks) {
  std::string s = std::string(collName(c.coll)) + " " + typeName(c.type);
  if (reduces(c.coll)) s += std::string(" ") + opName(c.op) + (c.scalarDevice ? "(device scalar)" : "");
  s += " count " + std::to_string(c.count) + " nranks " + std::to_string(nranks);
  if (rooted(c.coll)) s += " root " + std::to_string(c.root);
  return s + (c.inPlace ? " in-place" : " out-of-place");
}

// Elements of rank `rank`'s send and receive buffers, and of the one buffer when in place.
inline size_t sendElems(const CollCase& c, int n) {
  const bool big = c.coll == Coll::ReduceScatter || c.coll == Coll::AlltoAll || c.coll == Coll::Scatter;
  return big ? c.count * n : c.count;
}
inline size_t recvElems(const CollCase& c, int n) {
  const bool big = c.coll == Coll::AllGather || c.coll == Coll::AlltoAll || c.coll == Coll::Gather;
  return big ? c.count * n : c.count;
}
// Where the send part sits inside the in-place buffer, and the receive part, in elements.
inline size_t inPlaceSendOffset(const CollCase& c, int rank) {
  return (c.coll == Coll::AllGather || c.coll == Coll::Gather) ? c.count * rank : 0;
}
inline size_t inPlaceRecvOffset(const CollCase& c, int rank) {
  return (c.coll == Coll::ReduceScatter || c.coll == Coll::Scatter) ? c.count * rank : 0;
}

struct RankBuffers {
  GuardedBuffer sendBuf, recvBuf;  // in place: only sendBuf
  const void* send = nullptr;
  void* recv = nullptr;
  std::vector<char> snapshot;  // the send buffer (in place: the one buffer) as prepared
  ncclRedOp_t op = ncclSum;
  bool opCreated = false;
  alignas(8) unsigned char scalar[8] = {};
};

// Rank `rank`'s input element j (global index in the send buffer).
inline void fillRankInput(const CollCase& c, int n, int rank, size_t j0, size_t cnt, void* dst) {
  if (reduces(c.coll)) fillInput(c.type, c.op, n, c.seed, rank, j0, cnt, dst);
  else fillPayload(typeSize(c.type), c.seed, rank, j0, cnt, dst);
}

// Allocates and fills rank `rank`'s buffers; creates the PreMulSum op on `comm` when needed.
inline ncclResult_t prepareRank(const CollCase& c, int n, int rank, ncclComm_t comm, RankBuffers& b) {
  const size_t ts = typeSize(c.type);
  const bool inPlace = c.inPlace && c.coll != Coll::SendRecv;
  Arena* arena = arenaOf(comm);
  auto buffer = [arena](size_t bytes) { return arena ? GuardedBuffer(bytes, arena) : GuardedBuffer(bytes); };
  if (inPlace) {
    const size_t total = std::max(sendElems(c, n), recvElems(c, n));
    b.sendBuf = buffer(total * ts);
    char* base = b.sendBuf.data();
    b.send = base + inPlaceSendOffset(c, rank) * ts;
    b.recv = base + inPlaceRecvOffset(c, rank) * ts;
  } else {
    b.sendBuf = buffer(sendElems(c, n) * ts);
    b.recvBuf = buffer(recvElems(c, n) * ts);
    b.send = b.sendBuf.data();
    b.recv = b.recvBuf.data();
  }
  fillRankInput(c, n, rank, 0, sendElems(c, n), const_cast<void*>(b.send));
  b.snapshot.assign(b.sendBuf.data(), b.sendBuf.data() + b.sendBuf.bytes());
  b.op = builtinOp(c.op);
  if (reduces(c.coll) && c.op == Op::PreMulSum) {
    fillScalar(c.type, b.scalar);
    ncclResult_t r = ncclRedOpCreatePreMulSum(&b.op, b.scalar, c.type,
                                              c.scalarDevice ? ncclScalarDevice : ncclScalarHostImmediate, comm);
    if (r != ncclSuccess) return r;
    b.opCreated = true;
  }
  return ncclSuccess;
}

// Issues the case's NCCL call(s) for this rank (inside the caller's group, if any).
inline ncclResult_t issueRank(const CollCase& c, int n, int rank, ncclComm_t comm, RankBuffers& b) {
  const void* s = b.send;
  void* r = b.recv;
  switch (c.coll) {
    case Coll::AllReduce: return ncclAllReduce(s, r, c.count, c.type, b.op, comm, nullptr);
    case Coll::Reduce: return ncclReduce(s, r, c.count, c.type, b.op, c.root, comm, nullptr);
    case Coll::ReduceScatter: return ncclReduceScatter(s, r, c.count, c.type, b.op, comm, nullptr);
    case Coll::AllGather: return ncclAllGather(s, r, c.count, c.type, comm, nullptr);
    case Coll::Broadcast: return ncclBroadcast(s, r, c.count, c.type, c.root, comm, nullptr);
    case Coll::AlltoAll: return ncclAlltoAll(s, r, c.count, c.type, comm, nullptr);
    case Coll::Gather: return ncclGather(s, r, c.count, c.type, c.root, comm, nullptr);
    case Coll::Scatter: return ncclScatter(s, r, c.count, c.type, c.root, comm, nullptr);
    case Coll::SendRecv: {
      ncclResult_t res = ncclGroupStart();
      if (res == ncclSuccess) res = ncclSend(s, c.count, c.type, (rank + 1) % n, comm, nullptr);
      if (res == ncclSuccess) res = ncclRecv(r, c.count, c.type, (rank + n - 1) % n, comm, nullptr);
      ncclResult_t end = ncclGroupEnd();
      return res != ncclSuccess ? res : end;
    }
  }
  return ncclInvalidArgument;
}

// The expected reduction of elements [j0, j0+cnt): from `all` (the whole index space, computed on
// first use and shared between the ranks of one process) when given, else computed here.
inline void expectedReduction(const CollCase& c, int n, size_t j0, size_t cnt, std::vector<char>* all, char* dst) {
  const size_t ts = typeSize(c.type);
  if (!all) return fillExpected(c.type, c.op, n, c.seed, j0, cnt, dst);
  if (all->empty()) {
    const size_t total = c.coll == Coll::ReduceScatter ? c.count * n : c.count;
    all->resize(total * ts);
    fillExpected(c.type, c.op, n, c.seed, 0, total, all->data());
  }
  if (cnt) memcpy(dst, all->data() + j0 * ts, cnt * ts);
}

// Checks rank `rank`'s buffers after the operation; releases the PreMulSum op. Empty string if all
// is well, else what is wrong (the first problem found). `reducedAll`: see expectedReduction.
inline std::string checkRank(const CollCase& c, int n, int rank, ncclComm_t comm, RankBuffers& b,
                             std::vector<char>* reducedAll = nullptr) {
  if (b.opCreated) {
    ncclRedOpDestroy(b.op, comm);
    b.opCreated = false;
  }
  const size_t ts = typeSize(c.type);
  const size_t cnt = c.count;
  const bool inPlace = c.inPlace && c.coll != Coll::SendRecv;
  for (const GuardedBuffer* g : {&b.sendBuf, &b.recvBuf})
    if (std::string e = g->checkGuards(); !e.empty()) return e;
  // The whole buffer that holds the result and what it must contain: in place, the prepared buffer
  // with the result region replaced; out of place, poison with the result region replaced.
  const char* got = inPlace ? b.sendBuf.data() : b.recvBuf.data();
  std::vector<char> want;
  if (inPlace) want = b.snapshot;
  else want.assign(b.recvBuf.bytes(), (char)GuardedBuffer::kPoisonByte);
  char* out = want.data() + (inPlace ? inPlaceRecvOffset(c, rank) * ts : 0);  // where the result goes
  const bool isRoot = rank == c.root;
  switch (c.coll) {
    case Coll::AllReduce: expectedReduction(c, n, 0, cnt, reducedAll, out); break;
    case Coll::Reduce:
      if (isRoot) expectedReduction(c, n, 0, cnt, reducedAll, out);
      break;
    case Coll::ReduceScatter: expectedReduction(c, n, (size_t)rank * cnt, cnt, reducedAll, out); break;
    case Coll::AllGather:
      for (int u = 0; u < n; ++u) fillRankInput(c, n, u, 0, cnt, out + u * cnt * ts);
      break;
    case Coll::Broadcast: fillRankInput(c, n, c.root, 0, cnt, out); break;
    case Coll::AlltoAll:
      for (int u = 0; u < n; ++u) fillRankInput(c, n, u, (size_t)rank * cnt, cnt, out + u * cnt * ts);
      break;
    case Coll::Gather:
      if (isRoot)
        for (int u = 0; u < n; ++u) fillRankInput(c, n, u, 0, cnt, out + u * cnt * ts);
      break;
    case Coll::Scatter: fillRankInput(c, n, c.root, (size_t)rank * cnt, cnt, out); break;
    case Coll::SendRecv: fillRankInput(c, n, (rank + n - 1) % n, 0, cnt, out); break;
  }
  if (std::string e = compareBits(got, want.data(), want.size() / ts, ts, inPlace ? "buffer" : "recvbuff"); !e.empty())
    return e;
  if (!inPlace)  // the send buffer must be untouched
    if (std::string e =
            compareBits(b.sendBuf.data(), b.snapshot.data(), b.snapshot.size() / ts, ts, "sendbuff (modified)");
        !e.empty())
      return e;
  return "";
}

}  // namespace bt

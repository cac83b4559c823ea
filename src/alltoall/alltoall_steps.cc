// AlltoAll as copies and exchanges (alltoall_steps.h, lesson 12).
#include "alltoall/alltoall_steps.h"

#include <algorithm>

#include "alltoall.h"
#include "misc/debug.h"

namespace baton {
namespace {

struct Sides {
  const size_t *sendBytes, *sendOff, *recvBytes, *recvOff;
  Sides(const size_t* l, int n) : sendBytes(l), sendOff(l + n), recvBytes(l + 2 * n), recvOff(l + 3 * n) {}
};

bool inPlace(const AlltoAllStepsIn& in) { return in.sendbuff && in.sendbuff == in.recvbuff; }

// The bytes of sendbuff any block reaches: what an in-place call copies aside.
size_t sendExtent(const AlltoAllStepsIn& in) {
  const Sides s(in.layout, in.nRanks);
  size_t end = 0;
  for (int p = 0; p < in.nRanks; ++p)
    if (s.sendBytes[p]) end = std::max(end, s.sendOff[p] + s.sendBytes[p]);
  return end;
}

int highestBit(int v) {
  int k = -1;
  while (v) v >>= 1, ++k;
  return k;
}

void addCopy(std::vector<AlltoAllStep>* out, char* dst, const char* src, size_t bytes) {
  if (!bytes || dst == src) return;
  AlltoAllStep s;
  s.kind = AlltoAllStep::kCopy, s.dst = dst, s.src = src, s.bytes = bytes;
  out->push_back(std::move(s));
}

void addTransfer(AlltoAllStep* s, bool isSend, int peer, const char* buf, size_t bytes) {
  if (bytes) s->xfers.push_back({isSend, peer, const_cast<char*>(buf), bytes});
}

void addExchange(std::vector<AlltoAllStep>* out, AlltoAllStep s) {
  if (s.xfers.empty()) return;
  s.kind = AlltoAllStep::kExchange;
  out->push_back(std::move(s));
}

ncclResult_t selfCopy(const AlltoAllStepsIn& in, const char* send, std::vector<AlltoAllStep>* out) {
  const Sides s(in.layout, in.nRanks);
  const int me = in.rank;
  if (s.sendBytes[me] != s.recvBytes[me])
    return batonError(ncclInvalidUsage, "AlltoAll: rank %d sends %zu bytes to itself but expects %zu", me,
                      s.sendBytes[me], s.recvBytes[me]);
  addCopy(out, in.recvbuff + s.recvOff[me], send + s.sendOff[me], s.sendBytes[me]);
  return ncclSuccess;
}

void bruck(const AlltoAllStepsIn& in, const char* send, char* homes, std::vector<AlltoAllStep>* out) {
  const Sides s(in.layout, in.nRanks);
  const int n = in.nRanks, me = in.rank;
  const size_t block = s.sendBytes[0];
  std::vector<const char*> at(n);  // where slot i's bytes are now
  std::vector<int> home(n, -1);    // -1: still in sendbuff; 0, 1: which scratch home
  for (int i = 0; i < n; ++i) at[i] = send + s.sendOff[bruckFirstSource(me, n, i)];
  for (int k = 0; k < bruckRounds(n); ++k) {
    AlltoAllStep x;
    for (int i = 1; i < n; ++i)
      if (bruckMoves(i, k)) addTransfer(&x, true, bruckSendPeer(me, n, k), at[i], block);
    for (int i = 1; i < n; ++i) {
      if (!bruckMoves(i, k)) continue;
      char* dst;
      if (highestBit(i) == k) {  // its last move: straight to its place in recvbuff
        dst = in.recvbuff + s.recvOff[bruckLastDest(me, n, i)];
      } else {  // the home it is not being sent from
        home[i] = home[i] == 0 ? 1 : 0;
        dst = homes + ((size_t)home[i] * n + i) * block;
      }
      addTransfer(&x, false, bruckRecvPeer(me, n, k), dst, block);
      at[i] = dst;
    }
    addExchange(out, std::move(x));
  }
}

}  // namespace

size_t alltoallStepsScratch(const AlltoAllStepsIn& in) {
  size_t bytes = inPlace(in) ? sendExtent(in) : 0;
  // Two homes per slot; only a slot with two bits set (index 3 and up) stops in one.
  if (in.algo == kAlltoAllBruck && in.nRanks > 3) bytes += 2 * (size_t)in.nRanks * in.layout[0];
  return bytes;
}

ncclResult_t alltoallSteps(const AlltoAllStepsIn& in, char* scratch, std::vector<AlltoAllStep>* out) {
  const int n = in.nRanks, me = in.rank;
  const Sides s(in.layout, n);
  out->clear();
  if (in.algo != kAlltoAllDirect && in.algo != kAlltoAllPairwise && in.algo != kAlltoAllBruck)
    return batonError(ncclInternalError, "AlltoAll: algorithm %d (%s) has no steps", in.algo,
                      alltoallAlgoName(in.algo));
  if (in.algo == kAlltoAllBruck && !in.uniform)
    return batonError(ncclInvalidUsage,
                      "AlltoAll (Bruck) on device buffers needs every block the same size (ncclAlltoAll)");
  const char* send = in.sendbuff;
  if (inPlace(in)) {  // every block is read and overwritten: send from a copy
    addCopy(out, scratch, in.sendbuff, sendExtent(in));
    send = scratch, scratch += sendExtent(in);
  }
  BATON_CHECK(selfCopy(in, send, out));
  if (in.algo == kAlltoAllBruck) {
    bruck(in, send, scratch, out);
  } else if (in.algo == kAlltoAllPairwise) {
    for (int i = 1; i < n; ++i) {
      const int to = pairwiseSendPeer(me, n, i), from = pairwiseRecvPeer(me, n, i);
      AlltoAllStep x;
      addTransfer(&x, true, to, send + s.sendOff[to], s.sendBytes[to]);
      addTransfer(&x, false, from, in.recvbuff + s.recvOff[from], s.recvBytes[from]);
      addExchange(out, std::move(x));
    }
  } else {
    AlltoAllStep x;
    for (int p = 0; p < n; ++p)
      if (p != me) addTransfer(&x, true, p, send + s.sendOff[p], s.sendBytes[p]);
    for (int p = 0; p < n; ++p)
      if (p != me) addTransfer(&x, false, p, in.recvbuff + s.recvOff[p], s.recvBytes[p]);
    addExchange(out, std::move(x));
  }
  return ncclSuccess;
}

}  // namespace baton

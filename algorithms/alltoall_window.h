// AlltoAll by direct stores into the peers' windows: the fourth AlltoAll algorithm (lesson 12).
//
// Computes: recv[j] = rank j's block for me, as the round algorithms do (alltoall.h), where every
// rank's receive buffer lies in a window every rank maps (ranks of one host, lesson 09). Each rank
// posts in its pad where each peer's block must land in its window, then copies each of its send
// blocks straight into the receiving rank's buffer: one copy per byte, no FIFO slot, no message per
// block. It is the AllGather by stores of NCCL 2.27's symmetric kernels [ST] with one block per peer,
// and what DeepEP's intranode kernels do with NVLink stores. The posts also carry the byte counts,
// so an AlltoAllv whose counts disagree between sender and receiver fails on both, moving nothing
// between them, instead of writing past a block.
//
// Memory-ordering contract: that of the symmetric barriers (symmetric.h), on channel 0's lines.
// A rank writes its post with plain stores; its arrive (release) publishes the post. A rank reads a
// peer's post and stores into the peer's buffer only after acquiring every arrive, which also says
// the peer has entered this operation (it no longer reads its buffer's previous contents). Depart
// (release) follows a rank's last store; it returns once it has acquired every depart, so every
// block sent to it has landed. A rank rewrites its post only in its next AlltoAll, after every peer
// departed from this one, so no peer still reads it.
#pragma once

#include "coll_args.h"
#include "symmetric.h"

namespace baton {

struct AlltoAllWindowArgs {
  int rank = 0, nRanks = 1;
  SymPad* const* pads = nullptr;  // every rank's pad, as this process reaches it
  uint64_t epoch = 0;             // channel 0's count of symmetric operations + 1
  const char* send = nullptr;
  const size_t *sendBytes = nullptr, *sendOffset = nullptr;  // by peer
  const size_t *recvBytes = nullptr, *recvOffset = nullptr;  // by peer; offsets from the window's base
  uint64_t window = SymAlltoAllPost::kNoWindow;              // serial of the window holding this rank's blocks
  char* const* peerWindow = nullptr;                         // by rank: that rank's window, as this process reaches it
};

// Why a peer's block did not move (the host turns it into an error naming both ranks).
struct AlltoAllWindowFault {
  enum Kind { kNone, kOtherWindow, kSendMismatch, kRecvMismatch } kind = kNone;
  int peer = -1;
  uint64_t mine = 0, theirs = 0;  // window serials or byte counts, by kind
};

BATON_HD void alltoallWindowPost(const AlltoAllWindowArgs& a) {
  SymAlltoAllPost& post = a.pads[a.rank]->alltoall;
  post.window = a.window;
  for (int p = 0; p < a.nRanks; ++p) post.peer[p] = {a.sendBytes[p], a.recvBytes[p], a.recvOffset[p]};
}

// Whether my block for peer p may move; the first reason it may not goes into *fault.
BATON_HD bool alltoallWindowAgrees(const AlltoAllWindowArgs& a, const SymAlltoAllPost& theirs, int p,
                                   AlltoAllWindowFault* fault) {
  AlltoAllWindowFault f;
  f.peer = p;
  const SymAlltoAllPost::Peer& t = theirs.peer[a.rank];
  if (theirs.window != a.window)
    f.kind = AlltoAllWindowFault::kOtherWindow, f.mine = a.window, f.theirs = theirs.window;
  else if (t.recvBytes != a.sendBytes[p])
    f.kind = AlltoAllWindowFault::kSendMismatch, f.mine = a.sendBytes[p], f.theirs = t.recvBytes;
  else if (t.sendBytes != a.recvBytes[p])
    f.kind = AlltoAllWindowFault::kRecvMismatch, f.mine = a.recvBytes[p], f.theirs = t.sendBytes;
  if (f.kind == AlltoAllWindowFault::kNone) return true;
  if (fault->kind == AlltoAllWindowFault::kNone) *fault = f;
  return false;
}

// False when the operation failed (abort, timeout) or a peer disagreed (*fault, set by thread 0,
// says which).
BATON_HD bool runAlltoAllWindow(ExecCtx& ctx, const AlltoAllWindowArgs& a, AlltoAllWindowFault* fault) {
  CollArgs b;
  b.rank = a.rank, b.nRanks = a.nRanks, b.channel = 0;
  b.sym.pads = a.pads, b.sym.epoch = a.epoch;
  if (threadId(ctx) == 0) alltoallWindowPost(a);
  if (!symBarrier(ctx, b, false)) return false;
  AlltoAllWindowFault f;  // every thread finds the same; thread 0 reports it
  // Starting at the next rank spreads the stores: no rank is every rank's first target.
  for (int i = 0; i < a.nRanks; ++i) {
    const int p = (a.rank + 1 + i) % a.nRanks;
    const SymAlltoAllPost& theirs = a.pads[p]->alltoall;
    if (!alltoallWindowAgrees(a, theirs, p, &f) || a.window == SymAlltoAllPost::kNoWindow) continue;
    copyBytes(ctx, a.peerWindow[p] + theirs.peer[a.rank].recvOffset, a.send + a.sendOffset[p], a.sendBytes[p]);
  }
  blockBarrier();
  if (threadId(ctx) == 0) *fault = f;
  return symBarrier(ctx, b, true) && f.kind == AlltoAllWindowFault::kNone;
}

}  // namespace baton

// IB back-end, data path: irecv RDMA-writes a clear-to-send entry into the sender's fifo; isend
// picks the candidate buffer, RDMA-writes the payload, then RDMA-writes-with-immediate the
// {tag, size, index} record; test() drives both through the comm's CQ. Ordering: ib_backend.cc.
#include <arpa/inet.h>

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>

#include "ib_comm.h"
#include "misc/debug.h"

namespace baton {
namespace netib {

enum WrKind : uint64_t { kWrSend = 1, kWrCts = 2, kWrRecv = 3 };
namespace {
uint64_t wrId(WrKind k, int slot) { return (uint64_t)k << 32 | (uint32_t)slot; }

ncclResult_t failedAgain(Comm* c) { return batonError(c->failed, "%s", c->failure.c_str()); }
ncclResult_t pollCq(Comm* c);

ncclResult_t postSend(Comm* c, ibv_send_wr* wr, const char* op) {
  ibv_send_wr* bad = nullptr;
  if (int rc = ibv_post_send(c->qp, wr, &bad))
    return batonError(ncclSystemError, "IB %s to %s: ibv_post_send failed: %s", op, c->peer.c_str(), strerror(rc));
  return ncclSuccess;
}
}  // namespace

ncclResult_t ibIsend(Comm* c, void* data, size_t size, uint64_t tag, IbMr* mr, NetRequest** request) {
  *request = nullptr;
  if (!c->isSend) return batonError(ncclInvalidUsage, "IB isend on a receive comm (peer %s)", c->peer.c_str());
  if (c->failed) return failedAgain(c);
  const int slot = (int)(c->seq % kMaxRequests);
  Request& r = c->reqs[slot];
  if (r.inUse) return ncclSuccess;  // the send kMaxRequests ago has not been tested yet
  CtsEntry& e = c->mem->cts[slot];
  // Acquire: the entry's body was placed before its seq word (ib_backend.cc).
  if (std::atomic_ref<uint64_t>(e.seq).load(std::memory_order_acquire) != c->seq + 1) return ncclSuccess;
  if (e.n < 1 || e.n > kNetMaxRecvs)
    return batonError(ncclRemoteError, "IB isend: malformed clear-to-send from %s (%d buffers)", c->peer.c_str(), e.n);
  int i = 0;
  while (i < e.n && e.tag[i] != (tag & kNetTagMatchMask)) i++;
  if (i == e.n)
    return batonError(ncclRemoteError, "IB isend: tag 0x%llx matches none of the %d buffers peer %s offered",
                      (unsigned long long)tag, e.n, c->peer.c_str());
  if (size > e.size[i])
    return batonError(ncclRemoteError, "IB isend: oversized frame for peer %s: %zu bytes for its %llu-byte buffer %d",
                      c->peer.c_str(), size, (unsigned long long)e.size[i], i);
  if (size > c->dev->attr.max_msg_sz)
    return batonError(ncclInvalidArgument, "IB isend: %zu bytes exceed %s's %u-byte message limit", size,
                      c->dev->name.c_str(), c->dev->attr.max_msg_sz);
  const uintptr_t p = (uintptr_t)data;
  if (size && (!mr || p < mr->start || p + size > mr->end))
    return batonError(ncclInvalidArgument, "IB isend: buffer %p (%zu bytes) is not inside its registration", data,
                      size);

  DoneRecord& rec = c->mem->rec[slot];
  rec = DoneRecord{tag, size, (uint32_t)i, (uint32_t)(c->seq + 1)};
  ibv_sge sge[2] = {{p, (uint32_t)size, size ? mr->mr->lkey : 0}, {(uintptr_t)&rec, sizeof rec, c->memMr->lkey}};
  ibv_send_wr wr[2]{};
  wr[0].wr_id = wrId(kWrSend, slot);
  wr[0].sg_list = &sge[0];
  wr[0].num_sge = 1;
  wr[0].opcode = IBV_WR_RDMA_WRITE;
  wr[0].wr.rdma = {e.addr[i], e.rkey[i]};
  wr[0].next = &wr[1];
  wr[1].wr_id = wrId(kWrSend, slot);
  wr[1].sg_list = &sge[1];
  wr[1].num_sge = 1;
  wr[1].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr[1].imm_data = htonl((uint32_t)slot);
  wr[1].send_flags = IBV_SEND_SIGNALED;  // the only completion of the send; frees wr[0] too
  wr[1].wr.rdma = {c->remote.memAddr + offsetof(CommMem, rec) + slot * sizeof(DoneRecord), c->remote.memRkey};
  BATON_CHECK(postSend(c, size ? &wr[0] : &wr[1], "isend"));
  r = Request{c, true, false, c->seq, size, i, tag};
  c->seq++;
  *request = reinterpret_cast<NetRequest*>(&r);
  return ncclSuccess;
}

ncclResult_t ibIrecv(Comm* c, int n, void** data, const size_t* sizes, const uint64_t* tags, NetMemHandle** mrs,
                     NetRequest** request) {
  *request = nullptr;
  if (c->isSend) return batonError(ncclInvalidUsage, "IB irecv on a send comm (peer %s)", c->peer.c_str());
  if (n < 1 || n > kNetMaxRecvs)
    return batonError(ncclInvalidArgument, "IB irecv: %d buffers (1..%d allowed)", n, kNetMaxRecvs);
  if (c->failed) return failedAgain(c);
  const int slot = (int)(c->seq % kMaxRequests);
  Request& r = c->reqs[slot];
  if (r.inUse) return ncclSuccess;
  // Bound the send queue: CTS completions are only reaped by test(), which may lag behind.
  if (c->ctsPending >= kMaxRequests) BATON_CHECK(pollCq(c));
  if (c->ctsPending >= kMaxRequests) return ncclSuccess;
  // Local staging of the CTS entry: the HCA reads it until the write completes; the slot is reused
  // only after its message arrived, which the sender sent only after reading the entry.
  CtsEntry& e = c->mem->cts[slot];
  for (int i = 0; i < n; i++) {
    IbMr* mr = reinterpret_cast<IbMr*>(mrs ? mrs[i] : nullptr);
    const uintptr_t p = (uintptr_t)data[i];
    if (sizes[i] && (!mr || p < mr->start || p + sizes[i] > mr->end))
      return batonError(ncclInvalidArgument, "IB irecv: buffer %d (%p, %zu bytes) is not inside its registration", i,
                        data[i], sizes[i]);
    e.addr[i] = p;
    e.size[i] = sizes[i];
    e.rkey[i] = mr ? mr->mr->rkey : 0;
    e.tag[i] = (uint8_t)(tags[i] & kNetTagMatchMask);
  }
  e.n = n;
  e.seq = c->seq + 1;
  // The receive WR the sender's write-with-immediate consumes goes in before the CTS can be seen.
  ibv_recv_wr rwr{};
  rwr.wr_id = wrId(kWrRecv, slot);
  ibv_recv_wr* badR = nullptr;
  if (int rc = ibv_post_recv(c->qp, &rwr, &badR))
    return batonError(ncclSystemError, "IB irecv from %s: ibv_post_recv failed: %s", c->peer.c_str(), strerror(rc));
  ibv_sge sge{(uintptr_t)&e, sizeof e, c->memMr->lkey};
  ibv_send_wr wr{};
  wr.wr_id = wrId(kWrCts, slot);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;  // drains the send queue; nothing waits on it
  wr.wr.rdma = {c->remote.memAddr + offsetof(CommMem, cts) + slot * sizeof(CtsEntry), c->remote.memRkey};
  BATON_CHECK(postSend(c, &wr, "irecv (clear-to-send)"));
  c->ctsPending++;
  r = Request{c, true, false, c->seq, 0, 0, 0};
  c->seq++;
  *request = reinterpret_cast<NetRequest*>(&r);
  return ncclSuccess;
}

// A received record must describe the message the slot's request is waiting for.
namespace {
ncclResult_t recvArrived(Comm* c, const ibv_wc& wc) {
  const uint32_t slot = ntohl(wc.imm_data);
  Request* r = slot < (uint32_t)kMaxRequests ? &c->reqs[slot] : nullptr;
  const DoneRecord rec = r ? c->mem->rec[slot] : DoneRecord{};
  if (!r || wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM || !r->inUse || r->done || rec.seq != (uint32_t)(r->seq + 1) ||
      rec.index >= (uint32_t)c->mem->cts[slot].n || rec.size > c->mem->cts[slot].size[rec.index]) {
    c->failed = ncclRemoteError;
    c->failure = "IB test: peer " + c->peer + " sent a malformed completion (slot " + std::to_string(slot) +
                 ", index " + std::to_string(rec.index) + ", " + std::to_string(rec.size) + " bytes)";
    return failedAgain(c);
  }
  r->size = rec.size;
  r->tag = rec.tag;
  r->index = (int)rec.index;
  r->done = true;
  return ncclSuccess;
}

ncclResult_t pollCq(Comm* c) {
  if (c->failed) return failedAgain(c);
  ibv_wc wcs[16];
  const int n = ibv_poll_cq(c->cq, 16, wcs);
  if (n < 0) return batonError(ncclSystemError, "IB test (peer %s): ibv_poll_cq failed", c->peer.c_str());
  for (int k = 0; k < n; k++) {
    const ibv_wc& wc = wcs[k];
    const uint64_t kind = wc.wr_id >> 32;
    const int slot = (int)(wc.wr_id & 0xffffffff);
    if (wc.status != IBV_WC_SUCCESS) {
      char msg[512];
      snprintf(msg, sizeof msg, "IB %s with peer %s failed: %s (status %d, vendor error 0x%x)",
               kind == kWrSend  ? "send"
               : kind == kWrCts ? "clear-to-send"
                                : "receive",
               c->peer.c_str(), ibv_wc_status_str(wc.status), (int)wc.status, wc.vendor_err);
      c->failed = ncclRemoteError;
      c->failure = msg;
      return failedAgain(c);
    }
    if (kind == kWrSend) c->reqs[slot].done = true;
    else if (kind == kWrCts) c->ctsPending--;
    else if (kind == kWrRecv) BATON_CHECK(recvArrived(c, wc));
  }
  return ncclSuccess;
}
}  // namespace

ncclResult_t ibTest(NetRequest* request, int* done, size_t* size, int* index, uint64_t* tag) {
  *done = 0;
  Request* r = reinterpret_cast<Request*>(request);
  if (!r->done) {
    if (ncclResult_t res = pollCq(r->comm); res != ncclSuccess) {
      r->inUse = false;
      return res;
    }
    if (!r->done) return ncclSuccess;
  }
  if (size) *size = r->size;
  if (index) *index = r->index;
  if (tag) *tag = r->tag;
  r->inUse = false;
  *done = 1;
  return ncclSuccess;
}

}  // namespace netib
}  // namespace baton

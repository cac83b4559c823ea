// The socket back-end's data path (lesson 08): isend / irecv post requests, test() drives the
// control socket without blocking and reports completion. Requests of one comm complete in the
// order they were posted, because they share one byte stream.
//
// Memory-ordering contract: a data-socket task's bytes are written into the receive buffer by a
// helper thread, which then decrements Request::tasksLeft with release; test() sees it reach 0
// with acquire before it reports the request done, so the caller (the proxy) reads complete data.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "exec_model.h"
#include "misc/debug.h"
#include "socket_comm.h"

namespace baton {
namespace netsock {

std::vector<Task> taskLayout(char* base, size_t size, int nSocks, uint64_t seq) {
  std::vector<Task> tasks;
  if (nSocks == 0 || size < kMinTaskBytes) return tasks;  // inline on the control socket
  const size_t chunk = std::max(kMinTaskBytes, (size + nSocks - 1) / nSocks);
  uint64_t i = 0;
  for (size_t off = 0; off < size; off += chunk, ++i)
    tasks.push_back(Task{(int)((seq + i) % nSocks), base + off, std::min(chunk, size - off), false, nullptr});
  return tasks;
}

void delayAcks(int fd) {
  const int zero = 0;
  setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &zero, sizeof zero);
}

namespace {

ncclResult_t reportFailure(Comm* c) {
  std::lock_guard<std::mutex> lock(c->errMu);
  return batonError(c->errCode, "%s", c->error.c_str());
}

void postTasks(Comm* c, Request* r, char* base, size_t size) {
  std::vector<Task> tasks = taskLayout(base, size, (int)c->data.size(), c->seq++);
  if (tasks.empty()) {
    r->inlineBytes = size;
    return;
  }
  r->tasksLeft.store((int)tasks.size(), std::memory_order_relaxed);
  for (Task& t : tasks) {
    t.send = r->send;
    t.req = r;
    c->helpers[t.sock % c->helpers.size()]->push(t);
  }
}

// Moves what the control socket takes now. Returns false when it would block or failed.
bool sendCtrl(Comm* c, Request* r) {
  const size_t total = sizeof r->hdr + r->inlineBytes;
  while (r->hdrDone + r->inlineDone < total) {
    iovec iov[2];
    int n = 0;
    if (r->hdrDone < sizeof r->hdr)
      iov[n++] = {reinterpret_cast<char*>(&r->hdr) + r->hdrDone, sizeof r->hdr - r->hdrDone};
    if (r->inlineDone < r->inlineBytes) iov[n++] = {r->data[0] + r->inlineDone, r->inlineBytes - r->inlineDone};
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = n;
    ssize_t w = sendmsg(c->ctrl, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return false;
      c->fail(ncclRemoteError, "NET/Socket: send to " + c->peerName() + " failed: " + describeSocketError(errno));
      return false;
    }
    size_t left = (size_t)w;
    const size_t h = std::min(left, sizeof r->hdr - r->hdrDone);
    r->hdrDone += h;
    r->inlineDone += left - h;
  }
  return true;
}

// Reads into [p + *done, p + n). False when it would block or failed (EOF: `what` was cut short).
bool recvSome(Comm* c, char* p, size_t n, size_t* done, const char* what) {
  while (*done < n) {
    ssize_t r = recv(c->ctrl, p + *done, n - *done, MSG_DONTWAIT);
    if (r > 0) {
      *done += r;
      continue;
    }
    if (r == 0) {
      c->fail(ncclRemoteError, "NET/Socket: connection from " + c->peerName() + " closed " +
                                   (*done == 0 && !strcmp(what, "header")
                                        ? std::string("by the peer")
                                        : "after " + std::to_string(*done) + " of " + std::to_string(n) +
                                              " bytes of a frame " + what + " (truncated frame)"));
      return false;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return false;
    c->fail(ncclRemoteError, "NET/Socket: receive from " + c->peerName() + " failed: " + describeSocketError(errno));
    return false;
  }
  return true;
}

bool recvCtrl(Comm* c, Request* r) {
  if (r->index < 0) {
    if (!recvSome(c, reinterpret_cast<char*>(&r->hdr), sizeof r->hdr, &r->hdrDone, "header")) return false;
    for (int i = 0; i < r->n && r->index < 0; ++i)
      if ((r->tags[i] & kNetTagMatchMask) == (r->hdr.tag & kNetTagMatchMask)) r->index = i;
    if (r->index < 0) {
      char tag[32];
      snprintf(tag, sizeof tag, "0x%llx", (unsigned long long)r->hdr.tag);
      c->fail(ncclRemoteError, "NET/Socket: frame from " + c->peerName() + " has tag " + tag +
                                   ", which matches none of the " + std::to_string(r->n) + " posted buffers");
      return false;
    }
    if (r->hdr.size > r->sizes[r->index]) {
      c->fail(ncclRemoteError, "NET/Socket: oversized frame from " + c->peerName() + ": " +
                                   std::to_string(r->hdr.size) + " bytes for a " + std::to_string(r->sizes[r->index]) +
                                   "-byte buffer");
      return false;
    }
    postTasks(c, r, r->data[r->index], r->hdr.size);
  }
  if (!recvSome(c, r->data[r->index], r->inlineBytes, &r->inlineDone, "payload")) return false;
  // The kernel leaves the mode only when its delayed-ACK timer fires (tens of ms after a message
  // it has not acknowledged), so a connection busy with messages is set again at most once a ms.
  if (c->delayedAck) {
    const uint64_t now = nowNs();
    if (now - c->delayedAckAt > 1000000) delayAcks(c->ctrl), c->delayedAckAt = now;
  }
  return true;
}

// Advances the comm's requests in order as far as the sockets allow.
void progress(Comm* c) {
  for (Request* r : c->queue) {
    if (r->done) continue;
    if (c->failed.load()) return;
    if (!(r->send ? sendCtrl(c, r) : recvCtrl(c, r))) return;
    if (r->tasksLeft.load(std::memory_order_acquire) > 0) return;
    r->done = true;
  }
}

}  // namespace

ncclResult_t postSend(Comm* c, void* data, size_t size, uint64_t tag, Request** out) {
  *out = nullptr;
  if (c->failed.load()) return reportFailure(c);
  if (c->queue.size() >= (size_t)kMaxRequests) return ncclSuccess;  // try again later
  auto* r = new Request;
  r->comm = c;
  r->send = true;
  r->data[0] = static_cast<char*>(data);
  r->sizes[0] = size;
  r->tags[0] = tag;
  r->hdr = {tag, size};
  r->index = 0;
  postTasks(c, r, r->data[0], size);
  c->queue.push_back(r);
  *out = r;
  return ncclSuccess;
}

ncclResult_t postRecv(Comm* c, int n, void** data, const size_t* sizes, const uint64_t* tags, Request** out) {
  *out = nullptr;
  if (n < 1 || n > kNetMaxRecvs) return batonError(ncclInternalError, "NET/Socket: irecv of %d buffers", n);
  if (c->failed.load()) return reportFailure(c);
  if (c->queue.size() >= (size_t)kMaxRequests) return ncclSuccess;
  auto* r = new Request;
  r->comm = c;
  r->n = n;
  for (int i = 0; i < n; ++i) r->data[i] = static_cast<char*>(data[i]), r->sizes[i] = sizes[i], r->tags[i] = tags[i];
  c->queue.push_back(r);
  *out = r;
  return ncclSuccess;
}

void profileRequestStart(Request* r, const NetProfileRef* ref, int fd) {
  if (!ref || !ref->report) return;
  r->profRef = ref;
  r->profData.type = ncclProfileSocket;
  r->profData.sock = {fd, r->send ? 1 : 0, r->hdr.size};
  ref->report(&r->profEvent, ncclProfilerNetEventStart, const_cast<NetProfileRef*>(ref),
              NCCL_PROFILER_NET_TYPE_SOCK | NCCL_PROFILER_NET_SOCKET_VER, &r->profData);
}

void profileRequestStop(Request* r) {
  if (r->profEvent) r->profRef->report(&r->profEvent, ncclProfilerNetEventStop, nullptr, 0, nullptr);
  r->profEvent = nullptr;
}

ncclResult_t testRequest(Request* r, int* done, size_t* size, int* index, uint64_t* tag) {
  Comm* c = r->comm;
  *done = 0;
  progress(c);
  if (c->failed.load()) {
    profileRequestStop(r);
    // A helper may still be inside one of this request's tasks: then the comm keeps it, and
    // ~Comm frees it after joining the helpers.
    if (r->tasksLeft.load(std::memory_order_acquire) == 0) {
      c->queue.erase(std::find(c->queue.begin(), c->queue.end(), r));
      delete r;
    }
    return reportFailure(c);
  }
  if (!r->done) return ncclSuccess;
  profileRequestStop(r);
  *done = 1;
  if (size) *size = r->hdr.size;
  if (index) *index = r->index;
  if (tag) *tag = r->hdr.tag;
  c->queue.erase(std::find(c->queue.begin(), c->queue.end(), r));
  delete r;
  return ncclSuccess;
}

int recvPollFd(Comm* c) {
  for (Request* r : c->queue)
    if (!r->done) return (r->index >= 0 && r->inlineDone == r->inlineBytes && r->tasksLeft.load() > 0) ? -1 : c->ctrl;
  return c->ctrl;
}

}  // namespace netsock
}  // namespace baton

// The socket back-end's helper threads (NCCL_SOCKET_NTHREADS): each one moves the data-socket
// tasks of its sockets (socket i belongs to helper i % nThreads) in the order they were posted.
// Both ends cut and assign tasks the same way, so a helper's next task always meets the peer's.
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

#include "socket_comm.h"

namespace baton {
namespace netsock {

Helper::Helper(Comm* comm, int) : comm_(comm), thread_([this] { run(); }) {}

Helper::~Helper() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
  }
  cv_.notify_all();
  thread_.join();
}

void Helper::push(const Task& t) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push_back(t);
  }
  cv_.notify_one();
}

void Helper::run() {
  while (true) {
    Task t;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_.load() || !tasks_.empty(); });
      if (stop_.load()) return;
      t = tasks_.front();
      tasks_.pop_front();
    }
    if (comm_->failed.load() || !doTask(t)) {
      // The comm is dead: the remaining tasks will never run; test() reports the failure.
      std::lock_guard<std::mutex> lock(mu_);
      tasks_.clear();
    }
    t.req->tasksLeft.fetch_sub(1, std::memory_order_release);
  }
}

bool Helper::doTask(const Task& t) {
  const int fd = comm_->data[t.sock];
  size_t done = 0;
  while (done < t.len) {
    ssize_t n = t.send ? send(fd, t.ptr + done, t.len - done, MSG_DONTWAIT | MSG_NOSIGNAL)
                       : recv(fd, t.ptr + done, t.len - done, MSG_DONTWAIT);
    if (n > 0) {
      done += n;
      continue;
    }
    if (n == 0) {
      comm_->fail(ncclRemoteError, "NET/Socket: data socket " + std::to_string(t.sock) + " from " + comm_->peerName() +
                                       " closed after " + std::to_string(done) + " of " + std::to_string(t.len) +
                                       " bytes (truncated frame)");
      return false;
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      comm_->fail(ncclRemoteError, std::string("NET/Socket: ") + (t.send ? "send to " : "receive from ") +
                                       comm_->peerName() + " (data socket " + std::to_string(t.sock) +
                                       ") failed: " + describeSocketError(errno));
      return false;
    }
    if (stop_.load() || comm_->failed.load()) return false;
    pollfd pfd{fd, (short)(t.send ? POLLOUT : POLLIN), 0};
    poll(&pfd, 1, 100);  // wake now and then to see stop_ (closing also shuts the socket down)
  }
  return true;
}

}  // namespace netsock
}  // namespace baton

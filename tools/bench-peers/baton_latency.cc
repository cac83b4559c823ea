// baton-latency: baton's row of the latency table (latency_table.h; tools/scripts/bench-peers.sh and
// tools/scripts/bench-net.sh --latency): small AllReduce, Broadcast and a send/recv ping-pong through
// the NCCL API, one rank per process, started by baton-run or by hand with NCCL_COMM_ID.
//
//   baton-run -n 2 build/bin/baton-latency [--buffers plain|window] [--sizes 8,64,1K] [--ops allreduce]
//                                          [-n ITERS] [-w WARMUP] [-s SAMPLES]
//   baton-run -n 2 build/bin/baton-latency --breakdown [-n ITERS] [-w WARMUP] [-s SAMPLES]
//
// --breakdown times the pieces of one host's 8-byte AllReduce instead (latency_breakdown.h).
// --buffers window puts both buffers in ncclMemAlloc memory registered as symmetric windows
// (NCCL_WIN_COLL_SYMMETRIC), the path NCCL 2.27+ takes for small collectives; plain (the default)
// uses ordinary heap buffers. Exit status 1 on a failed call or a wrong result, 2 on bad arguments.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "baton/launch.h"
#include "latency_breakdown.h"
#include "latency_table.h"
#include "nccl.h"

namespace {

struct BatonPeer {
  ncclComm_t comm = nullptr;
  int me = 0, n = 1;
  float* flag = nullptr;  // the barrier's one float
  int rank() const { return me; }
  int nranks() const { return n; }
  bool check(ncclResult_t r, const char* what) const {
    if (r != ncclSuccess) std::fprintf(stderr, "baton-latency: %s: %s\n", what, ncclGetLastError(comm));
    return r == ncclSuccess;
  }
  void barrier() { check(ncclAllReduce(flag, flag, 1, ncclFloat32, ncclSum, comm, nullptr), "barrier"); }
  double total(double v) {
    return check(ncclAllReduce(&v, &v, 1, ncclFloat64, ncclSum, comm, nullptr), "total") ? v : 1;
  }
  bool allreduce(const float* in, float* out, size_t count) {
    return check(ncclAllReduce(in, out, count, ncclFloat32, ncclSum, comm, nullptr), "ncclAllReduce");
  }
  bool broadcast(const float* in, float* out, size_t count, int root) {
    return check(ncclBroadcast(in, out, count, ncclFloat32, root, comm, nullptr), "ncclBroadcast");
  }
  bool send(const float* buf, size_t count, int peer) {
    return check(ncclSend(buf, count, ncclFloat32, peer, comm, nullptr), "ncclSend");
  }
  bool recv(float* buf, size_t count, int peer) {
    return check(ncclRecv(buf, count, ncclFloat32, peer, comm, nullptr), "ncclRecv");
  }
};

}  // namespace

int main(int argc, char** argv) {
  LatencyOptions o;
  std::vector<std::string> rest;
  std::string err = parseLatencyOptions(argc, argv, 1, &o, &rest);
  std::string buffers = "plain";
  bool breakdown = false;
  for (size_t i = 0; err.empty() && i < rest.size(); ++i) {
    if (rest[i] == "--buffers" && i + 1 < rest.size() && (rest[i + 1] == "plain" || rest[i + 1] == "window"))
      buffers = rest[++i];
    else if (rest[i] == "--breakdown") breakdown = true;
    else err = "unknown argument '" + rest[i] + "' (--buffers plain|window, --breakdown, --sizes, --ops, -n, -w, -s)";
  }
  if (!err.empty()) {
    std::fprintf(stderr, "baton-latency: %s\n", err.c_str());
    return 2;
  }
  BatonPeer base;
  if (!base.check(batonCommInitFromEnv(&base.comm, nullptr), "batonCommInitFromEnv")) return 1;
  base.check(ncclCommCount(base.comm, &base.n), "ncclCommCount");
  base.check(ncclCommUserRank(base.comm, &base.me), "ncclCommUserRank");
  static float flag = 0;
  base.flag = &flag;
  int status = 0;
  const size_t bytes = latencyTableBytes(o);
  if (breakdown) {
    status = runLatencyBreakdown(base.comm, o);
  } else if (buffers == "plain") {
    std::vector<float> in(bytes / sizeof(float)), out(bytes / sizeof(float));
    status = runLatencyTable(base, "baton", o, in.data(), out.data());
  } else {
    // Windows span whole pages (NCCL_WIN_REQUIRED_ALIGNMENT).
    const size_t span =
        (bytes + NCCL_WIN_REQUIRED_ALIGNMENT - 1) / NCCL_WIN_REQUIRED_ALIGNMENT * NCCL_WIN_REQUIRED_ALIGNMENT;
    ncclWindow_t winIn = nullptr, winOut = nullptr;
    void *in = nullptr, *out = nullptr;
    if (!base.check(ncclMemAlloc(&in, span), "ncclMemAlloc") || !base.check(ncclMemAlloc(&out, span), "ncclMemAlloc") ||
        !base.check(ncclCommWindowRegister(base.comm, in, span, &winIn, NCCL_WIN_COLL_SYMMETRIC),
                    "ncclCommWindowRegister") ||
        !base.check(ncclCommWindowRegister(base.comm, out, span, &winOut, NCCL_WIN_COLL_SYMMETRIC),
                    "ncclCommWindowRegister"))
      return 1;
    status = runLatencyTable(base, "baton-window", o, static_cast<float*>(in), static_cast<float*>(out));
    if (!base.check(ncclCommWindowDeregister(base.comm, winOut), "ncclCommWindowDeregister") ||
        !base.check(ncclCommWindowDeregister(base.comm, winIn), "ncclCommWindowDeregister"))
      status = 1;
    ncclMemFree(out), ncclMemFree(in);
  }
  if (!base.check(ncclCommDestroy(base.comm), "ncclCommDestroy")) status = 1;
  return status;
}

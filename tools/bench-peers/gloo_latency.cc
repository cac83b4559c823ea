// gloo-latency: Gloo's row of the latency table (latency_table.h; tools/scripts/bench-net.sh --latency):
// small AllReduce, Broadcast and a send/recv ping-pong through the same timing loop as baton-latency.
//
//   gloo-latency --rank R --size N (--iface IF | --host ADDR) --store DIR [--prefix P] [--family 4|6]
//                [--sizes 8,64,1K] [--ops allreduce,broadcast,pingpong] [-n ITERS] [-w WARMUP] [-s SAMPLES]
//
// One process per rank, meeting through a Gloo FileStore and connected over Gloo's TCP transport, as
// gloo-allreduce-ring. What each operation is:
//   allreduce  gloo::AllreduceRing (gloo-allreduce-ring's default), built once per size; it works in
//              place, so each call first copies the input into the output. Gloo's newer gloo::allreduce
//              (Algorithm::RING, what PyTorch's ProcessGroupGloo calls) took about 4 ms per call from
//              64 B up with each host pinned to one core: its TCP loop thread spins in epoll_wait and
//              the caller runs again only at the next scheduler tick. That measures the scheduler.
//   broadcast  gloo::broadcast, BroadcastOptions from root 0 (input on the root only, output everywhere)
//   pingpong   context->createUnboundBuffer, then send(peer, slot) + waitSend / recv(peer, slot) + waitRecv
//   barrier    gloo::barrier (BarrierOptions); the table's totals: a one-double gloo::allreduce
// Like ProcessGroupGloo, every call builds its options, and so its unbound buffers, anew: with the TCP
// transport that is a small allocation and no system call, and it is part of what a Gloo user pays.
// Exit status 1 on a failed call or a wrong result, 2 on bad arguments, 3 on a Gloo error.
#include <gloo/allreduce.h>
#include <gloo/allreduce_ring.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/math.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gloo_mesh.h"
#include "latency_table.h"

namespace {

// The arguments latency_table.h leaves: returns an error message, or "" when they are good.
std::string parseOptions(const std::vector<std::string>& args, GlooMeshOptions* o) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") return "help";
    const char* v = i + 1 < args.size() ? args[i + 1].c_str() : nullptr;
    const int mesh = parseMeshOption(a, v, o);
    if (mesh == 0) return "unknown argument '" + a + "'";
    if (mesh < 0) return "bad value for " + a + ": '" + (v ? v : "") + "'";
    ++i;
  }
  return checkMeshOptions(*o);
}

// The ping-pong's slot: below every collective's (their slots carry a prefix in the top byte).
constexpr uint64_t kPingPongSlot = 1;

template <class T>
void sumInto(void* c, const void* a, const void* b, size_t n) {
  gloo::sum<T>(c, a, b, n);
}

struct GlooPeer {
  std::shared_ptr<gloo::Context> ctx;
  int rank() const { return ctx->rank; }
  int nranks() const { return ctx->size; }
  void barrier() {
    gloo::BarrierOptions opts(ctx);
    gloo::barrier(opts);
  }
  double total(double v) {
    double sum = 0;
    gloo::AllreduceOptions opts(ctx);
    opts.setInput(&v, 1);
    opts.setOutput(&sum, 1);
    opts.setReduceFunction(sumInto<double>);
    gloo::allreduce(opts);
    return sum;
  }
  std::map<std::pair<float*, size_t>, std::unique_ptr<gloo::AllreduceRing<float>>> rings;
  bool allreduce(const float* in, float* out, size_t count) {
    auto& ring = rings[{out, count}];
    if (!ring) ring = std::make_unique<gloo::AllreduceRing<float>>(ctx, std::vector<float*>{out}, int(count));
    std::memcpy(out, in, count * sizeof(float));
    ring->run();
    return true;
  }
  bool broadcast(const float* in, float* out, size_t count, int root) {
    gloo::BroadcastOptions opts(ctx);
    if (ctx->rank == root) opts.setInput(const_cast<float*>(in), count);  // Gloo refuses it elsewhere
    opts.setOutput(out, count);
    opts.setRoot(root);
    gloo::broadcast(opts);
    return true;
  }
  bool send(const float* buf, size_t count, int peer) {
    auto ub = ctx->createUnboundBuffer(const_cast<float*>(buf), count * sizeof(float));
    ub->send(peer, kPingPongSlot);
    return ub->waitSend();
  }
  bool recv(float* buf, size_t count, int peer) {
    auto ub = ctx->createUnboundBuffer(buf, count * sizeof(float));
    ub->recv(peer, kPingPongSlot);
    return ub->waitRecv();
  }
};

int run(const GlooMeshOptions& o, const LatencyOptions& lo) {
  GlooPeer p;
  p.ctx = connectMesh(o);
  std::vector<float> in(latencyTableBytes(lo) / sizeof(float)), out(in.size());
  return runLatencyTable(p, "gloo", lo, in.data(), out.data());
}

}  // namespace

int main(int argc, char** argv) {
  LatencyOptions lo;
  GlooMeshOptions o;
  std::vector<std::string> rest;
  std::string err = parseLatencyOptions(argc, argv, 1, &lo, &rest);
  if (err.empty()) err = parseOptions(rest, &o);
  if (!err.empty()) {
    if (err != "help") std::fprintf(stderr, "gloo-latency: %s\n", err.c_str());
    std::fprintf(stderr,
                 "usage: gloo-latency --rank R --size N (--iface IF | --host ADDR) --store DIR [--prefix P]\n"
                 "       [--family 4|6] [--sizes 8,64,1K] [--ops allreduce,broadcast,pingpong] [-n ITERS]"
                 " [-w WARMUP] [-s SAMPLES]\n");
    return err == "help" ? 0 : 2;
  }
  try {
    return run(o, lo);
  } catch (const std::exception& e) {  // gloo::Exception and its IoException derive from it
    std::fprintf(stderr, "gloo-latency: rank %d: %s\n", o.rank, e.what());
    return 3;
  }
}

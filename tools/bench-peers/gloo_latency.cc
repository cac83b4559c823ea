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
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <sys/socket.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "latency_table.h"

namespace {

struct Options {
  int rank = -1, size = -1, family = 0;
  std::string iface, host, store, prefix = "gloo";
};

// The arguments latency_table.h leaves: returns an error message, or "" when they are good.
std::string parseOptions(const std::vector<std::string>& args, Options* o) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const char* v = i + 1 < args.size() ? args[i + 1].c_str() : nullptr;
    bool ok = v != nullptr;
    if (a == "--rank") ok = parseInt(v, 0, &o->rank);
    else if (a == "--size") ok = parseInt(v, 1, &o->size);
    else if (a == "--iface" && ok) o->iface = v;
    else if (a == "--host" && ok) o->host = v;
    else if (a == "--store" && ok) o->store = v;
    else if (a == "--prefix" && ok) o->prefix = v;
    else if (a == "--family") ok = parseInt(v, 4, &o->family) && (o->family == 4 || o->family == 6);
    else if (a == "-h" || a == "--help") return "help";
    else return "unknown argument '" + a + "'";
    if (!ok) return "bad value for " + a + ": '" + (v ? v : "") + "'";
    ++i;
  }
  if (o->rank < 0 || o->size < 1) return "--rank and --size are required";
  if (o->rank >= o->size) return "--rank must be below --size";
  if (o->iface.empty() == o->host.empty()) return "give exactly one of --iface and --host";
  if (o->store.empty()) return "--store DIR is required (a directory every rank can see)";
  return "";
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

int run(const Options& o, const LatencyOptions& lo) {
  gloo::transport::tcp::attr attr;
  if (!o.iface.empty()) attr.iface = o.iface;
  else attr.hostname = o.host;
  attr.ai_family = o.family == 4 ? AF_INET : o.family == 6 ? AF_INET6 : AF_UNSPEC;
  auto dev = gloo::transport::tcp::CreateDevice(attr);

  std::filesystem::create_directories(o.store);  // both ranks may race here: that is fine
  gloo::rendezvous::FileStore fileStore(o.store);
  // A prefix per run keeps a later run from reading an earlier run's addresses in the same store.
  gloo::rendezvous::PrefixStore store(o.prefix, fileStore);
  auto rctx = std::make_shared<gloo::rendezvous::Context>(o.rank, o.size);
  rctx->connectFullMesh(store, dev);

  GlooPeer p;
  p.ctx = rctx;
  std::vector<float> in(latencyTableBytes(lo) / sizeof(float)), out(in.size());
  return runLatencyTable(p, "gloo", lo, in.data(), out.data());
}

}  // namespace

int main(int argc, char** argv) {
  LatencyOptions lo;
  Options o;
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

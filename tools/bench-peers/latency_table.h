// The latency table that tools/scripts/bench-peers.sh --latency and tools/scripts/bench-net.sh --latency
// print (issue 45): small AllReduce, Broadcast and a send/recv ping-pong, timed by one loop shared by
// every library's program (baton_latency.cc, mpi_latency.cc, gloo_latency.cc), so that the only thing
// that differs between their rows is the library.
//
// Per operation and size: `warmup` calls, then `samples` samples of `iters` calls each, every sample
// starting after a barrier. A sample's time is rank 0's clock over its block divided by `iters` (the
// ranks' blocks end within one call of each other for these blocking operations). The ping-pong is
// OSU's osu_latency: rank 0 sends and waits for the answer, rank 1 answers, the time is half the round
// trip; ranks above 1 only join the barriers. Rank 0 prints one line per row:
//   latency <impl> <op> <bytes> <median_us> <min_us> <wrong>
// where wrong counts, over all ranks, the elements of each rank's last output that differ from the
// exact result (integer-valued floats, so every sum is exact in any order), plus one per rank whose
// call failed. The broadcast's root is not checked: MPI's root keeps the message in place.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_args.h"

struct LatencyOptions {
  std::vector<size_t> sizes{8, 64, 1024, 8192, 65536};
  std::vector<std::string> ops{"allreduce", "broadcast", "pingpong"};
  int iters = 200, warmup = 50, samples = 7;
};

// Reads --sizes 8,64K --ops allreduce,pingpong -n ITERS -w WARMUP -s SAMPLES from argv[first..];
// arguments it does not know are left for the caller in *rest. Returns "" or an error message.
inline std::string parseLatencyOptions(int argc, char** argv, int first, LatencyOptions* o,
                                       std::vector<std::string>* rest) {
  auto split = [](const char* s) {
    std::vector<std::string> out;
    std::string cur;
    for (const char* p = s; *p; ++p) (*p == ',') ? (out.push_back(cur), cur.clear()) : cur.push_back(*p);
    out.push_back(cur);
    return out;
  };
  for (int i = first; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    bool ok = v != nullptr;
    if (a == "--sizes" && v) {
      o->sizes.clear();
      for (const std::string& s : split(v)) {
        size_t b = 0;
        ok = ok && parseSize(s.c_str(), &b) && b >= 4 && b % 4 == 0;
        o->sizes.push_back(b);
      }
    } else if (a == "--ops" && v) {
      o->ops = split(v);
      for (const std::string& op : o->ops) ok = ok && (op == "allreduce" || op == "broadcast" || op == "pingpong");
    } else if (a == "-n") ok = parseInt(v, 1, &o->iters);
    else if (a == "-w") ok = parseInt(v, 0, &o->warmup);
    else if (a == "-s") ok = parseInt(v, 1, &o->samples);
    else {
      rest->push_back(a);
      continue;
    }
    if (!ok)
      return "bad value for " + a + ": '" + (v ? v : "") +
             "' (sizes: multiples of 4 bytes; ops: allreduce, "
             "broadcast, pingpong)";
    ++i;
  }
  return "";
}

// Peer: int rank() const, nranks() const; void barrier(); double total(double) (the sum over ranks);
// and, returning false on a library error,
// allreduce(const float* in, float* out, size_t n), broadcast(const float* in, float* out, size_t n,
// int root), send(const float*, size_t n, int peer), recv(float*, size_t n, int peer).
// `in` and `out` hold latencyTableBytes(o) each (the caller owns them: heap, or registered memory).
// Returns 0, or 1 if a call failed or a result was wrong on any rank (rank 0 prints the line either way).
inline size_t latencyTableBytes(const LatencyOptions& o) {
  size_t most = 0;
  for (size_t b : o.sizes) most = std::max(most, b);
  return most;
}

// `warmup` calls of once(), then `samples` samples of `iters` calls, barrier() before each: every
// sample's time per call in µs (divided by `per`: 2 halves a round trip), sorted. Stops at the first
// failed call, leaving *ok false.
template <class Once, class Barrier>
std::vector<double> sampleCalls(const LatencyOptions& o, double per, Once once, Barrier barrier, bool* ok) {
  for (int i = 0; i < o.warmup && *ok; ++i) *ok = once();
  std::vector<double> us;
  for (int s = 0; s < o.samples && *ok; ++s) {
    barrier();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < o.iters && *ok; ++i) *ok = once();
    const double t = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    us.push_back(t / o.iters / per);
  }
  std::sort(us.begin(), us.end());
  return us;
}

template <class Peer>
int runLatencyTable(Peer& p, const char* impl, const LatencyOptions& o, float* in, float* out) {
  const int me = p.rank(), n = p.nranks();
  int status = 0;
  for (const std::string& op : o.ops) {
    for (size_t bytes : o.sizes) {
      const size_t count = bytes / sizeof(float);
      // Small integers: exact sums, and a value that says which rank sent it.
      for (size_t i = 0; i < count; ++i) in[i] = float(i % 13 + me + 1);
      bool ok = true;
      auto once = [&]() {
        if (op == "allreduce") return p.allreduce(in, out, count);
        if (op == "broadcast") return p.broadcast(in, out, count, 0);
        if (n < 2 || me > 1) return true;  // pingpong: ranks 0 and 1 only
        if (me == 0) return p.send(in, count, 1) && p.recv(out, count, 1);
        return p.recv(out, count, 0) && p.send(in, count, 0);
      };
      const std::vector<double> us = sampleCalls(
          o, op == "pingpong" ? 2 : 1, once, [&] { p.barrier(); }, &ok);
      // The last call's output against the exact result (rank 0's values for broadcast; the peer's
      // for the ping-pong).
      long wrong = 0;
      for (size_t i = 0; i < count && ok && !(op == "broadcast" && me == 0); ++i) {
        const float base = float(i % 13 + 1);
        float want = out[i];
        if (op == "allreduce") want = float(n) * base + float(n) * float(n - 1) / 2;
        else if (op == "broadcast") want = base;
        else if (me <= 1 && n >= 2) want = base + float(1 - me);
        wrong += out[i] != want;
      }
      wrong = long(p.total(double(wrong + !ok)));
      if (wrong) status = 1;
      if (me == 0)
        std::printf("latency %s %s %zu %.3f %.3f %ld\n", impl, op.c_str(), bytes, us.empty() ? 0 : us[us.size() / 2],
                    us.empty() ? 0 : us[0], wrong);
      std::fflush(stdout);
    }
  }
  return status;
}

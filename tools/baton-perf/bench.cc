// One local rank's sweep: for every datatype, operator, root and size, out-of-place then in-place:
// warm-up calls, a barrier, `iters` timed calls (host monotonic clock), then `check` rounds of
// refill + one more call + a bitwise comparison of both buffers against host-computed expectations.
// nccl-tests' -m (operations per timed iteration, grouped), -N (cycles), -u (unaligned buffers) and
// -I/-K (per-iteration times) shape the timed loop the way they do there.
// Times and #wrong are combined over all ranks with baton's own collectives on the control
// communicator, so every rank ends up with the same rows.
//
// The check compares the whole used part of both allocations plus kGuard bytes after it: the output
// region must hold the expected values, and everything else (the send buffer of an out-of-place
// call, the rest of the receive buffer, the guard) must still hold what was there before the call.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "baton_perf.h"

namespace batonperf {
namespace {

constexpr size_t kGuard = 256;

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

unsigned char* allocBuffer(size_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, 4096, bytes) != 0) {
    std::fprintf(stderr, "baton-perf: cannot allocate %zu bytes for a buffer\n", bytes);
    std::fflush(stdout);
    std::_Exit(3);
  }
  fillSentinel(p, bytes);  // also faults the pages in before anything is timed
  return static_cast<unsigned char*>(p);
}

uint64_t seedOf(size_t size, ncclDataType_t type, Op op, int root, bool inPlace, int rep) {
  uint64_t s = 0x6a09e667f3bcc908ull;
  for (uint64_t v :
       {uint64_t(size), uint64_t(type), uint64_t(op), uint64_t(root + 1), uint64_t(inPlace), uint64_t(rep + 1)})
    s = (s ^ v) * 0x100000001b3ull + (s >> 29);
  return s;
}

class Sweep {
 public:
  Sweep(const Options& opt, const World& w, Worker* wk) : opt_(opt), w_(w), wk_(wk) {
    size_t maxBytes = 0;
    for (size_t s : sweepSizes(opt)) maxBytes = std::max(maxBytes, s);
    bytes_ = (maxBytes + size_t(opt.unalign) * 8 + kGuard + 4095) / 4096 * 4096;  // -u: up to 8-byte elements
    if (opt.localRegister == 0) {
      send_ = allocBuffer(bytes_);
      recv_ = allocBuffer(bytes_);
    } else {
      send_ = registeredBuffer(0);
      recv_ = registeredBuffer(1);
    }
    if (opt.check) expSend_ = allocBuffer(bytes_), expRecv_ = allocBuffer(bytes_);
  }
  ~Sweep() {
    for (int i = 0; i < 2; ++i) {
      if (win_[i]) ncclCommWindowDeregister(wk_->comm, win_[i]);
      if (handle_[i]) ncclCommDeregister(wk_->comm, handle_[i]);
    }
    if (opt_.localRegister) {
      ncclMemFree(send_), ncclMemFree(recv_);
      send_ = recv_ = nullptr;
    }
    for (unsigned char* p : {send_, recv_, expSend_, expRecv_}) std::free(p);
  }

  // -R 1: ncclMemAlloc + ncclCommRegister (nccl-tests' local registration); -R 2: a symmetric window.
  unsigned char* registeredBuffer(int i) {
    void* p = nullptr;
    ncclResult_t res = ncclMemAlloc(&p, bytes_);
    if (res == ncclSuccess) fillSentinel(p, bytes_);
    if (res == ncclSuccess && opt_.localRegister == 1) res = ncclCommRegister(wk_->comm, p, bytes_, &handle_[i]);
    if (res == ncclSuccess && opt_.localRegister == 2)
      res = ncclCommWindowRegister(wk_->comm, p, bytes_, &win_[i], NCCL_WIN_COLL_SYMMETRIC);
    if (res != ncclSuccess) {
      std::fprintf(stderr, "baton-perf: -R %d: %s\n", opt_.localRegister, ncclGetLastError(wk_->comm));
      std::fflush(stdout);
      std::_Exit(3);
    }
    return static_cast<unsigned char*>(p);
  }

  void run() {
    const CollDesc& cd = collDesc(opt_.coll);
    if (opt_.coll == Coll::HyperCube && (w_.nranks & (w_.nranks - 1)) != 0) return;  // main says why
    std::vector<int> roots{-1};
    if (cd.rooted) {
      roots.clear();
      if (opt_.root >= 0) roots.push_back(opt_.root);
      else
        for (int r = 0; r < w_.nranks; ++r) roots.push_back(r);
    }
    for (ncclDataType_t type : opt_.types)
      for (Op op : opt_.ops) {
        ncclRedOp_t ncop = makeOp(type, op);
        for (int root : roots) {
          long cycles = opt_.runCycles;  // -N: 0 runs until the process is killed
          do
            for (size_t size : sweepSizes(opt_)) {
              Row row = measureSize(size, type, op, ncop, root);
              if (wk_->report) wk_->report->row(row);
              wk_->rows.push_back(row);
            }
          while (--cycles != 0);
        }
        if (op == Op::MulSum) PERFCHECK(ncclRedOpDestroy(ncop, wk_->comm));
      }
  }

 private:
  ncclRedOp_t makeOp(ncclDataType_t type, Op op) {
    switch (op) {
      case Op::Sum: return ncclSum;
      case Op::Prod: return ncclProd;
      case Op::Max: return ncclMax;
      case Op::Min: return ncclMin;
      case Op::Avg: return ncclAvg;
      case Op::None: return ncclSum;
      case Op::MulSum: break;
    }
    uint64_t scalar = encodeInt(typeInfo(type), 2);  // the low typeSize bytes hold 2 in `type`
    ncclRedOp_t r;
    PERFCHECK(ncclRedOpCreatePreMulSum(&r, &scalar, type, ncclScalarHostImmediate, wk_->comm));
    return r;
  }

  void barrier() { PERFCHECK(ncclAllReduce(&barrierBuf_, &barrierBuf_, 1, ncclFloat32, ncclSum, wk_->ctrl, nullptr)); }

  Row measureSize(size_t size, ncclDataType_t type, Op op, ncclRedOp_t ncop, int root) {
    const TypeInfo& ti = typeInfo(type);
    const Counts c = collCounts(opt_.coll, size / ti.size, w_.nranks);
    Row row;
    row.bytes = std::max(c.send, c.recv) * ti.size;
    row.count = c.param;
    row.type = type;
    row.op = op;
    row.root = root;
    row.oop = measure(c, size, ti, op, ncop, root, false);
    if (!opt_.compare()) row.ip = measure(c, size, ti, op, ncop, root, true);
    if (opt_.perIterTiming) slowestIterations(&row);

    // Combine over every rank: time per -a, #wrong summed.
    double t[2] = {row.oop.timeUs, row.ip.timeUs};
    ncclRedOp_t tOp = opt_.average == 2 ? ncclMin : opt_.average == 3 ? ncclMax : ncclSum;
    if (opt_.average == 0 && wk_->rank != 0) t[0] = t[1] = 0;
    PERFCHECK(ncclAllReduce(t, t, 2, ncclFloat64, tOp, wk_->ctrl, nullptr));
    if (opt_.average == 1) t[0] /= w_.nranks, t[1] /= w_.nranks;
    double wrong[2] = {row.oop.wrong, row.ip.wrong};
    PERFCHECK(ncclAllReduce(wrong, wrong, 2, ncclFloat64, ncclSum, wk_->ctrl, nullptr));
    Half* halves[2] = {&row.oop, &row.ip};
    for (int i = 0; i < 2; ++i) {
      halves[i]->timeUs = t[i];
      halves[i]->wrong = wrong[i];
      collBandwidth(opt_.coll, c.param, ti.size, t[i] * 1e-6, w_.nranks, &halves[i]->algbw, &halves[i]->busbw);
    }
    return row;
  }

  // -I: every rank's per-iteration times, the slowest rank's per iteration, then the summary of
  // those after the first -K (nearest-rank p99, population standard deviation), as nccl-tests does.
  void slowestIterations(Row* row) {
    for (Half* h : {&row->oop, &row->ip}) {
      std::vector<double>& t = h->iter.timesUs;
      t.resize(size_t(opt_.iters), 0.0);
      PERFCHECK(ncclAllReduce(t.data(), t.data(), t.size(), ncclFloat64, ncclMax, wk_->ctrl, nullptr));
      std::vector<double> s(t.begin() + opt_.perIterSkip, t.end());
      if (s.empty()) continue;
      std::sort(s.begin(), s.end());
      const int m = int(s.size());
      double sum = 0, var = 0;
      for (double v : s) sum += v;
      const double avg = sum / m;
      for (double v : s) var += (v - avg) * (v - avg);
      PerIter& it = h->iter;
      it.minUs = s.front(), it.maxUs = s.back(), it.avgUs = avg;
      it.p99Us = s[size_t(std::min(m - 1, (m * 99 + 99) / 100 - 1))];
      it.stdevUs = std::sqrt(var / m);
      it.cvPct = avg > 0 ? it.stdevUs / avg * 100.0 : 0.0;
    }
  }

  Half measure(const Counts& c, size_t size, const TypeInfo& ti, Op op, ncclRedOp_t ncop, int root, bool inPlace) {
    const int rank = wk_->rank, n = w_.nranks;
    // -u: both buffers start unalign elements past their (page-aligned) allocation.
    unsigned char* const send = send_ + size_t(opt_.unalign) * ti.size;
    unsigned char* const recv = recv_ + size_t(opt_.unalign) * ti.size;
    const size_t avail = bytes_ - size_t(opt_.unalign) * ti.size;
    unsigned char* sendp = inPlace ? recv + c.sendInplace * size_t(rank) * ti.size : send;
    unsigned char* recvp = inPlace ? recv + c.recvInplace * size_t(rank) * ti.size : recv;
    auto launch = [&] {
      const ncclResult_t r =
          collLaunch(opt_.coll, sendp, recvp, c.param, ti.type, ncop, root < 0 ? 0 : root, rank, n, wk_->comm);
      if (r != ncclSuccess) {
        char what[160];
        std::snprintf(what, sizeof what, "%s of %zu x %s (op %s, root %d, %s) on rank %d", collDesc(opt_.coll).name,
                      c.param, ti.name, opName(op), root, inPlace ? "in place" : "out of place", rank);
        ncclFail(what, r, __FILE__, __LINE__);
      }
    };
    // Start from well-formed inputs: garbage could hold denormals, which are slow on CPUs.
    fillInputs(DataSpec{&ti, op, n, seedOf(size, ti.type, op, root, inPlace, -1)}, c, rank, sendp);

    // -m: aggIters operations per iteration, in one group (one launch each on a GPU).
    auto iteration = [&] {
      if (opt_.aggIters > 1) PERFCHECK(ncclGroupStart());
      for (int a = 0; a < opt_.aggIters; ++a) launch();
      if (opt_.aggIters > 1) PERFCHECK(ncclGroupEnd());
    };
    for (int i = 0; i < opt_.warmup; ++i) launch();
    barrier();
    Half h;
    if (opt_.perIterTiming) h.iter.timesUs.resize(size_t(opt_.iters));
    double elapsed = 0;
    // The loop is timed as one block, as nccl-tests and the MPI peers time theirs; a clock read per
    // iteration (two vDSO calls, ~50 ns) only where -b 3 or per-iteration times need it.
    const bool clockEach = opt_.blocking == 3 || opt_.perIterTiming;
    const double t0 = now();
    for (int i = 0; i < opt_.iters; ++i) {
      const double ti0 = clockEach ? now() : 0;
      iteration();
      const double ti1 = clockEach ? now() : 0;
      if (opt_.blocking == 3) elapsed += ti1 - ti0;
      if (opt_.perIterTiming) h.iter.timesUs[size_t(i)] = (ti1 - ti0) / opt_.aggIters * 1e6;
      if (opt_.blocking == 1 || opt_.blocking == 3) barrier();
    }
    if (opt_.blocking != 3) elapsed = now() - t0;

    h.timeUs = elapsed / (double(opt_.iters) * opt_.aggIters) * 1e6;
    // nccl-tests does not check in-place sendrecv either: send and receive share one buffer.
    h.checked = opt_.check > 0 && !(inPlace && opt_.coll == Coll::SendRecv);
    if (!h.checked) return h;
    const size_t sendUsed = inPlace ? 0 : c.send * ti.size;
    const size_t recvUsed = (inPlace ? std::max(c.send, c.recv) : c.recv) * ti.size;
    const size_t winS = std::min(avail, sendUsed + kGuard), winR = std::min(avail, recvUsed + kGuard);
    for (int rep = 0; rep < opt_.check; ++rep) {
      const DataSpec d{&ti, op, n, seedOf(size, ti.type, op, root, inPlace, rep)};
      fillSentinel(send, winS);
      fillSentinel(recv, winR);
      fillInputs(d, c, rank, sendp);
      std::memcpy(expSend_, send, winS);
      std::memcpy(expRecv_, recv, winR);
      fillExpected(opt_.coll, d, c, rank, root, expRecv_ + (recvp - recv));
      launch();
      h.wrong += double(countWrong(send, expSend_, winS, ti.size) + countWrong(recv, expRecv_, winR, ti.size));
    }
    return h;
  }

  const Options& opt_;
  const World& w_;
  Worker* wk_;
  void* handle_[2] = {nullptr, nullptr};
  ncclWindow_t win_[2] = {nullptr, nullptr};
  size_t bytes_ = 0;
  unsigned char *send_ = nullptr, *recv_ = nullptr, *expSend_ = nullptr, *expRecv_ = nullptr;
  float barrierBuf_ = 0;
};

}  // namespace

void runSweep(const Options& opt, const World& w, Worker* wk) {
  Sweep sweep(opt, w, wk);
  sweep.run();
}

[[noreturn]] void ncclFail(const char* call, ncclResult_t r, const char* file, int line) {
  std::fflush(stdout);
  std::fprintf(stderr, "baton-perf: %s failed (%s:%d): %s: %s\n", call, file, line, ncclGetErrorString(r),
               ncclGetLastError(nullptr));
  std::fflush(stderr);
  std::_Exit(3);
}

}  // namespace batonperf

// buildSchedule: runs each rank's part of a collective with recording primitives (schedule.h).
#include "sim/schedule.h"

#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>

#include "coll_dispatch.h"
#include "misc/debug.h"
#include "sim/recorded_primitives.h"
#include "tuner/tuner.h"

namespace baton {
namespace {

enum ConnKind { kRing = 0, kTreeUp = 1, kTreeDown = 2 };

// Both ends of every connection the collective uses, numbered for the simulator.
class ConnTable : public StepRecorder {
 public:
  ConnTable(SimSchedule* sched, const FifoLayout& layout, int proto, int depth)
      : sched_(sched), layout_(layout), proto_(proto), depth_(depth) {}

  // The sender's and receiver's ConnDev of connection (kind, channel, src -> dst).
  ConnDev* end(int kind, int channel, int src, int dst, bool sender) {
    const auto key = std::make_tuple(kind, channel, src, dst);
    auto it = ids_.find(key);
    if (it == ids_.end()) {
      it = ids_.emplace(key, (int)sched_->conns.size()).first;
      sched_->conns.push_back({src, dst, depth_});
      kindOf_.push_back(kind);
      for (int side = 0; side < 2; ++side) {
        auto dev = std::make_unique<ConnDev>();
        for (int p = 0; p < kNumProtos; ++p) dev->stepBytes[p] = layout_.stepBytes[p];
        dev->peer = side ? src : dst;
        dev->depth = depth_;  // the tree's lag depends on it (tree_allreduce.h)
        connOf_[dev.get()] = it->second;
        devs_.push_back(std::move(dev));
      }
    }
    return devs_[2 * it->second + (sender ? 0 : 1)].get();
  }

  // Steps go to `s`; with `down` set, the broadcast steps of a tree (on its down connections) go
  // there instead: a GPU runs the two phases in separate thread groups (NCCL's runTreeSplit).
  void begin(SimStream* s, SimStream* down) { stream_ = s, down_ = down; }
  void step(const ConnDev* recv, const ConnDev* send, uint64_t payload) override {
    SimStep st;
    st.recvConn = recv ? connOf_.at(recv) : -1;
    st.sendConn = send ? connOf_.at(send) : -1;
    st.wireBytes = send ? wireBytes(proto_, payload) : 0;
    const int c = st.recvConn >= 0 ? st.recvConn : st.sendConn;
    (down_ && c >= 0 && kindOf_[c] == kTreeDown ? down_ : stream_)->steps.push_back(st);
  }

 private:
  SimSchedule* sched_;
  FifoLayout layout_;
  int proto_;
  int depth_;
  SimStream* stream_ = nullptr;
  SimStream* down_ = nullptr;
  std::vector<int> kindOf_;
  std::map<std::tuple<int, int, int, int>, int> ids_;
  std::vector<std::unique_ptr<ConnDev>> devs_;
  std::unordered_map<const ConnDev*, int> connOf_;
};

// The library's own dispatch, with primitives that record instead of moving data; float, sum.
template <typename P>
void runPart(ExecCtx& ctx, const CollArgs& a) {
  if (countsBytes(a.func)) runMovingColl<Recorded<P>>(ctx, a);
  else runReducingColl<float, Recorded<P>>(ctx, a, OpSum<float>{});
}

}  // namespace

ncclResult_t buildSchedule(const CommGraph& graph, int nRanks, const ScheduleSpec& spec, SimSchedule* out) {
  *out = SimSchedule{};
  if (spec.algo == kAlgoTree && spec.func != kFuncAllReduce)
    return batonError(ncclInvalidArgument, "simulate: Tree is only for AllReduce");
  if (nRanks < 2 || spec.bytes == 0) return ncclSuccess;  // nothing crosses a link
  if ((int)graph.channels.size() < spec.nChannels)
    return batonError(ncclInvalidArgument, "simulate: %d channels asked, the graph has %zu", spec.nChannels,
                      graph.channels.size());
  // Buffers are never touched: any address will do for the algorithm's pointer arithmetic.
  char* fakeBuf = reinterpret_cast<char*>(uintptr_t(1) << 40);
  CollOp op{spec.func, fakeBuf, fakeBuf, 0, sizeof(float), spec.root};
  op.count = spec.bytes / collBytes(spec.func, 1, sizeof(float), nRanks);  // float elements per rank
  if (op.count == 0) return ncclSuccess;
  const int nch = channelsForBytes(spec.nChannels, spec.minChannelBytes, spec.bytes);
  ConnTable conns(out, spec.layout, spec.proto, planFifoDepth(spec.func, spec.fifoDepth, spec.chunkSteps));
  StepRecorder::current() = &conns;
  out->streams.reserve(2 * nRanks * nch);  // the recorder keeps pointers into it: never reallocate
  for (int r = 0; r < nRanks; ++r) {
    for (int c = 0; c < nch; ++c) {
      const ChannelGraph& g = graph.channels[c];
      CollArgs a = collArgsFor(op, spec.algo, spec.proto, r, nRanks, nch, spec.chunkSteps);
      a.channel = c;
      std::vector<int> ring = g.ring;
      int index = 0;
      while (ring[index] != r) ++index;
      a.ring.nRanks = nRanks, a.ring.index = index, a.ring.userRanks = ring.data();
      const int next = ring[(index + 1) % nRanks], prev = ring[(index + nRanks - 1) % nRanks];
      a.ring.send = conns.end(kRing, c, r, next, true);
      a.ring.recv = conns.end(kRing, c, prev, r, false);
      const TreeLinks& t = g.tree[r];
      a.tree.up = t.up;
      if (t.up >= 0) {
        a.tree.upSend = conns.end(kTreeUp, c, r, t.up, true);
        a.tree.downRecv = conns.end(kTreeDown, c, t.up, r, false);
      }
      for (int d : t.down) {
        if (d < 0) continue;
        a.tree.down[a.tree.nDown] = d;
        a.tree.upRecv[a.tree.nDown] = conns.end(kTreeUp, c, d, r, false);
        a.tree.downSend[a.tree.nDown++] = conns.end(kTreeDown, c, r, d, true);
      }
      const bool split = spec.splitTree && spec.algo == kAlgoTree && t.up >= 0;
      out->streams.push_back({r, c, {}});
      if (split) out->streams.push_back({r, c, {}});
      conns.begin(&out->streams[out->streams.size() - 1 - split], split ? &out->streams.back() : nullptr);
      ExecCtx ctx;
      ctx.rank = r, ctx.channel = c;
      withProto(spec.proto, [&](auto proto) { runPart<decltype(proto)>(ctx, a); });
      if (ctx.failed) {  // a step size below one element (step_check.h): the schedule would be cut short
        StepRecorder::current() = nullptr;
        return batonError(ncclInternalError,
                          "simulate: rank %d channel %d: the connector with peer %d holds %llu payload bytes per %s "
                          "step, less than one element (%llu bytes)",
                          r, c, ctx.failure.peer, (unsigned long long)ctx.failure.observed,
                          ctx.failure.what ? ctx.failure.what : "?", (unsigned long long)ctx.failure.expected);
      }
    }
  }
  StepRecorder::current() = nullptr;
  return ncclSuccess;
}

}  // namespace baton

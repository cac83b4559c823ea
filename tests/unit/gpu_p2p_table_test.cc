// The CUDA backend's send/recv table (src/gpu/gpu_p2p_table.h) on the CPU: its layout, and its blocks
// run with sendRecvRunAll exactly as the kernel runs them (sendrecv_kernel.cu: block b takes
// transfers first[b] .. first[b + 1] - 1, `after` relative to first[b]), one thread per block, three
// ranks' blocks at once over real FIFOs. No GPU is needed to check what the host lays out and what
// each block then does with it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "gpu/gpu_p2p_table.h"

namespace {

using namespace baton;

SendRecvTransfer transfer(size_t bytes) {
  SendRecvTransfer x;
  x.bytes = bytes;
  return x;
}

TEST(P2pTable, DealsConnectorsToBlocksKeepingTheirOrder) {
  // Connectors 3, 5, 7 in order of first use; two blocks: 3 and 7 share block 0, 5 has block 1.
  const int conns[] = {3, 5, 3, 7, 5, 3};
  std::vector<P2pPending> pending;
  for (int i = 0; i < 6; ++i) pending.push_back({transfer(100 + i), conns[i]});
  std::vector<char> table;
  GpuP2pLaunch l;
  buildP2pTable(pending, 2, &table, &l);
  ASSERT_EQ(l.nBlocks, 2);
  ASSERT_EQ(l.nOps, 6);
  EXPECT_EQ(l.table, table.data());
  EXPECT_EQ(l.xsOffset % 16, 0u);
  EXPECT_EQ(l.tableBytes, l.xsOffset + 6 * sizeof(SendRecvTransfer));
  const P2pTableView v = p2pTableView(table.data(), l);
  EXPECT_EQ(v.first[0], 0);
  EXPECT_EQ(v.first[1], 4);
  EXPECT_EQ(v.first[2], 6);
  const size_t bytes[] = {100, 102, 103, 105, 101, 104};  // block 0: the 3s and the 7, block 1: the 5s
  const int after[] = {-1, 0, -1, 1, -1, 0};
  for (int k = 0; k < 6; ++k) {
    EXPECT_EQ(v.xs[k].bytes, bytes[k]) << "transfer " << k;
    EXPECT_EQ(v.after[k], after[k]) << "transfer " << k;
  }
  // More blocks than connectors: one block each.
  buildP2pTable(pending, 64, &table, &l);
  EXPECT_EQ(l.nBlocks, 3);
}

// One ordered pair's FIFO, in the receiver's memory as on a device.
struct Fifo {
  ConnFifo* fifo = nullptr;
  ConnDev send, recv;  // the sender's and the receiver's handles
};

TEST(P2pTable, BlocksRunAsTheKernelRunsThem) {
  constexpr int n = 3, kMessages = 3, kMaxBlocks = 2;
  FifoLayout layout;
  layout.stepBytes[kProtoSimple] = 4096;  // 32 KiB of FIFO: most messages below take several turns
  const size_t fifoBytes = (sizeof(ConnFifo) + layout.totalSlotBytes() + 127) / 128 * 128;
  std::vector<Fifo> fifos(n * n);  // [src * n + dst]
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d) {
      if (s == d) continue;
      Fifo& f = fifos[s * n + d];
      f.fifo = static_cast<ConnFifo*>(std::aligned_alloc(128, fifoBytes));
      std::memset(static_cast<void*>(f.fifo), 0, fifoBytes);
      f.send = makeConnDev(f.fifo, layout, d, kSteps);
      f.recv = makeConnDev(f.fifo, layout, s, kSteps);
    }
  auto size = [](int s, int d, int m) { return (size_t)(1 + 37000 * m + 911 * s + 17 * d); };
  auto value = [](int s, int d, int m, size_t i) { return (char)(s * 31 + d * 7 + m * 5 + i * 3); };
  std::vector<std::vector<char>> sent, got;  // [(s * n + d) * kMessages + m]
  sent.resize(n * n * kMessages), got.resize(n * n * kMessages);
  std::vector<std::vector<char>> tables(n);
  std::vector<GpuP2pLaunch> launches(n);
  for (int r = 0; r < n; ++r) {
    std::vector<P2pPending> pending;
    // As a group would issue them: per message, a send to and a receive from every peer.
    for (int m = 0; m < kMessages; ++m)
      for (int p = 0; p < n; ++p) {
        if (p == r) continue;
        std::vector<char>& out = sent[(r * n + p) * kMessages + m];
        out.resize(size(r, p, m));
        for (size_t i = 0; i < out.size(); ++i) out[i] = value(r, p, m, i);
        SendRecvTransfer s = transfer(out.size());
        s.buf = out.data(), s.conn = &fifos[r * n + p].send, s.peer = p, s.isSend = true;
        pending.push_back({s, p});
        std::vector<char>& in = got[(p * n + r) * kMessages + m];
        in.assign(size(p, r, m), 0);
        SendRecvTransfer x = transfer(in.size());
        x.buf = in.data(), x.conn = &fifos[p * n + r].recv, x.peer = p, x.isSend = false;
        pending.push_back({x, n + p});
      }
    buildP2pTable(pending, kMaxBlocks, &tables[r], &launches[r]);
    ASSERT_EQ(launches[r].nBlocks, kMaxBlocks);
  }
  std::vector<std::thread> blocks;
  std::vector<int> failed(n * kMaxBlocks, 0);
  for (int r = 0; r < n; ++r)
    for (int b = 0; b < kMaxBlocks; ++b)
      blocks.emplace_back([&, r, b] {
        const P2pTableView v = p2pTableView(tables[r].data(), launches[r]);
        ExecCtx ctx;
        ctx.rank = r, ctx.channel = b, ctx.timeoutNs = 60ull * 1000 * 1000 * 1000;
        const int first = v.first[b];
        sendRecvRunAll(ctx, v.xs + first, v.after + first, v.first[b + 1] - first);
        failed[r * kMaxBlocks + b] = ctx.failed;
      });
  for (std::thread& t : blocks) t.join();
  for (int i = 0; i < n * kMaxBlocks; ++i)
    EXPECT_EQ(failed[i], 0) << "rank " << i / kMaxBlocks << " block " << i % kMaxBlocks;
  for (size_t i = 0; i < sent.size(); ++i) {
    if (sent[i].empty()) continue;  // a rank's pair with itself
    EXPECT_EQ(got[i], sent[i]) << "pair " << i / kMessages << " message " << i % kMessages;
  }
  for (Fifo& f : fifos) std::free(f.fifo);
}

}  // namespace

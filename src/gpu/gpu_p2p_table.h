// The send/recv kernel's table (GpuP2pLaunch, plugin_table.h), laid out on the host.
//
// A group's transfers are dealt to blocks by connector: connectors in order of first use, round-robin
// over at most `maxBlocks` blocks, so a connector's transfers stay in one block in issue order and
// every block gets at least one. Kept apart from the launch so the CPU tests can run a table's
// blocks with sendRecvRunAll exactly as the kernel does (tests/unit/gpu_p2p_table_test.cc).
#pragma once

#include <vector>

#include "cuda/plugin_table.h"

namespace baton {

struct P2pPending {
  SendRecvTransfer x;
  int conn;  // which connector (any numbering: transfers with the same number share one)
};

// Fills `table` and l's nBlocks, nOps, xsOffset, tableBytes and table (pointing into `table`).
void buildP2pTable(const std::vector<P2pPending>& pending, int maxBlocks, std::vector<char>* table, GpuP2pLaunch* l);

// The parts of a table, as the kernel reads them.
struct P2pTableView {
  const int32_t* first;  // [nBlocks + 1]
  const int32_t* after;  // [nOps], relative to the transfer's block's first
  SendRecvTransfer* xs;  // [nOps]
};
inline P2pTableView p2pTableView(char* table, const GpuP2pLaunch& l) {
  const auto* first = reinterpret_cast<const int32_t*>(table);
  return {first, first + l.nBlocks + 1, reinterpret_cast<SendRecvTransfer*>(table + l.xsOffset)};
}

}  // namespace baton

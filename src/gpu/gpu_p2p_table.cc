// The send/recv kernel's table laid out on the host (gpu_p2p_table.h): which block runs which
// transfers, and each transfer's predecessor on its connector.
#include "gpu/gpu_p2p_table.h"

#include <algorithm>
#include <map>

namespace baton {

void buildP2pTable(const std::vector<P2pPending>& pending, int maxBlocks, std::vector<char>* table, GpuP2pLaunch* l) {
  std::map<int, int> order;  // connector -> order of first use
  for (const P2pPending& p : pending) order.emplace(p.conn, (int)order.size());
  l->nOps = (int)pending.size();
  l->nBlocks = std::min((int)order.size(), std::max(maxBlocks, 1));
  gpuP2pTableLayout(l->nBlocks, l->nOps, &l->xsOffset, &l->tableBytes);
  table->assign(l->tableBytes, 0);
  auto* first = reinterpret_cast<int32_t*>(table->data());
  int32_t* after = first + l->nBlocks + 1;
  auto* xs = reinterpret_cast<SendRecvTransfer*>(table->data() + l->xsOffset);
  int k = 0;
  for (int blk = 0; blk < l->nBlocks; ++blk) {
    first[blk] = k;
    std::map<int, int> last;  // connector -> its latest transfer in this block, relative to first[blk]
    for (const P2pPending& p : pending) {
      if (order[p.conn] % l->nBlocks != blk) continue;
      xs[k] = p.x;
      const auto it = last.find(p.conn);
      after[k] = it == last.end() ? -1 : it->second;
      last[p.conn] = k - first[blk];
      ++k;
    }
  }
  first[l->nBlocks] = k;
  l->table = table->data();
}

}  // namespace baton

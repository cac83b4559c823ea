// Per-collective geometry (nccl-tests' getCollByteCount), bandwidth factors and the launch.
//
// For a sweep size S bytes of a type of T bytes, count = S / T, and with n ranks:
//   collective     send      recv      count arg   in place            algbw bytes   busbw factor
//   allreduce      count     count     count       send = recv         count*T       2(n-1)/n
//   reduce         count     count     count       send = recv         count*T       1
//   broadcast      count     count     count       send = recv         count*T       1
//   sendrecv       count     count     count       send = recv         count*T       1
//   allgather      c         c*n       c = count/n send = recv + r*c   c*n*T         (n-1)/n
//   gather         c         c*n       c           send = recv + r*c   c*n*T         (n-1)/n
//   reducescatter  c*n       c         c           recv = send + r*c   c*n*T         (n-1)/n
//   scatter        c*n       c         c           recv = send + r*c   c*n*T         (n-1)/n
//   alltoall       c*n       c*n       c           send = recv         c*n*T         (n-1)/n
//   hypercube      c         c*n       c           send = recv + r*c   c*(n-1)*T     1
// sendrecv: each rank sends to rank+1 and receives from rank-1, in one group.
// hypercube (nccl-tests' hypercube_perf): an allgather by recursive doubling over point-to-point,
// log2(n) rounds of one grouped send/recv with the partner rank ^ mask; n must be a power of two.
#include <cstring>

#include "baton_perf.h"

namespace batonperf {
namespace {

const CollDesc kColls[] = {
    {Coll::AllReduce, "allreduce", "all_reduce", true, false},
    {Coll::AllGather, "allgather", "all_gather", false, false},
    {Coll::ReduceScatter, "reducescatter", "reduce_scatter", true, false},
    {Coll::Broadcast, "broadcast", "broadcast", false, true},
    {Coll::Reduce, "reduce", "reduce", true, true},
    {Coll::AlltoAll, "alltoall", "alltoall", false, false},
    {Coll::SendRecv, "sendrecv", "sendrecv", false, false},
    {Coll::Gather, "gather", "gather", false, true},
    {Coll::Scatter, "scatter", "scatter", false, true},
    {Coll::HyperCube, "hypercube", "hypercube", false, false},
};

// Collectives whose buffers hold one block per rank.
bool perRankBlocks(Coll c) {
  return c == Coll::AllGather || c == Coll::Gather || c == Coll::ReduceScatter || c == Coll::Scatter ||
         c == Coll::AlltoAll;
}

// After round `mask`, a rank holds the blocks of the 2*mask ranks that share its bits above mask.
ncclResult_t hyperCube(const void* send, void* recv, size_t count, ncclDataType_t type, int rank, int nranks,
                       ncclComm_t comm) {
  const size_t block = count * typeInfo(type).size;
  char* out = static_cast<char*>(recv);
  if (out + size_t(rank) * block != send) std::memcpy(out + size_t(rank) * block, send, block);
  for (int mask = 1; mask < nranks; mask <<= 1) {
    const int mine = rank & ~(mask - 1), theirs = mine ^ mask, peer = rank ^ mask;
    ncclResult_t r = ncclGroupStart();
    if (r != ncclSuccess) return r;
    const ncclResult_t rs = ncclSend(out + size_t(mine) * block, count * size_t(mask), type, peer, comm, nullptr);
    const ncclResult_t rr = ncclRecv(out + size_t(theirs) * block, count * size_t(mask), type, peer, comm, nullptr);
    r = ncclGroupEnd();
    if (rs != ncclSuccess || rr != ncclSuccess || r != ncclSuccess)
      return rs != ncclSuccess ? rs : rr != ncclSuccess ? rr : r;
  }
  return ncclSuccess;
}

}  // namespace

const CollDesc& collDesc(Coll c) {
  for (const CollDesc& d : kColls)
    if (d.id == c) return d;
  return kColls[0];
}

bool parseColl(const std::string& s, Coll* out) {
  std::string name = s;
  if (name.size() > 5 && name.compare(name.size() - 5, 5, "_perf") == 0) name.resize(name.size() - 5);
  for (const CollDesc& d : kColls)
    if (name == d.name || name == d.testsName) return *out = d.id, true;
  if (name == "all_to_all") return *out = Coll::AlltoAll, true;
  if (name == "send_recv") return *out = Coll::SendRecv, true;
  return false;
}

std::string collNameList() {
  std::string s;
  for (const CollDesc& d : kColls) s += (s.empty() ? "" : ", ") + std::string(d.name);
  return s;
}

Counts collCounts(Coll c, size_t count, int nranks) {
  Counts k;
  const size_t n = size_t(nranks);
  const size_t per = count / n;
  switch (c) {
    case Coll::AllReduce:
    case Coll::Reduce:
    case Coll::Broadcast:
    case Coll::SendRecv: k.send = k.recv = k.param = count; break;
    case Coll::AllGather:
    case Coll::Gather:
    case Coll::HyperCube:
      k.send = k.param = per;
      k.recv = per * n;
      k.sendInplace = per;
      break;
    case Coll::ReduceScatter:
    case Coll::Scatter:
      k.send = per * n;
      k.recv = k.param = per;
      k.recvInplace = per;
      break;
    case Coll::AlltoAll:
      k.send = k.recv = per * n;
      k.param = per;
      break;
  }
  return k;
}

void collBandwidth(Coll c, size_t paramCount, size_t typeSize, double sec, int nranks, double* algbw, double* busbw) {
  const double n = nranks;
  const double bytes = double(paramCount) * double(typeSize) * (perRankBlocks(c) ? n : 1.0);
  double factor = 1.0;
  if (c == Coll::HyperCube) {  // what each rank receives, counted once in both columns
    *algbw = *busbw = sec > 0 ? double(paramCount) * double(typeSize) * (n - 1) / 1.0e9 / sec : 0.0;
    return;
  }
  if (c == Coll::AllReduce) factor = 2.0 * (n - 1) / n;
  else if (perRankBlocks(c)) factor = (n - 1) / n;
  *algbw = sec > 0 ? bytes / 1.0e9 / sec : 0.0;
  *busbw = *algbw * factor;
}

ncclResult_t collLaunch(Coll c, const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                        int root, int rank, int nranks, ncclComm_t comm) {
  cudaStream_t stream = nullptr;  // host mode: accepted and ignored
  switch (c) {
    case Coll::AllReduce: return ncclAllReduce(send, recv, count, type, op, comm, stream);
    case Coll::AllGather: return ncclAllGather(send, recv, count, type, comm, stream);
    case Coll::ReduceScatter: return ncclReduceScatter(send, recv, count, type, op, comm, stream);
    case Coll::Broadcast: return ncclBroadcast(send, recv, count, type, root, comm, stream);
    case Coll::Reduce: return ncclReduce(send, recv, count, type, op, root, comm, stream);
    case Coll::AlltoAll: return ncclAlltoAll(send, recv, count, type, comm, stream);
    case Coll::Gather: return ncclGather(send, recv, count, type, root, comm, stream);
    case Coll::Scatter: return ncclScatter(send, recv, count, type, root, comm, stream);
    case Coll::HyperCube: return hyperCube(send, recv, count, type, rank, nranks, comm);
    case Coll::SendRecv: {
      ncclResult_t r = ncclGroupStart();
      if (r != ncclSuccess) return r;
      const ncclResult_t rs = ncclSend(send, count, type, (rank + 1) % nranks, comm, stream);
      const ncclResult_t rr = ncclRecv(recv, count, type, (rank + nranks - 1) % nranks, comm, stream);
      r = ncclGroupEnd();  // always close the group, even after a failed enqueue
      return rs != ncclSuccess ? rs : rr != ncclSuccess ? rr : r;
    }
  }
  return ncclInvalidArgument;
}

}  // namespace batonperf

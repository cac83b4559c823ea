// mpi-latency: OpenMPI's row of the latency table (latency_table.h; tools/scripts/bench-peers.sh and
// tools/scripts/bench-net.sh --latency): MPI_Allreduce, MPI_Bcast and an MPI_Send/MPI_Recv ping-pong
// through the same timing loop as baton-latency.
//
//   mpirun -np 2 build/bin/mpi-latency [--sizes 8,64,1K] [--ops allreduce,broadcast,pingpong] [-n ITERS]
//                                      [-w WARMUP] [-s SAMPLES]
//
// MPI_Bcast works in place: the root sends from `in` and the others receive into `out` (the table
// checks a broadcast's output on the other ranks only). Exit status 1 on a failed call or a wrong result, 2 on
// bad arguments. Built by the scripts with mpicxx, alone (no baton header).
#define OMPI_SKIP_MPICXX  1  // the deprecated C++ bindings are not used, and they warn under -Wextra
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#include "latency_table.h"

namespace {

struct MpiPeer {
  int me = 0, n = 1;
  int rank() const { return me; }
  int nranks() const { return n; }
  void barrier() { MPI_Barrier(MPI_COMM_WORLD); }
  double total(double v) {
    double sum = 0;
    MPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return sum;
  }
  bool allreduce(const float* in, float* out, size_t count) {
    return MPI_Allreduce(in, out, int(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS;
  }
  bool broadcast(const float* in, float* out, size_t count, int root) {
    float* buf = me == root ? const_cast<float*>(in) : out;  // the root's buffer is only read
    return MPI_Bcast(buf, int(count), MPI_FLOAT, root, MPI_COMM_WORLD) == MPI_SUCCESS;
  }
  bool send(const float* buf, size_t count, int peer) {
    return MPI_Send(buf, int(count), MPI_FLOAT, peer, 0, MPI_COMM_WORLD) == MPI_SUCCESS;
  }
  bool recv(float* buf, size_t count, int peer) {
    return MPI_Recv(buf, int(count), MPI_FLOAT, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE) == MPI_SUCCESS;
  }
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MpiPeer p;
  MPI_Comm_rank(MPI_COMM_WORLD, &p.me);
  MPI_Comm_size(MPI_COMM_WORLD, &p.n);
  LatencyOptions o;
  std::vector<std::string> rest;
  std::string err = parseLatencyOptions(argc, argv, 1, &o, &rest);
  if (err.empty() && !rest.empty()) err = "unknown argument '" + rest[0] + "' (--sizes, --ops, -n, -w, -s)";
  if (!err.empty()) {
    if (p.me == 0) std::fprintf(stderr, "mpi-latency: %s\n", err.c_str());
    MPI_Finalize();
    return 2;
  }
  std::vector<float> in(latencyTableBytes(o) / sizeof(float)), out(in.size());
  const int status = runLatencyTable(p, "openmpi", o, in.data(), out.data());
  MPI_Finalize();
  return status;
}

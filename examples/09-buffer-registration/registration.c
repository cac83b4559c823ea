/* Lesson 09: buffer registration (docs/lessons/09-buffer-registration.md).
 *
 * Two processes (forked from this one) run the same AllReduce on three kinds of buffer:
 *   plain       malloc'd: from 64 KiB the kernel copies each slice straight between the two
 *               processes (process_vm_readv/writev, one copy per hop) where it permits that,
 *               else every byte crosses the shared-memory FIFO (two copies per hop);
 *   registered  ncclMemAlloc + ncclCommRegister: the peer maps the buffer, the ring reads and
 *               writes it directly (zero copy; the FIFO carries only signals);
 *   window      ncclMemAlloc + ncclCommWindowRegister(NCCL_WIN_COLL_SYMMETRIC): the symmetric kernels.
 * and prints the time and bus bandwidth of each, for a large message and for 8 bytes.
 * Run: build/bin/examples/09-buffer-registration/registration [MiB] */
#include <sys/wait.h>
#include <unistd.h>

#include "../common.h"

enum { kPlain, kRegistered, kWindow };
static const char* const kNames[] = {"plain", "registered", "window"};

/* Times `iters` AllReduces of `count` floats from send to recv after a warm-up; checks the result. */
static double timed(ncclComm_t comm, int rank, float* send, float* recv, size_t count, int iters, int* wrong) {
  for (size_t i = 0; i < count; ++i) send[i] = inputValue(rank, i);
  double t0 = 0;
  for (int it = -2; it < iters; ++it) {
    if (it == 0) t0 = nowSec();
    CHECK(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, NULL));
  }
  const double t = (nowSec() - t0) / iters;
  for (size_t i = 0; i < count; ++i)
    if (recv[i] != inputValue(0, i) + inputValue(1, i)) *wrong = 1;
  return t;
}

static int runRank(const ncclUniqueId* id, int rank, size_t count) {
  ncclComm_t comm;
  CHECK(ncclCommInitRank(&comm, 2, *id, rank));
  int wrong = 0;
  for (int kind = kPlain; kind <= kWindow; ++kind) {
    const size_t bytes = count * sizeof(float), total = 2 * bytes; /* send, then recv */
    void* buf = NULL;
    void* handle = NULL;
    ncclWindow_t win = NULL;
    if (kind == kPlain) {
      buf = malloc(total);
    } else {
      CHECK(ncclMemAlloc(&buf, total)); /* page-aligned, shareable with the peer process */
      if (kind == kRegistered) CHECK(ncclCommRegister(comm, buf, total, &handle));
      else CHECK(ncclCommWindowRegister(comm, buf, total, &win, NCCL_WIN_COLL_SYMMETRIC)); /* collective */
    }
    float* send = (float*)buf;
    float* recv = send + count;
    const double big = timed(comm, rank, send, recv, count, 10, &wrong);
    const double small = timed(comm, rank, send, recv, 2, 20000, &wrong);
    if (rank == 0)
      printf("%-10s %zu MiB: %8.2f ms  busbw %6.2f GB/s   8 B: %5.2f us   %s\n", kNames[kind], bytes >> 20, big * 1e3,
             (double)bytes / big / 1e9, small * 1e6, wrong ? "WRONG" : "result OK");
    if (win) CHECK(ncclCommWindowDeregister(comm, win));
    if (handle) CHECK(ncclCommDeregister(comm, handle));
    if (kind == kPlain) free(buf);
    else CHECK(ncclMemFree(buf));
  }
  CHECK(ncclCommDestroy(comm));
  return wrong;
}

int main(int argc, char** argv) {
  const size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 64;
  ncclUniqueId id;
  CHECK(ncclGetUniqueId(&id));
  fflush(stdout);
  const pid_t child = fork();
  if (child == 0) _exit(runRank(&id, 1, mib << 18));
  int bad = runRank(&id, 0, mib << 18);
  int status = 0;
  waitpid(child, &status, 0);
  bad |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  return bad;
}

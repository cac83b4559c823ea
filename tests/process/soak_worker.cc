// One rank of the soak (make soak, tests/soak/soak.sh): random collectives for a set time, every
// result checked exactly, and this process's resources measured at the start and at the end.
//
//   baton-run -n 4 build/tests/soak_worker --seconds 1800
//
// Every rank draws the same sequence from one seed: which communicator (the parent with the
// tuner's choices, or a child split with NCCL_PROTO=LL, LL128 or Simple), how many operations in
// one group (1 without a group, or 2-4 in one), and for each its collective, type, operator, count (0 to 4 MiB), root
// and in/out of place. The cases, their inputs and their checks are the correctness suite's
// (tests/collectives/rank_case.h). Every 32 groups the ranks agree by an AllReduce whether rank 0's
// clock says time is up, so all stop together.
//
// Prints, per rank: "rank R: soak N operations in G groups, S s; RSS A -> B KiB; fds C -> D", where
// the start is measured after the first third of the time (connections made lazily, by the first
// send/recv between two ranks on a communicator, and each protocol's buffers exist by then), and
// exits non-zero on the first wrong result or failed call.
#include <dirent.h>
#include <malloc.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "collectives/rank_case.h"
#include "nccl.h"

namespace {

long residentKiB() {
  long pages = 0, resident = 0;
  if (FILE* f = fopen("/proc/self/statm", "r")) {
    if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    fclose(f);
  }
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

int openFds() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
    --n;  // the directory's own descriptor
  }
  return n;
}

int envRank(const char* name) {
  const char* s = getenv(name);
  if (!s || !*s) {
    fprintf(stderr, "soak_worker: %s is not set (run me under baton-run)\n", name);
    exit(2);
  }
  return atoi(s);
}

#define CHECK_NCCL(call, what)                                                                                        \
  do {                                                                                                                \
    const ncclResult_t r_ = (call);                                                                                   \
    if (r_ != ncclSuccess) {                                                                                          \
      fprintf(stderr, "rank %d: %s failed: %s: %s\n", rank, what, ncclGetErrorString(r_), ncclGetLastError(nullptr)); \
      return 1;                                                                                                       \
    }                                                                                                                 \
  } while (0)

}  // namespace

int main(int argc, char** argv) {
  // The soak counts descriptors: the RAS service's listener, which another process takes over when
  // the one holding it exits, would be counted as a leak.
  setenv("NCCL_RAS_ENABLE", "0", 1);
  double seconds = 60;
  uint64_t seed = 20261125;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = atof(argv[++i]);
    else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], nullptr, 10);
    else {
      fprintf(stderr, "usage: baton-run -n N %s [--seconds S] [--seed N]\n", argv[0]);
      return 2;
    }
  }
  const int rank = envRank("BATON_RANK"), n = envRank("BATON_NRANKS");
  // Test buffers of 256 KiB and more are mapped and unmapped whole, and the heap is trimmed: RSS then
  // measures what the library keeps, not the high-water mark of this program's random buffers.
  mallopt(M_MMAP_THRESHOLD, 256 << 10);
  mallopt(M_TRIM_THRESHOLD, 1 << 20);

  ncclUniqueId id;
  ncclComm_t parent = nullptr;
  CHECK_NCCL(ncclGetUniqueId(&id), "ncclGetUniqueId");
  CHECK_NCCL(ncclCommInitRank(&parent, n, id, rank), "ncclCommInitRank");
  std::vector<ncclComm_t> comms{parent};
  for (const char* proto : {"LL", "LL128", "Simple"}) {  // a child reads NCCL_PROTO at its creation
    setenv("NCCL_PROTO", proto, 1);
    ncclComm_t child = nullptr;
    CHECK_NCCL(ncclCommSplit(parent, 0, rank, &child, nullptr), "ncclCommSplit");
    comms.push_back(child);
  }
  unsetenv("NCCL_PROTO");

  using namespace bt;
  constexpr Coll kColls[] = {Coll::AllReduce, Coll::Reduce, Coll::ReduceScatter, Coll::AllGather, Coll::Broadcast,
                             Coll::AlltoAll,  Coll::Gather, Coll::Scatter,       Coll::SendRecv};
  std::mt19937_64 rng(seed);
  auto pick = [&](size_t k) { return (size_t)(rng() % k); };
  auto randomCase = [&]() {
    CollCase c;
    c.coll = kColls[pick(9)];
    c.type = kAllTypes[pick(sizeof kAllTypes / sizeof kAllTypes[0])];
    c.op = reduces(c.coll) ? kAllOps[pick(6)] : Op::Sum;
    c.root = (int)pick(n);
    c.inPlace = pick(2) == 0;
    c.scalarDevice = pick(2) == 0;
    // Log-uniform bytes up to 4 MiB per rank block (0 included), as element counts.
    const size_t maxBytes = size_t(1) << pick(23);
    c.count = pick(2 * maxBytes / typeSize(c.type) + 1) / 2;
    if (blocked(c.coll)) c.count = c.count / n;
    c.seed = rng();
    return c;
  };

  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  long ops = 0, groups = 0, rssStart = 0, rssEnd = 0;
  int fdsStart = 0, fdsEnd = 0;
  bool measured = false;
  int* flag = nullptr;
  CHECK_NCCL(ncclMemAlloc((void**)&flag, sizeof(int)), "ncclMemAlloc");
  for (bool more = true; more;) {
    ncclComm_t comm = comms[pick(comms.size())];
    const int size = pick(4) == 0 ? 2 + (int)pick(3) : 1;
    std::vector<CollCase> cases;
    std::vector<RankBuffers> bufs(size);
    for (int i = 0; i < size; ++i) {
      cases.push_back(randomCase());
      // baton refuses an in-place AlltoAll inside a group (ncclAlltoAll's message says so).
      if (size > 1 && cases[i].coll == Coll::AlltoAll) cases[i].inPlace = false;
      CHECK_NCCL(prepareRank(cases[i], n, rank, comm, bufs[i]), "prepare");
    }
    if (size > 1) CHECK_NCCL(ncclGroupStart(), "ncclGroupStart");
    for (int i = 0; i < size; ++i) {
      const ncclResult_t r = issueRank(cases[i], n, rank, comm, bufs[i]);
      if (r != ncclSuccess) {
        fprintf(stderr, "rank %d: %s failed: %s: %s\n", rank, describe(cases[i], n).c_str(), ncclGetErrorString(r),
                ncclGetLastError(comm));
        return 1;
      }
    }
    if (size > 1) CHECK_NCCL(ncclGroupEnd(), "ncclGroupEnd");
    for (int i = 0; i < size; ++i) {
      if (const std::string err = checkRank(cases[i], n, rank, comm, bufs[i]); !err.empty()) {
        fprintf(stderr, "rank %d: WRONG after %ld operations: %s: %s\n", rank, ops, describe(cases[i], n).c_str(),
                err.c_str());
        return 1;
      }
    }
    ops += size;
    ++groups;
    if (groups % 32 == 0) {  // rank 0's clock decides for all: 0 stop, 1 go on, 2 go on and measure
      *flag = rank != 0 ? 0 : elapsed() >= seconds ? 0 : !measured && elapsed() >= seconds / 3 ? 2 : 1;
      CHECK_NCCL(ncclAllReduce(flag, flag, 1, ncclInt32, ncclMax, parent, nullptr), "stop vote");
      if (*flag == 2) rssStart = residentKiB(), fdsStart = openFds(), measured = true;
      more = *flag != 0 || !measured;
    }
  }
  rssEnd = residentKiB(), fdsEnd = openFds();
  CHECK_NCCL(ncclMemFree(flag), "ncclMemFree");
  for (size_t i = comms.size(); i-- > 0;) CHECK_NCCL(ncclCommDestroy(comms[i]), "ncclCommDestroy");
  printf("rank %d: soak %ld operations in %ld groups, %.0f s; RSS %ld -> %ld KiB; fds %d -> %d\n", rank, ops, groups,
         elapsed(), rssStart, rssEnd, fdsStart, fdsEnd);
  return 0;
}

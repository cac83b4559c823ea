// A program compiled against NVIDIA's own nccl.h (the CUDA toolkit's), run against baton's
// libnccl.so.2 with host buffers: the drop-in promise (README: "NCCL 2.28 host API and ABI").
//
// Thread mode (default): one thread drives 4 ranks from ncclCommInitAll, inside groups.
// Process mode (under baton-run, BATON_NRANKS set): one rank per process, ncclCommInitRankConfig.
// Prints "nvidia-header test: N ranks OK" and exits 0, or names the first failure.
#include <nccl.h>  // NVIDIA's: the Makefile puts $(CUDA_HOME)/include first, not baton's include/

#include <cstdio>
#include <cstdlib>
#include <vector>

#ifdef BATON_NCCL_H
#error "compiled against baton's nccl.h; this test needs NVIDIA's"
#endif

#define CHECK(call)                                                                                \
  do {                                                                                             \
    ncclResult_t res_ = (call);                                                                    \
    if (res_ != ncclSuccess) {                                                                     \
      fprintf(stderr, "%s:%d %s -> %s: %s\n", __FILE__, __LINE__, #call, ncclGetErrorString(res_), \
              ncclGetLastError(nullptr));                                                          \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

namespace {
int check(const std::vector<float>& v, float expect, const char* what) {
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] != expect + (float)(i % 5)) {
      fprintf(stderr, "%s: element %zu is %g, expected %g\n", what, i, v[i], expect + (float)(i % 5));
      return 1;
    }
  return 0;
}
}  // namespace

int main() {
  int version = 0;
  CHECK(ncclGetVersion(&version));
  if (version != NCCL_VERSION_CODE) {
    fprintf(stderr, "library version %d != header version %d\n", version, NCCL_VERSION_CODE);
    return 1;
  }
  const size_t count = 100003;
  const char* nr = getenv("BATON_NRANKS");
  if (nr) {  // process mode
    const int n = atoi(nr), rank = atoi(getenv("BATON_RANK"));
    ncclUniqueId id;
    CHECK(ncclGetUniqueId(&id));  // NCCL_COMM_ID (set by baton-run) makes every process agree
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    ncclComm_t comm;
    CHECK(ncclCommInitRankConfig(&comm, n, id, rank, &cfg));
    std::vector<float> in(count), out(count);
    for (size_t i = 0; i < count; ++i) in[i] = (float)(rank + 1) + (float)(i % 5);
    CHECK(ncclAllReduce(in.data(), out.data(), count, ncclFloat, ncclSum, comm, nullptr));
    float sum = 0;
    for (int r = 0; r < n; ++r) sum += (float)(r + 1);
    std::vector<float> want(count);
    int bad = 0;
    for (size_t i = 0; i < count; ++i) bad += out[i] != sum + n * (float)(i % 5);
    CHECK(ncclCommDestroy(comm));
    if (bad) return fprintf(stderr, "rank %d: %d wrong elements\n", rank, bad), 1;
    printf("nvidia-header test: rank %d of %d OK\n", rank, n);
    return 0;
  }
  const int n = 4;
  std::vector<ncclComm_t> comms(n);
  CHECK(ncclCommInitAll(comms.data(), n, nullptr));
  std::vector<std::vector<float>> in(n, std::vector<float>(count)), out(n, std::vector<float>(count));
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i) in[r][i] = (float)r + (float)(i % 5);
  CHECK(ncclGroupStart());
  for (int r = 0; r < n; ++r) CHECK(ncclBroadcast(in[r].data(), out[r].data(), count, ncclFloat, 2, comms[r], nullptr));
  CHECK(ncclGroupEnd());
  int bad = 0;
  for (int r = 0; r < n; ++r) bad += check(out[r], 2.0f, "broadcast");
  // Point-to-point around the ring, all ranks from this one thread.
  CHECK(ncclGroupStart());
  for (int r = 0; r < n; ++r) {
    CHECK(ncclSend(in[r].data(), count, ncclFloat, (r + 1) % n, comms[r], nullptr));
    CHECK(ncclRecv(out[r].data(), count, ncclFloat, (r + n - 1) % n, comms[r], nullptr));
  }
  CHECK(ncclGroupEnd());
  for (int r = 0; r < n; ++r) bad += check(out[r], (float)((r + n - 1) % n), "send/recv");
  for (auto c : comms) CHECK(ncclCommDestroy(c));
  if (bad) return 1;
  printf("nvidia-header test: %d ranks OK\n", n);
  return 0;
}

/* Built against an installed baton by tests/tools/install_test.sh (pkg-config, CMake, FindNCCL,
 * plain -I/-L flags, static): two ranks as devices of one process, one AllReduce, checked. */
#include <stdio.h>

#include "nccl.h"

int main(void) {
  enum { kRanks = 2, kCount = 1024 };
  ncclComm_t comms[kRanks];
  static float send[kRanks][kCount], recv[kRanks][kCount];
  for (int r = 0; r < kRanks; ++r)
    for (int i = 0; i < kCount; ++i) send[r][i] = (float)(r + 1) * (float)i;
  if (ncclCommInitAll(comms, kRanks, NULL) != ncclSuccess) {
    fprintf(stderr, "ncclCommInitAll: %s\n", ncclGetLastError(NULL));
    return 1;
  }
  ncclGroupStart();
  for (int r = 0; r < kRanks; ++r) ncclAllReduce(send[r], recv[r], kCount, ncclFloat, ncclSum, comms[r], NULL);
  if (ncclGroupEnd() != ncclSuccess) {
    fprintf(stderr, "allreduce: %s\n", ncclGetLastError(NULL));
    return 1;
  }
  int wrong = 0;
  for (int r = 0; r < kRanks; ++r)
    for (int i = 0; i < kCount; ++i) wrong += recv[r][i] != 3.0f * (float)i;
  for (int r = 0; r < kRanks; ++r) ncclCommDestroy(comms[r]);
  int version = 0;
  ncclGetVersion(&version);
  printf("hello from NCCL %d: allreduce over %d ranks %s\n", version, kRanks, wrong ? "WRONG" : "OK");
  return wrong != 0;
}

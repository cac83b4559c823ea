// How baton exports NCCL's API: like NCCL, each function is a strong `pncclX` and a weak `ncclX`
// alias at the same address (a PMPI-style profiling interface).
//
//   NCCL_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int* count);
//   ncclResult_t pncclCommCount(const ncclComm_t comm, int* count) { ... }
#pragma once

#include "nccl.h"

#define NCCL_API(ret, func, ...)                                              \
  extern "C" __attribute__((visibility("default"))) ret p##func(__VA_ARGS__); \
  extern "C" __attribute__((visibility("default"), weak, alias("p" #func))) ret func(__VA_ARGS__)

// Exact-data checks of every collective and p2p pattern for ONE rank of a multi-process job (each
// process is a rank; tests/process/rank_worker.cc). The cases, inputs and expected outputs are
// those of the threads suite (tests/collectives/rank_case.h), checked bitwise with guard bytes.
#pragma once

#include <string>

#include "nccl.h"

namespace bt {

struct CheckReport {
  int passed = 0;
  int failed = 0;
  std::string firstFailure;  // empty if none
};

// Runs the check list on `comm`, where this process is rank `rank` of `nranks`: every collective
// and p2p pattern x every type (every op on float and int8, one or two ops on the others) x counts
// {0, 1, 7, 1023} x roots {0, n/2, n-1} x in/out of place, then the large count (>= 4 MiB, odd;
// root n-1) for float sum, int8 avg, bfloat16 max and double PreMulSum. quick: float, int8, half,
// f8e5m2 and no large count. Then AlltoAllv with uneven and zero counts (units 1 and 777, and
// 70001 unless quick), MoE dispatch + combine and their backward passes on both stages (float and bfloat16; top-8
// unless quick), and the wire-format collectives (MXFP8, MXFP4, NVFP4; AllGather, ReduceScatter, AllReduce
// rsag, ring and oneshot, ReduceScatter's ring; bfloat16 and half). Stops early only if an NCCL call fails (the
// communicator is then unusable); data mismatches are counted.
CheckReport runProcessChecks(ncclComm_t comm, int rank, int nranks, bool quick);

}  // namespace bt

// Fuzz target: the launcher environment a process started by baton-run, mpirun, PMI or srun reads
// (include/baton/launch.h: batonGetLaunchInfo), and the NCCL_COMM_ID that goes with it.
//
// Input: records of one selector byte (which variable) and its value up to a NUL. Whatever the
// mix of launchers' variables, the call either fills a consistent answer (0 <= rank < nranks,
// the launcher named) or fails with a message naming the variable.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "baton/launch.h"
#include "fuzz_input.h"
#include "misc/socket.h"

namespace {

constexpr const char* kVars[] = {
    "BATON_RANK",
    "BATON_NRANKS",
    "BATON_LOCAL_RANK",
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "PMI_RANK",
    "PMI_SIZE",
    "MPI_LOCALRANKID",
    "PMIX_RANK",
    "SLURM_STEP_NUM_TASKS",
    "SLURM_PROCID",
    "SLURM_LOCALID",
    "NCCL_COMM_ID",
};
constexpr size_t kNumVars = sizeof kVars / sizeof kVars[0];

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  baton_fuzz::Input in(data, size);
  for (const char* v : kVars) unsetenv(v);
  for (int i = 0; i < 16 && in.left() > 0; ++i) {
    const char* var = kVars[in.u8() % kNumVars];
    setenv(var, in.until('\0').c_str(), 1);
  }
  batonLaunchInfo li;
  const ncclResult_t res = baton_fuzz::rejectsWithMessage([&] { return batonGetLaunchInfo(&li); });
  if (res == ncclSuccess) {
    if (li.nranks < 1 || li.rank < 0 || li.rank >= li.nranks || li.localRank < 0) abort();
    if (strnlen(li.launcher, sizeof li.launcher) == sizeof li.launcher) abort();  // a C string
  }
  if (const char* id = getenv("NCCL_COMM_ID")) {
    baton::SocketAddress a{};
    baton_fuzz::rejectsWithMessage([&] { return baton::parseAddress(id, &a, /*numericOnly=*/true); });
  }
  for (const char* v : kVars) unsetenv(v);
  return 0;
}

// include/baton/launch.h: rank, size and local rank from each launcher's variables, the first
// launcher that sets a rank winning; malformed or inconsistent values named; a multi-process job
// without NCCL_COMM_ID refused with what to set.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "baton/launch.h"
#include "unit/unit_helpers.h"

namespace {

using bt::ScopedEnv;

// Every variable any launcher uses, unset, so the host environment (a CI under Slurm) cannot leak in.
struct CleanLaunchEnv {
  std::vector<std::unique_ptr<ScopedEnv>> vars;
  CleanLaunchEnv() {
    for (const char* v :
         {"BATON_RANK", "BATON_NRANKS", "BATON_LOCAL_RANK", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
          "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "PMIX_RANK", "SLURM_PROCID",
          "SLURM_NTASKS", "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID"})
      vars.push_back(std::make_unique<ScopedEnv>(v, nullptr));
  }
};

TEST(LaunchEnv, EachLauncherAndPrecedence) {
  CleanLaunchEnv clean;
  batonLaunchInfo li;
  ASSERT_EQ(batonGetLaunchInfo(&li), ncclSuccess);
  EXPECT_EQ(li.rank, 0);
  EXPECT_EQ(li.nranks, 1);
  EXPECT_STREQ(li.launcher, "none");
  {
    {  // a batch script: the allocation's variables, no step: one process
      ScopedEnv r("SLURM_PROCID", "0"), s("SLURM_NTASKS", "8");
      ASSERT_EQ(batonGetLaunchInfo(&li), ncclSuccess);
      EXPECT_EQ(li.nranks, 1);
      EXPECT_STREQ(li.launcher, "none");
    }
    ScopedEnv r("SLURM_PROCID", "3"), s("SLURM_STEP_NUM_TASKS", "8"), l("SLURM_LOCALID", "1");
    ASSERT_EQ(batonGetLaunchInfo(&li), ncclSuccess) << bt::lastError();
    EXPECT_EQ(li.rank, 3);
    EXPECT_EQ(li.nranks, 8);
    EXPECT_EQ(li.localRank, 1);
    EXPECT_STREQ(li.launcher, "slurm");
    ScopedEnv pr("PMI_RANK", "5"), ps("PMI_SIZE", "6");
    ASSERT_EQ(batonGetLaunchInfo(&li), ncclSuccess);
    EXPECT_EQ(li.rank, 5);
    EXPECT_EQ(li.nranks, 6);
    EXPECT_STREQ(li.launcher, "pmi");
    ScopedEnv orr("OMPI_COMM_WORLD_RANK", "1"), os("OMPI_COMM_WORLD_SIZE", "2"), ol("OMPI_COMM_WORLD_LOCAL_RANK", "1");
    ASSERT_EQ(batonGetLaunchInfo(&li), ncclSuccess);
    EXPECT_EQ(li.rank, 1);
    EXPECT_EQ(li.nranks, 2);
    EXPECT_EQ(li.localRank, 1);
    EXPECT_STREQ(li.launcher, "openmpi");
    ScopedEnv br("BATON_RANK", "0"), bs("BATON_NRANKS", "4");  // baton-run inside an allocation wins
    ASSERT_EQ(batonGetLaunchInfo(&li), ncclSuccess);
    EXPECT_EQ(li.rank, 0);
    EXPECT_EQ(li.nranks, 4);
    EXPECT_EQ(li.localRank, 0);
    EXPECT_STREQ(li.launcher, "baton-run");
  }
}

TEST(LaunchEnv, BadValuesNameTheVariable) {
  CleanLaunchEnv clean;
  batonLaunchInfo li;
  EXPECT_EQ(batonGetLaunchInfo(nullptr), ncclInvalidArgument);
  {
    ScopedEnv r("OMPI_COMM_WORLD_RANK", "2"), s("OMPI_COMM_WORLD_SIZE", "2");
    EXPECT_EQ(batonGetLaunchInfo(&li), ncclInvalidArgument);
    EXPECT_TRUE(bt::messageHas(bt::lastError(), {"OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_SIZE=2"}));
  }
  {
    ScopedEnv r("SLURM_PROCID", "x1"), s("SLURM_STEP_NUM_TASKS", "2");
    EXPECT_EQ(batonGetLaunchInfo(&li), ncclInvalidArgument);
    EXPECT_TRUE(bt::messageHas(bt::lastError(), {"SLURM_PROCID=\"x1\""}));
  }
  {
    ScopedEnv r("PMI_RANK", "0");  // a rank without a size
    EXPECT_EQ(batonGetLaunchInfo(&li), ncclInvalidArgument);
    EXPECT_TRUE(bt::messageHas(bt::lastError(), {"PMI_SIZE", "not set"}));
  }
  {
    ScopedEnv r("BATON_RANK", "0"), s("BATON_NRANKS", "0");
    EXPECT_EQ(batonGetLaunchInfo(&li), ncclInvalidArgument);
    EXPECT_TRUE(bt::messageHas(bt::lastError(), {"BATON_NRANKS=0"}));
  }
}

TEST(LaunchEnv, InitFromEnv) {
  CleanLaunchEnv clean;
  ScopedEnv id("NCCL_COMM_ID", nullptr);
  EXPECT_EQ(batonCommInitFromEnv(nullptr, nullptr), ncclInvalidArgument);
  ncclComm_t comm = nullptr;
  {
    ScopedEnv r("SLURM_PROCID", "0"), s("SLURM_STEP_NUM_TASKS", "2");
    EXPECT_EQ(batonCommInitFromEnv(&comm, nullptr), ncclInvalidArgument);
    EXPECT_TRUE(bt::messageHas(bt::lastError(), {"slurm", "2 processes", "NCCL_COMM_ID"}));
  }
  ASSERT_EQ(batonCommInitFromEnv(&comm, nullptr), ncclSuccess) << bt::lastError();  // a single process
  int n = 0, r = -1;
  EXPECT_EQ(ncclCommCount(comm, &n), ncclSuccess);
  EXPECT_EQ(ncclCommUserRank(comm, &r), ncclSuccess);
  EXPECT_EQ(n, 1);
  EXPECT_EQ(r, 0);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

}  // namespace

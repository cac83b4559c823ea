// The NCCL 2.28.9 ABI as seen through baton's nccl.h: sizes, field offsets, enum values and the
// version macros. A program compiled against NVIDIA's header relies on every number checked here.
#include <gtest/gtest.h>

#include <climits>
#include <cstddef>
#include <type_traits>

#include "nccl.h"

namespace {

TEST(AbiLayout, HeaderIsBatons) { EXPECT_EQ(BATON_NCCL_H, 1); }

TEST(AbiLayout, Version) {
  EXPECT_EQ(NCCL_MAJOR, 2);
  EXPECT_EQ(NCCL_MINOR, 28);
  EXPECT_EQ(NCCL_PATCH, 9);
  EXPECT_STREQ(NCCL_SUFFIX, "");
  EXPECT_EQ(NCCL_VERSION_CODE, 22809);
  EXPECT_EQ(NCCL_VERSION(2, 28, 9), 22809);
  EXPECT_EQ(NCCL_VERSION(2, 8, 4), 2804);  // old scheme, up to 2.8
  EXPECT_EQ(NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), NCCL_VERSION_CODE);
}

TEST(AbiLayout, UniqueId) {
  EXPECT_EQ(NCCL_UNIQUE_ID_BYTES, 128);
  EXPECT_EQ(sizeof(ncclUniqueId), 128u);
  EXPECT_EQ(sizeof(ncclUniqueId::internal), 128u);
}

TEST(AbiLayout, Handles) {
  EXPECT_TRUE((std::is_same_v<ncclComm_t, struct ncclComm*>));
  EXPECT_TRUE((std::is_same_v<ncclWindow_t, struct ncclWindow_vidmem*>));
  EXPECT_TRUE((std::is_same_v<cudaStream_t, struct CUstream_st*>));
  ncclComm_t null_comm = NCCL_COMM_NULL;
  EXPECT_EQ(null_comm, nullptr);
}

TEST(AbiLayout, ConfigLayout) {
  EXPECT_EQ(sizeof(ncclConfig_t), 80u);
  EXPECT_EQ(offsetof(ncclConfig_t, size), 0u);
  EXPECT_EQ(offsetof(ncclConfig_t, magic), 8u);
  EXPECT_EQ(offsetof(ncclConfig_t, version), 12u);
  EXPECT_EQ(offsetof(ncclConfig_t, blocking), 16u);
  EXPECT_EQ(offsetof(ncclConfig_t, cgaClusterSize), 20u);
  EXPECT_EQ(offsetof(ncclConfig_t, minCTAs), 24u);
  EXPECT_EQ(offsetof(ncclConfig_t, maxCTAs), 28u);
  EXPECT_EQ(offsetof(ncclConfig_t, netName), 32u);
  EXPECT_EQ(offsetof(ncclConfig_t, splitShare), 40u);
  EXPECT_EQ(offsetof(ncclConfig_t, trafficClass), 44u);
  EXPECT_EQ(offsetof(ncclConfig_t, commName), 48u);
  EXPECT_EQ(offsetof(ncclConfig_t, collnetEnable), 56u);
  EXPECT_EQ(offsetof(ncclConfig_t, CTAPolicy), 60u);
  EXPECT_EQ(offsetof(ncclConfig_t, shrinkShare), 64u);
  EXPECT_EQ(offsetof(ncclConfig_t, nvlsCTAs), 68u);
  EXPECT_EQ(offsetof(ncclConfig_t, nChannelsPerNetPeer), 72u);
  EXPECT_EQ(offsetof(ncclConfig_t, nvlinkCentricSched), 76u);
}

TEST(AbiLayout, ConfigInitializer) {
  ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
  EXPECT_EQ(c.size, sizeof(ncclConfig_t));
  EXPECT_EQ(c.magic, 0xcafebeefu);
  EXPECT_EQ(c.version, 22809u);
  for (int v : {c.blocking, c.cgaClusterSize, c.minCTAs, c.maxCTAs, c.splitShare, c.trafficClass, c.collnetEnable,
                c.CTAPolicy, c.shrinkShare, c.nvlsCTAs, c.nChannelsPerNetPeer, c.nvlinkCentricSched}) {
    EXPECT_EQ(v, INT_MIN);
  }
  EXPECT_EQ(c.netName, nullptr);
  EXPECT_EQ(c.commName, nullptr);
}

TEST(AbiLayout, SimInfo) {
  EXPECT_EQ(sizeof(ncclSimInfo_t), 24u);
  EXPECT_EQ(offsetof(ncclSimInfo_t, size), 0u);
  EXPECT_EQ(offsetof(ncclSimInfo_t, magic), 8u);
  EXPECT_EQ(offsetof(ncclSimInfo_t, version), 12u);
  EXPECT_EQ(offsetof(ncclSimInfo_t, estimatedTime), 16u);
  ncclSimInfo_t s = NCCL_SIM_INFO_INITIALIZER;
  EXPECT_EQ(s.size, sizeof(ncclSimInfo_t));
  EXPECT_EQ(s.magic, 0x74685283u);
  EXPECT_EQ(s.version, 22809u);
  EXPECT_EQ(s.estimatedTime, -1.0f);
}

TEST(AbiLayout, EnumSizes) {
  EXPECT_EQ(sizeof(ncclResult_t), 4u);
  EXPECT_EQ(sizeof(ncclDataType_t), 4u);
  EXPECT_EQ(sizeof(ncclRedOp_t), 4u);
  EXPECT_EQ(sizeof(ncclRedOp_dummy_t), 4u);
  EXPECT_EQ(sizeof(ncclScalarResidence_t), 4u);
}

TEST(AbiLayout, ResultValues) {
  EXPECT_EQ(ncclSuccess, 0);
  EXPECT_EQ(ncclUnhandledCudaError, 1);
  EXPECT_EQ(ncclSystemError, 2);
  EXPECT_EQ(ncclInternalError, 3);
  EXPECT_EQ(ncclInvalidArgument, 4);
  EXPECT_EQ(ncclInvalidUsage, 5);
  EXPECT_EQ(ncclRemoteError, 6);
  EXPECT_EQ(ncclInProgress, 7);
  EXPECT_EQ(ncclNumResults, 8);
}

TEST(AbiLayout, DataTypeValues) {
  EXPECT_EQ(ncclInt8, 0);
  EXPECT_EQ(ncclChar, 0);
  EXPECT_EQ(ncclUint8, 1);
  EXPECT_EQ(ncclInt32, 2);
  EXPECT_EQ(ncclInt, 2);
  EXPECT_EQ(ncclUint32, 3);
  EXPECT_EQ(ncclInt64, 4);
  EXPECT_EQ(ncclUint64, 5);
  EXPECT_EQ(ncclFloat16, 6);
  EXPECT_EQ(ncclHalf, 6);
  EXPECT_EQ(ncclFloat32, 7);
  EXPECT_EQ(ncclFloat, 7);
  EXPECT_EQ(ncclFloat64, 8);
  EXPECT_EQ(ncclDouble, 8);
  EXPECT_EQ(ncclBfloat16, 9);
  EXPECT_EQ(ncclFloat8e4m3, 10);
  EXPECT_EQ(ncclFloat8e5m2, 11);
  EXPECT_EQ(ncclNumTypes, 12);
}

TEST(AbiLayout, RedOpValues) {
  EXPECT_EQ(ncclSum, 0);
  EXPECT_EQ(ncclProd, 1);
  EXPECT_EQ(ncclMax, 2);
  EXPECT_EQ(ncclMin, 3);
  EXPECT_EQ(ncclAvg, 4);
  EXPECT_EQ(ncclNumOps, 5);
  EXPECT_EQ(ncclNumOps_dummy, 5);
  EXPECT_EQ(ncclMaxRedOp, 0x7fffffff);
}

TEST(AbiLayout, ScalarResidenceValues) {
  EXPECT_EQ(ncclScalarDevice, 0);
  EXPECT_EQ(ncclScalarHostImmediate, 1);
}

TEST(AbiLayout, Macros) {
  EXPECT_EQ(NCCL_CONFIG_UNDEF_INT, INT_MIN);
  const void* undef_ptr = NCCL_CONFIG_UNDEF_PTR;
  EXPECT_EQ(undef_ptr, nullptr);
  EXPECT_EQ(NCCL_SPLIT_NOCOLOR, -1);
  EXPECT_EQ(NCCL_UNDEF_FLOAT, -1.0f);
  EXPECT_EQ(NCCL_WIN_DEFAULT, 0x00);
  EXPECT_EQ(NCCL_WIN_COLL_SYMMETRIC, 0x01);
  EXPECT_EQ(NCCL_WIN_REQUIRED_ALIGNMENT, 4096);
  EXPECT_EQ(NCCL_CTA_POLICY_DEFAULT, 0x00);
  EXPECT_EQ(NCCL_CTA_POLICY_EFFICIENCY, 0x01);
  EXPECT_EQ(NCCL_CTA_POLICY_ZERO, 0x02);
  EXPECT_EQ(NCCL_SHRINK_DEFAULT, 0x00);
  EXPECT_EQ(NCCL_SHRINK_ABORT, 0x01);
  EXPECT_EQ(NCCL_REVOKE_DEFAULT, 0x00);
}

}  // namespace

// The fused operations' working memory, kept by the communicator from call to call (lesson 11;
// the MoE operations of lesson 12 and the wire-format collectives of lesson 15 use it too).
//
// A fused call needs buffers as large as its operands (the gathered matrix, fp32 partials, widened
// half/bfloat16 operands). Allocated fresh on every call they came from the kernel (over glibc's
// 32 MiB mmap threshold) and were page-faulted in every time: AllGather+GEMM at M=4096, K=2048
// took 3x the GEMM and the collective together on this VM. Each slot grows to the largest call seen
// and is freed with the communicator. One fused call at a time uses a communicator, so slots need
// no lock; contents are not kept between calls.
#pragma once

#include <cstddef>
#include <memory>

namespace baton {

class FusedScratch {
 public:
  enum Slot {
    kGathered,
    kPartials,
    kSendSteps,
    kRecvSteps,
    kWideIn0,
    kWideIn1,
    kWideIn2,
    kWideOut0,
    kWideOut1,
    // MoE dispatch and combine (src/moe/): what goes out, what comes in, rows gathered in the
    // naive stage's ids, fp32 sums and partials, FP8-quantized tokens.
    kMoeSend,
    kMoeRecv,
    kMoeIdsSend,
    kMoeIdsRecv,
    kMoeSum,
    kMoePartial,
    kMoeQuant,
    // Wire-format collectives (src/lowp/): quantized segments out and in, the fp32 sums.
    kWireSend,
    kWireRecv,
    kWireSum,
    kSlots
  };
  // At least `bytes` bytes for `slot`, 64-byte aligned; earlier contents are not kept.
  void* get(Slot slot, size_t bytes) {
    Buf& b = bufs_[slot];
    if (b.size < bytes) {
      b.mem.reset(new (std::align_val_t(64)) char[bytes]);
      b.size = bytes;
    }
    return b.mem.get();
  }

 private:
  struct AlignedDelete {
    void operator()(char* p) const { ::operator delete[](p, std::align_val_t(64)); }
  };
  struct Buf {
    std::unique_ptr<char[], AlignedDelete> mem;
    size_t size = 0;
  };
  Buf bufs_[kSlots];
};

}  // namespace baton

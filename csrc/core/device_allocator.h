// The caching, stream-aware device allocator (torch's c10::DeviceAllocator for ocl).
//
// Blocks are carved out of OpenCL buffers ("segments", see runtime/device_memory.h) and cached
// when freed, like CUDA's caching allocator: small requests (<= 1 MiB) share 2 MiB segments,
// larger ones get their own segments and may be split. A block freed while another stream still
// uses it (record_stream) is reused only once that stream has passed the free.
#pragma once

#include <c10/core/CachingDeviceAllocator.h>

namespace drawbridge::core {

class DeviceAllocator final : public c10::DeviceAllocator {
 public:
  c10::DataPtr allocate(size_t bytes) override;
  c10::DeleterFnPtr raw_deleter() const override;
  void copy_data(void* dest, const void* src, std::size_t count) const override;

  bool initialized() override;
  void emptyCache(c10::MempoolId_t mempool_id = {0, 0}) override;
  void recordStream(const c10::DataPtr& ptr, c10::Stream stream) override;
  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override;
  void resetAccumulatedStats(c10::DeviceIndex device) override;
  void resetPeakStats(c10::DeviceIndex device) override;
  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override;
};

DeviceAllocator& device_allocator();

}  // namespace drawbridge::core

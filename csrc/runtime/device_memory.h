// Device memory as addresses (DESIGN.md, decision 1).
//
// PyTorch does arithmetic on data_ptr(), but a cl_mem is an opaque handle. Each device therefore
// reserves a range of host virtual address space that is never readable (PROT_NONE), and every
// OpenCL buffer ("segment") is given an address inside it. Any address inside a segment resolves
// to (cl_mem, byte offset), which is what kernels take. A stray host dereference faults loudly
// instead of reading unrelated host memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <shared_mutex>

#include "runtime/opencl.h"

namespace drawbridge::runtime {

class Device;

struct BufferRef {
  cl_mem mem = nullptr;
  size_t offset = 0;      // bytes from the start of mem
  size_t available = 0;   // bytes from offset to the end of mem
};

class DeviceMemory {
 public:
  explicit DeviceMemory(Device& device);
  ~DeviceMemory();
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  // Creates one OpenCL buffer of `bytes` and returns its address. Throws OutOfMemoryError when
  // the request exceeds the device's single-allocation limit or its total memory.
  void* allocate_segment(size_t bytes);
  void free_segment(void* base);

  // Resolves any address inside a live segment; throws Error for an unknown address.
  BufferRef resolve(const void* address) const;
  bool contains(const void* address) const;

  size_t segment_bytes() const;  // bytes currently held in OpenCL buffers

 private:
  struct Segment {
    cl_mem mem;
    size_t bytes;
  };
  uintptr_t reserve_range(size_t bytes);
  void release_range(uintptr_t base, size_t bytes);

  Device& device_;
  uintptr_t base_ = 0;
  size_t span_ = 0;
  mutable std::shared_mutex mutex_;
  std::map<uintptr_t, Segment> segments_;     // by base address
  std::map<uintptr_t, size_t> free_ranges_;   // unused parts of the reserved span
  size_t segment_bytes_ = 0;
};

}  // namespace drawbridge::runtime

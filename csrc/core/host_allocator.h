// Pinned host memory: OpenCL buffers created with CL_MEM_ALLOC_HOST_PTR and mapped, which
// drivers can transfer from by DMA, so non_blocking copies really run asynchronously.
// Freed blocks are cached by size and reused only after the copies that read or wrote them
// have completed.
#pragma once

#include <c10/core/Allocator.h>

#include "runtime/opencl.h"

namespace drawbridge::core {

class HostAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t bytes) override;
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
  void copy_data(void* dest, const void* src, std::size_t count) const override;

  bool is_pinned(const void* ptr) const;
  // The block holding ptr may not be reused until `done` has completed (takes a reference).
  void record_event(const void* ptr, cl_event done);
  void empty_cache();
};

HostAllocator& host_allocator();

}  // namespace drawbridge::core

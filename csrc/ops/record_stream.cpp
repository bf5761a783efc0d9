// Tensor.record_stream: tells the caching allocator that another stream uses this memory.
#include <torch/library.h>

#include "core/device_allocator.h"

namespace drawbridge::ops {

namespace {
void record_stream(at::Tensor& self, c10::Stream stream) {
  core::device_allocator().recordStream(self.storage().data_ptr(), stream);
}
}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("record_stream", TORCH_FN(record_stream)); }

}  // namespace drawbridge::ops

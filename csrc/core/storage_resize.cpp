#include "core/storage_resize.h"

#include <algorithm>

#include <c10/core/DeviceGuard.h>

#include "core/device_allocator.h"
#include "core/device_state.h"
#include "runtime/commands.h"

namespace drawbridge::core {

void resize_storage_bytes(const c10::Storage& storage, size_t bytes) {
  TORCH_CHECK(storage.resizable(), "Trying to resize storage that is not resizable");
  auto* impl = storage.unsafeGetStorageImpl();
  c10::DeviceGuard guard(storage.device());
  c10::DataPtr fresh = storage.allocator()->allocate(bytes);
  size_t keep = std::min(bytes, storage.nbytes());
  if (keep > 0) {
    auto& mem = checked_device(storage.device().index()).memory();
    runtime::enqueue_copy(current_queue(), mem.resolve(storage.data()), mem.resolve(fresh.get()), keep);
  }
  c10::DataPtr old = impl->set_data_ptr(std::move(fresh));
  impl->set_nbytes(bytes);
  // The copy that reads the old block runs on the current stream; the block returns to the free
  // list of the stream it was allocated on, which must not reuse it before that copy has run.
  if (keep > 0) device_allocator().recordStream(old, current_stream(storage.device().index()));
}

}  // namespace drawbridge::core

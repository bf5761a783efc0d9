#include "core/storage_resize.h"

#include <algorithm>

#include <c10/core/DeviceGuard.h>

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
  impl->set_data_ptr_noswap(std::move(fresh));
  impl->set_nbytes(bytes);
}

}  // namespace drawbridge::core

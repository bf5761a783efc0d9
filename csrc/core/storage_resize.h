// Growing or shrinking an ocl storage in place: new memory, a device copy of what fits, swap.
#pragma once

#include <c10/core/Storage.h>

namespace drawbridge::core {

void resize_storage_bytes(const c10::Storage& storage, size_t bytes);

}  // namespace drawbridge::core
